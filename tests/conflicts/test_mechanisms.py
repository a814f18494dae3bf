"""Each general mechanism of the offline detector on pairs written for these tests (not taken from any labelled
set): quantities and bounds in other forms, opposites without a negation word, orders stated through conditions,
alike-named tools and channels for the same step — each with negative controls that must stay compatible."""

from __future__ import annotations

import pytest

from hindsight_lab.conflicts.lexicon import opposite, same_action
from hindsight_lab.conflicts.quantities import quantities
from hindsight_lab.conflicts.text import stem, tokenize


def _check(detector, a, b, expected, kind=None):
    v = detector.judge(a, b)
    assert v.conflict is expected, v
    assert detector.judge(b, a).conflict is expected  # symmetric
    if expected and kind:
        assert v.kind == kind, v


# ------------------------------------------------------------------------------------------------ quantities
@pytest.mark.parametrize("text, low, high, bound, unit", [
    ("Keep the hold for no longer than forty-eight hours", float("-inf"), 2.0, "le", "duration"),
    ("Returns are accepted within a fortnight", float("-inf"), 14.0, "le", "duration"),
    ("Approve expenses of $250 or more", 250.0, float("inf"), "ge", "money"),
    ("Quotes stay valid for 3-5 days", 3.0, 5.0, "range", "duration"),
    ("Between two and four reviewers sign off", 2.0, 4.0, "range", "reviewer"),
    ("A single signature suffices", float("-inf"), 1.0, "le", "signatur"),
    ("Three references are required", 3.0, float("inf"), "ge", stem("references")),
    ("Apply a discount of 10 percent", 10.0, 10.0, "eq", "percent"),
])
def test_quantities_are_normalised(text, low, high, bound, unit):
    q = quantities(tokenize(text))[0]
    assert (q.low, q.high, q.bound) == (low, high, bound) and unit in q.unit, q


def test_a_negated_bound_turns_over():
    q = quantities(tokenize("never exceed three reminders"), negated=True)[0]
    assert (q.high, q.bound) == (3.0, "le")


@pytest.mark.parametrize("a, b, expected", [
    # number words against digits, bounds of both kinds, durations in other units
    ("Send no more than two reminders per invoice.", "Send at least 4 reminders per invoice.", True),
    ("Vouchers expire after a maximum of six months.", "Vouchers expire after a maximum of 90 days.", True),
    ("A warranty claim must be filed within 1 year.", "A warranty claim must be filed within 24 months.", True),
    ("Keep the hold for no longer than forty-eight hours.", "Keep the hold for up to 5 days.", True),
    # sufficiency against necessity
    ("One manager approval is enough for a write-off.", "Two manager approvals are required for a write-off.", True),
    # ranges as intervals
    ("Quote delivery in 3-5 business days.", "Quote delivery in 7 to 10 business days.", True),
    # a single / once against more
    ("Allow a single reschedule per appointment.", "Allow three reschedules per appointment.", True),
    ("Escalate a ticket only once.", "Escalate a ticket twice before closing it.", True),
    # negative controls: the same bound in other words, another unit, another case, compatible bounds
    ("Send no more than two reminders per invoice.", "Never send more than 2 reminders per invoice.", False),
    ("A warranty claim must be filed within 1 year.", "A warranty claim must be filed within 12 months.", False),
    ("Keep the hold for no longer than forty-eight hours.", "Notify the customer 2 times during the hold.", False),
    ("Domestic parcels ship in 2 days.", "International parcels ship in 9 days.", False),
    ("One manager approval is enough for a write-off.", "One manager approval is required for a write-off.", False),
    ("Refund at least $5 for late meals.", "Refund up to $30 for late meals.", False),
])
def test_quantity_pairs(detector, a, b, expected):
    _check(detector, a, b, expected, "quantity")


