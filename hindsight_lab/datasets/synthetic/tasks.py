"""The synthetic task catalogue: task types, their tools, the order their state-changing tools must be called in,
and hand-written instruction templates (slots from :func:`~hindsight_lab.datasets.synthetic.names.draw_entities`).

The scenarios (:func:`~hindsight_lab.datasets.synthetic.generate`) and the live environment
(:mod:`hindsight_lab.scenarios.live`) share it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskType:
    """One kind of task: its tools, the order they must run in, and how people phrase it.

    Attributes:
        name: ground-truth label.
        context: what its instructions are about (``order``, ``account`` or ``booking``); lures pair task types
            of the same context.
        read: the read-only tool called first.
        steps: the tools after the read, in the order the environment requires (prerequisite first); a task
            with two has a trap (its default path skips the first); ``tracking`` only reads.
        canonical: instruction templates in the usual words of the task type.
        paraphrase: templates with the same intent in other words (none of the canonical intent words).
        error: what the last tool answers when its prerequisite was skipped.
        flippable: the order of ``steps`` may flip in a policy change (``policy`` scenario, live environment).
    """

    name: str
    context: str
    read: str
    steps: tuple[str, ...]
    canonical: tuple[str, ...]
    paraphrase: tuple[str, ...]
    error: str = "request rejected (code E-4031)"
    flippable: bool = False

    @property
    def tools(self) -> tuple[str, ...]:
        """Every tool of the task, read tool first, in the required order."""
        return (self.read, *self.steps)


TASK_TYPES: dict[str, TaskType] = {t.name: t for t in (
    TaskType("refund", "order", "lookup_order", ("verify_identity", "issue_refund"),
             ("Refund order {oid}: {name} in {city} says the {color} {product} arrived {defect}.",
              "Issue a refund for the {color} {product} on order {oid} for {name} from {city}.",
              "Process a refund on order {oid}, the {color} {product} that {name} bought in {city}."),
             ("{first} wants the money back for a {product} that turned up {defect}; pay the purchase back.",
              "Reimburse a shopper from {city} whose {product} came {defect} in the parcel.",
              "Give {first} their payment back: the {product} they received was {defect}.")),
    TaskType("cancellation", "order", "lookup_order", ("verify_identity", "cancel_order"),
             ("Cancel order {oid}: {name} in {city} no longer needs the {color} {product}.",
              "Cancel the {color} {product} on order {oid} for {name} from {city} before it ships.",
              "Please cancel order {oid}, the {color} {product} that {name} bought in {city}."),
             ("{first} changed their mind about a {product}; stop the purchase before it leaves the warehouse.",
              "Call off a {product} purchase for a shopper in {city} so it is never dispatched.",
              "A buyer no longer wants the {product} they paid for yesterday; halt it before dispatch.")),
    TaskType("exchange", "order", "lookup_order", ("create_return_label", "ship_replacement"),
             ("Exchange order {oid}: {name} in {city} needs a different size of the {color} {product}.",
              "Exchange the {color} {product} on order {oid} for {name} from {city} for another size.",
              "Set up an exchange on order {oid}, the {color} {product} that {name} bought in {city}."),
             ("{first} would like the {product} swapped for a larger one and will send the first back.",
              "Send a shopper from {city} a bigger {product} and let them post the small one back.",
              "The {product} {first} got is too small; get a new one out and take the old one back."),
             error="replacement refused: no return registered (code R-212)", flippable=True),
    TaskType("tracking", "order", "lookup_order", ("get_shipment_status",),
             ("Track order {oid}: where is the {color} {product} that {name} in {city} is waiting for?",
              "Track the {color} {product} on order {oid} for {name} from {city} and give a delivery date.",
              "Check order {oid}: has the {color} {product} that {name} bought in {city} shipped yet?"),
             ("{first} asks how far away their {product} parcel is and when the courier will turn up.",
              "A shopper from {city} has been waiting a week for a {product}; find where the parcel is now.")),
    TaskType("address_change", "account", "lookup_account", ("verify_identity", "update_address"),
             ("Change the address on the account of {name} ({email}) from {city} to {city2}.",
              "Update the address on the {plan} account of {name} ({email}), now living in {city2}.",
              "Change the account address of {name} ({email}) in {city} to a street in {city2}."),
             ("{first} has moved house to {city2}; make sure future post goes to the new home.",
              "A member relocated from {city} and wants letters delivered to where they live now.")),
    TaskType("password_reset", "account", "lookup_account", ("verify_identity", "reset_password"),
             ("Reset the password on the account of {name} ({email}) in {city}.",
              "Reset the password for the {plan} account of {name} ({email}) registered in {city}.",
              "Password reset needed on the account of {name} ({email}) from {city}."),
             ("{first} is locked out and cannot sign in; give them a fresh way to log in.",
              "A member from {city} forgot their login secret and needs new credentials to get back in.")),
    TaskType("plan_change", "account", "lookup_account", ("quote_proration", "change_plan"),
             ("Upgrade the account of {name} ({email}) in {city} to the {plan}.",
              "Upgrade the {plan} account of {name} ({email}) registered in {city} to the next tier.",
              "Move the account of {name} ({email}) from {city} to the {plan} as an upgrade."),
             ("{first} wants more features and is happy to pay more each month from now on.",
              "A member from {city} asks for a bigger subscription tier starting this billing cycle."),
             error="plan change refused: proration not quoted (code P-118)"),
    TaskType("booking", "booking", "search_availability", ("hold_slot", "confirm_booking"),
             ("Book a {venue} for {name} in {city} on {weekday} at {time}.",
              "Make a booking of a {venue} for {name} from {city}, {weekday} at {time}.",
              "Book {name} from {city} a {venue} for {weekday} at {time}, please."),
             ("{first} would like to reserve a {venue} later this week somewhere near {city}.",
              "Set up a reservation so that {first} has a {venue} waiting for them.",
              "Get {first} a {venue} slot; any free time this week suits them."),
             error="confirmation refused: slot not held (code B-409)", flippable=True),
    TaskType("reschedule", "booking", "lookup_booking", ("hold_slot", "move_booking"),
             ("Reschedule the {venue} booking of {name} in {city} from {weekday} at {time} to {weekday2}.",
              "Reschedule {name} from {city}: the {venue} on {weekday} at {time} should move to {weekday2}.",
              "Move the {venue} booking that {name} in {city} has on {weekday} at {time} to {weekday2}."),
             ("{first} cannot make it on the planned day and wants the {venue} pushed later.",
              "Shift an existing {venue} reservation for {first} to a later date that suits them."),
             error="move refused: target slot not held (code B-412)", flippable=True),
)}
"""The task catalogue shared by the scenarios and the live environment."""

TRAP_TYPES: tuple[str, ...] = tuple(n for n, t in TASK_TYPES.items() if len(t.steps) == 2)
"""Task types with a prerequisite that the default (trap) path skips."""

READ_ONLY_TOOLS: frozenset[str] = frozenset({t.read for t in TASK_TYPES.values()} | {"get_shipment_status"})
"""Tools that only read (every other tool of the catalogue changes state)."""