# ------------------------------------------------------------------------------------------------ opposites
def test_opposites_come_from_wordnet_and_affixes():
    assert opposite(stem("permit"), stem("forbid")) and opposite(stem("reject"), stem("accepted"))
    assert opposite(stem("compulsory"), stem("optional")) and opposite(stem("lock"), stem("unlock"))
    assert opposite("elig", "inelig", "eligible", "ineligible") and opposite("visibl", "invisibl", "visible",
                                                                             "invisible")
    assert not opposite(stem("refund"), stem("check")) and not opposite("form", "inform", "form", "inform")


def test_direct_antonyms_reach_a_deeper_sense():
    # a direct antonym pair counts to the fourth sense of each word ("hide" / "show" is show's fourth); the derived
    # relations stop at the third, so "keep" (its fourth sense: "prevent") is still no opposite of "allow"
    assert opposite(stem("hide"), stem("show")) and opposite(stem("allow"), stem("deny"))
    assert not opposite(stem("keep"), stem("allow")) and not opposite(stem("keep"), stem("permit"))


def test_same_action_comes_from_wordnet():
    assert same_action(stem("update"), stem("modify")) and same_action(stem("retrieve"), stem("fetch"))
    assert not same_action(stem("approve"), stem("reject")) and not same_action(stem("search"), stem("delete"))


@pytest.mark.parametrize("a, b, expected", [
    ("Photo ID is mandatory for account recovery.", "Photo ID is optional for account recovery.", True),
    ("Accept late timesheets from contractors.", "Reject late timesheets from contractors.", True),
    ("Keep the incident ticket open after the fix.", "Close the incident ticket after the fix.", True),
    ("Permit personal devices on the guest network.", "Forbid personal devices on the guest network.", True),
    ("Gift cards are refundable.", "Gift cards are nonrefundable.", True),
    ("Enable two-factor login for contractors.", "Disable two-factor login for contractors.", True),
    # exclusion verbs
    ("Attach the packing slip to the parcel.", "Omit the packing slip.", True),
    ("Put the case number in the reply.", "Leave the case number out of the reply.", True),
    # negative controls: opposites about different things, under different cases, or agreeing through negation
    ("Accept late timesheets from contractors.", "Reject duplicate invoices from suppliers.", False),
    ("Domestic refunds are automatic.", "International refunds are manual.", False),
    ("Keep the incident ticket open after the fix.", "Do not close the incident ticket after the fix.", False),
    ("Photo ID is mandatory for account recovery.", "A selfie is optional for account recovery.", False),
    ("Attach the packing slip to the parcel.", "Omit the gift message.", False),
])
def test_opposite_pairs(detector, a, b, expected):
    _check(detector, a, b, expected, "negation")


# ------------------------------------------------------------------------------------------------ orders
@pytest.mark.parametrize("a, b, expected", [
    ("Only once the contract is signed may you create the user account.",
     "Create the user account first; the contract can be signed later.", True),
    ("Do not dispatch the courier until the label is printed.", "Dispatch the courier, then print the label.", True),
    ("Deploying must wait for the security review.", "Deploy before the security review.", True),
    ("A credit check is a prerequisite for opening the loan.", "Open the loan first and run the credit check "
                                                              "afterwards.", True),
    ("As soon as the refund is approved, notify the customer.", "Notify the customer before approving the refund.",
     True),
    ("Wait for the backup to finish before upgrading the database.", "Upgrade the database, then take the backup.",
     True),
    # negative controls: the same order through another construction; a count "once"; other steps
    ("Only once the contract is signed may you create the user account.",
     "Sign the contract before creating the user account.", False),
    ("Do not dispatch the courier until the label is printed.", "Print the label before dispatching the courier.",
     False),
    ("Retry the upload once before alerting the user.", "Alert the user after a second failed upload.", False),
    ("Deploying must wait for the security review.", "Tag the release before deploying.", False),
])
def test_conditional_orders(detector, a, b, expected):
    _check(detector, a, b, expected, "order")


# ------------------------------------------------------------------------------------------------ tools
@pytest.mark.parametrize("a, b, expected", [
    ("Call refund_card to give the money back.", "Use process_refund to give the money back.", True),
    ("Change a delivery address with edit_delivery_address.", "Call modify_address for a new delivery address.",
     True),
    ("Look up the invoice with fetch_invoice.", "Use retrieve_invoice to look up the invoice.", True),
    ("Send the signed form by email.", "Send the signed form through the portal.", True),
    # negative controls: the same tool, tools for other objects, kinds of one thing, a tool and a person
    ("Call refund_card to give the money back.", "Call refund_card after checking the amount.", False),
    ("Use search_hotels to find rooms.", "Use search_cars to find rental cars.", False),
    ("Call list_open_tickets to see the queue.", "Call list_closed_tickets to audit the queue.", False),
    ("Send the signed form by email.", "Confirm the email address before sending the form.", False),
])
def test_tool_pairs(detector, a, b, expected):
    _check(detector, a, b, expected, "tool")


# ------------------------------------------------------------------------------------------------ added with issue 18
def test_stemmer_meets_nominalisations():
    assert stem("verification") == stem("verify") and stem("inspection") == stem("inspected")
    assert stem("approval") == stem("approved") and stem("escalation") == stem("escalate")


def test_numbers_with_thousands_and_scales():
    assert quantities(tokenize("payments over $10,000"))[0].low == 10000.0
    assert quantities(tokenize("approve up to $5k"))[0].high == 5000.0


@pytest.mark.parametrize("a, b, expected, kind", [
    # a necessary condition comes first
    ("Release the funds only if the manager has signed off.", "Release the funds, then get the manager's sign-off.",
     True, "order"),
    ("Release the funds only if the manager has signed off.", "Get the manager to sign off before releasing funds.",
     False, None),
    # deontic necessity against "optional"
    ("Staff must wear a badge in the lab.", "Wearing a badge in the lab is optional.", True, "negation"),
    ("Staff must wear a badge in the lab.", "Wearing gloves in the lab is optional.", False, None),
    # a product's name after an instrument preposition
    ("Log customer calls in Zendesk.", "Log customer calls in Freshdesk.", True, "tool"),
    ("Log customer calls in Zendesk.", "Log customer calls on Monday.", False, None),
    # the head of a tool name's compound: the same action on another thing is another step
    ("Call update_reservation_flights to change flights.", "Call update_reservation_baggages to change bags.",
     False, None),
    # a negated clause turns its bound over
    ("No refunds after 30 days.", "Refunds are accepted for up to 60 days.", True, "quantity"),
    # one period's end and the next one's start are not opposites
    ("Keep the chat open until the customer replies.", "Close the chat once the customer replies.", False, None),
    # different objects of a rate
    ("Wait 3 minutes between search calls.", "Wait 5 minutes between password attempts.", False, None),
])
def test_more_general_cues(detector, a, b, expected, kind):
    _check(detector, a, b, expected, kind)


def test_irregular_verb_forms_meet_their_verb():
    assert stem("kept") == stem("keep") and stem("wrote") == stem("writing") and stem("bought") == stem("buy")
    assert stem("ground") != stem("grind")  # a noun too: left as it is


@pytest.mark.parametrize("a, b, expected", [
    ("Ask for the customer's consent before recording the call.",
     "Calls can be recorded without asking for the customer's consent.", True),
    ("Never record a call without asking for consent.", "Ask for consent before recording a call.", False),
])
def test_without_a_gerund_denies_the_step_before(detector, a, b, expected):
    _check(detector, a, b, expected)


@pytest.mark.parametrize("a, b, expected", [
    # a step not done yet: the clause's action comes before it
    ("Activate the SIM only after the customer's identity is verified.",
     "Activate the SIM while identity verification is still pending.", True),
    ("Ship orders while the warehouse audit is pending.", "Audit the warehouse every quarter.", False),
    # "immediately", "upfront": before the rule's other actions, unless an order marker follows
    ("The deposit must be collected before the keys are handed over.",
     "Hand over the keys immediately and collect the deposit at the end of the stay.", True),
    ("Notify the customer immediately after the refund is issued.", "Issue the refund after the return arrives.",
     False),
    # "until X" against "after Y": two periods that overlap, so opposite advice clashes
    ("Keep the ticket open until the customer confirms the fix.", "Close the ticket once the fix is shipped.", True),
])
def test_pending_steps_immediate_actions_and_periods(detector, a, b, expected):
    _check(detector, a, b, expected)


# ------------------------------------------------------------------------------------ cues added for issue 18 (2)
# Each written with the development pairs of construction_pairs.jsonl in mind, in other words than they use.
@pytest.mark.parametrize("a, b, expected", [
    # "first" before a noun of sequence places the action; before any other noun it is an adjective
    ("Freeze the card as the very first step; the fraud report can follow.",
     "File the fraud report, then freeze the card.", True),
    ("Freeze the card during the first call, then file the fraud report.",
     "Freeze the card, then file the fraud report.", False),
    # a later time said in an action's purpose or as "the following week" orders that action last
    ("Publish the patch and ask the reviewer to approve it later.", "Get the reviewer's approval, then publish the patch.",
     True),
    ("Pay the invoice on Monday and file the receipt the following week.",
     "File the receipt prior to paying the invoice.", True),
    # a trailing "ahead of X" clause orders the clause it follows
    ("Print the boarding pass at the desk, ahead of the seat check.",
     "Wait for the seat check to finish before you print the boarding pass.", True),
    # verbs of postponing with "until" say "not before"; "the moment X" is "as soon as X"
    ("Postpone the shipment until the customs form is signed.", "Ship the parcel, then sign the customs form.", True),
    ("Postpone the shipment until the customs form is signed.",
     "Ship the parcel the moment the customs form is signed.", False),
])
def test_orders_in_more_constructions(detector, a, b, expected):
    _check(detector, a, b, expected, "order")


@pytest.mark.parametrize("a, b, expected", [
    # a negation denies its verb: another verb about the same things is not its opposite
    ("Never forward the medical notes to the insurer.", "Keep the medical notes sealed from the insurer.", False),
    # ... and after a verb of asking, the verb of its complement is what is denied
    ("Never ask the caller to repeat the account number.", "Repeat the account number back to the caller.", True),
    # "keep X out of Y" excludes, like "leave X out"
    ("Put the tracking link in the confirmation e-mail.", "Keep the tracking link out of the confirmation e-mail.",
     True),
])
def test_negation_denies_its_own_verb(detector, a, b, expected):
    _check(detector, a, b, expected, "negation")


def test_a_tools_job_may_stand_in_another_clause(detector):
    _check(detector, "To renew a licence, call extend_license.", "To renew a licence, call renew_subscription_key.",
           True, "tool")
    _check(detector, "To renew a licence, call extend_license.", "To revoke a licence, call revoke_key.", False)
    # regression (the demo's first rule and its paraphrase were kept apart as a tool conflict): a "then B" clause
    # is the next step, not B doing the job of the clause before it
    _check(detector, "For invoices, call load_ledger filtered by month first, then render_invoice.",
           "For invoices, call load_ledger filtered by month before render_invoice.", False)


@pytest.mark.parametrize("a, b, expected", [
    ("A booking may be changed only once.", "A booking may be changed up to four times.", True),
    ("A booking may be changed only once.", "A booking may be changed at most once.", False),
    # plurals in -os meet their singular ("photos" / "photo")
    ("Two photos of the receipt are enough.", "A claim needs at least five photo uploads of the receipt.", True),
])
def test_only_bounds_above_and_units_meet_their_plural(detector, a, b, expected):
    _check(detector, a, b, expected, "quantity")


# ------------------------------------------------------------------------------------------------ third round
# Each cue added after the first held-out set became a development set, on pairs written here in other words
# (hotel, library, clinic, warehouse …) with a negative control beside it.
@pytest.mark.parametrize("a, b, expected", [
    # a precondition ("only when X") orders two steps; it does not set the rule apart from one with a condition
    ("Open the safe with unlock_safe only when the guest has shown a key card.",
     "Open the safe with unlock_safe, then ask for the key card; if the card is missing, lock it again.", True),
    ("Open the safe with unlock_safe only when the guest has shown a key card.",
     "If the guest is a minor, ask a parent to be present while the safe is opened.", False),
    # "by the time you Y": X no later than Y
    ("The deposit has to be received by the time you call confirm_booking.",
     "Call confirm_booking straight away and collect the deposit over the next days.", True),
    ("The deposit has to be received by the time you call confirm_booking.",
     "Collect the deposit first, and call confirm_booking after it has been received.", False),
    # "X requires that Y has been done": Y first
    ("Archiving a ticket with archive_ticket requires that the customer has confirmed the fix.",
     "Archive the ticket with archive_ticket, then ask the customer to confirm the fix.", True),
    ("Archiving a ticket with archive_ticket requires that the customer has confirmed the fix.",
     "Ask the customer to confirm the fix before you archive the ticket with archive_ticket.", False),
    # a relative clause saying a step is not done yet puts the action before that step
    ("Never ship an order whose payment has not yet been captured with capture_payment.",
     "Ship the order first, then run capture_payment to take the money.", True),
    ("Never ship an order whose payment has not yet been captured with capture_payment.",
     "Run capture_payment first, then ship the order.", False),
    # intransitive "follow": its subject comes later
    ("Issue the library card on the first visit; the proof of address may follow later in the month.",
     "No library card is issued until the proof of address has been checked.", True),
    ("Issue the library card on the first visit; the proof of address may follow later in the month.",
     "Issue the library card on the first visit and hand over the welcome leaflet.", False),
])
def test_orders_through_conditions_third_round(detector, a, b, expected):
    _check(detector, a, b, expected, "order")


@pytest.mark.parametrize("a, b, expected", [
    # a channel as a gerund after a preposition, or before a noun of medium
    ("Confirm the table reservation by phoning reception.", "Confirm the table reservation by emailing reception.",
     True),
    ("Send the pickup code with sms_pickup_code.", "Send the pickup code to the customer by email message.", True),
    ("Confirm the table reservation by emailing the guest.", "Keep the guest's email address on the reservation.",
     False),
    # two tools of the same action, each rule naming the other's object as what the job is about
    ("Reactivate suspended members with reactivate_card.", "Use reactivate_member to give a suspended card back its "
     "borrowing rights.", True),
    ("Reactivate suspended members with reactivate_member.", "Use reactivate_device to bring a suspended scanner "
     "back online.", False),
])
def test_tools_third_round(detector, a, b, expected):
    _check(detector, a, b, expected, "tool")


@pytest.mark.parametrize("a, b, expected", [
    # a unit written in full and abbreviated
    ("Pallets may weigh up to 800 kg.", "The pallet limit is 600 kilograms.", True),
    ("Pallets may weigh up to 800 kg.", "Pallets may weigh up to 800 kilograms.", False),
    # a plural after the clause's verb is its object, not a second verb: regression for the
    # object read as a verb, which set the two clauses apart (accept courier packages)
    ("Accept courier packages weighing up to 23 kg.", "The courier limit is 20 kilograms per package.", True),
    # a unit that names a thing is compared without the verbs around it ...
    ("Offer no more than two spare rooms to a walk-in group.", "Always show at least four spare rooms to a walk-in "
     "group.", True),
    # ... but a generic unit keeps them: refunding and charging are two things
    ("Refund up to $40 for a late checkout.", "Charge at least $60 for a late checkout.", False),
    # and a quantity that picks out which things (parcels under 2 kg) stays a case of its own
    ("Send parcels under 5 kg with the letter service.", "Parcels of 5 kg or more go by freight.", False),
])
def test_quantities_third_round(detector, a, b, expected):
    _check(detector, a, b, expected, "quantity")


def test_a_negated_predicate_meets_its_synonym(detector):
    _check(detector, "Permit pets in the lounge.", "They are never allowed in the lounge.", True, "negation")
    _check(detector, "Permit pets in the lounge.", "Food is never allowed in the vault.", False)


def test_nouns_of_repetition_count_times():
    # "three delivery attempts" counts times, like "once" / "twice": the unit is the same
    (q,) = quantities(tokenize("make up to three delivery attempts"))
    assert (q.high, q.bound) == (3.0, "le") and stem("time") in q.unit and stem("attempts") not in q.unit, q
    (once,) = quantities(tokenize("attempt delivery once"))
    assert once.unit == frozenset({stem("time")}), once
    (kg,) = quantities(tokenize("up to 30 kilograms"))
    assert kg.unit == frozenset({"kg"}), kg


@pytest.mark.parametrize("a, b, expected", [
    # conditions about the same thing that pick out different cases: one negated, or quantities with no common value
    ("For orders under $100, refund the shipping fee.", "For orders of $100 or more, never refund the shipping fee.",
     False),
    ("If the tenant has paid the deposit, hand over the keys right away.",
     "If the tenant has not paid the deposit, do not hand over the keys.", False),
    ("When the flight is delayed by more than 3 hours, offer a meal voucher.",
     "When the flight is delayed by less than 3 hours, do not offer a meal voucher.", False),
    # controls: "unless X" is "if not X"; thresholds that share values; the same condition on both sides
    ("Unless the customer has verified, never share the balance.",
     "If the customer has not verified, share the balance.", True),
    ("For orders under $100, refund the shipping fee.", "For orders under $50, never refund the shipping fee.", True),
    ("If the tenant has paid the deposit, hand over the keys right away.",
     "If the tenant has paid the deposit, do not hand over the keys.", True),
])
def test_conditions_that_pick_out_other_cases(detector, a, b, expected):
    _check(detector, a, b, expected)


@pytest.mark.parametrize("a, b, expected", [
    # a copula or a manner adverb beside a predicate and its opposite says nothing of its own
    ("Lock the van remotely once the hire ends.", "Leave the van unlocked after the hire ends.", True),
    ("Mark the expense claim as approved when the receipt is attached.",
     "The expense claim stays unapproved even when the receipt is attached.", True),
    ("Leave the side gate unlocked during deliveries.", "Lock the front gate at night.", False),
    # a manner adverb stands for its adjective, whose opposite is known
    ("Renewals are processed automatically.", "Renewals are processed manually.", True),
    ("Renewals are processed automatically.", "Refund requests are reviewed manually.", False),
])
def test_copulas_and_manner_adverbs(detector, a, b, expected):
    _check(detector, a, b, expected, "negation")


@pytest.mark.parametrize("a, b, expected", [
    # a channel as a passive participle, after "use", or after "at"
    ("Tell the student about the timetable change by SMS.", "Timetable changes are emailed to the student.", True),
    ("Use the tenant app to log a repair.", "Repairs must be logged by phoning the site office.", True),
    ("Return the key deposit at the counter.", "Key deposits are returned through the web portal.",
     True),
    # controls: a channel word that names a thing, and the same channel on both sides
    ("Timetable changes are emailed to the student.", "Keep the student's email address on the timetable.", False),
    ("Use the tenant app to log a repair.", "Repairs are logged online by the tenant.", False),
])
def test_channels_as_participles_and_places(detector, a, b, expected):
    _check(detector, a, b, expected, "tool")


@pytest.mark.parametrize("a, b, expected", [
    # a bound before an article ("up to a 30-day supply"); the unit's own words set no cases apart
    ("Pharmacists may dispense up to a 60-day supply.", "Never dispense more than a three-week supply.", True),
    ("Pharmacists may dispense up to a 60-day supply.", "Pharmacists may dispense up to a two-month supply.", False),
    # a partitive counts what follows "of"; sufficiency against necessity
    ("A single proof of address is enough to open the account.",
     "Two pieces of proof of address are required to open the account.", True),
    ("Two pieces of proof of address are required to open the account.",
     "Two pieces of photo ID are required to collect a parcel.", False),
])
def test_bounds_before_articles_and_partitives(detector, a, b, expected):
    _check(detector, a, b, expected, "quantity")
