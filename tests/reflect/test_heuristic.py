"""The heuristic reflector's checkable rules: a success's check the whole order its text names, a failure's rule
worded by the step it guards with prerequisites chosen by what told success from failure among the runs at hand,
and a failure whose task type never succeeded learning from related successes that took its last step."""

from __future__ import annotations

from dataclasses import replace

from hindsight_lab.reflect.compress import CompressedEpisode
from hindsight_lab.reflect.heuristic import HeuristicReflector, _contrast, _order_check, _path
from hindsight_lab.reflect.schema import Reflection
from hindsight_lab.trace.checks import Check

READ = ("get_customer", "check_status", "check_signal", "read_manual")


def _ep(eid: str, tools: tuple[str, ...], outcome: str, task_type: str | None = None) -> CompressedEpisode:
    return CompressedEpisode(episode_id=eid, task_id=f"task-{eid}", domain="telecom",
                             instruction=f"My phone has no signal, case {eid}",
                             task_type=task_type or "+".join(sorted(t for t in tools if t not in READ)),
                             outcome=outcome, failure_cause="strategy" if outcome == "failure" else None, tools=tools,
                             calls=tuple(f"{t}()" for t in tools), decisions=(), errors=(), final_answer=None,
                             feedback=(), n_steps=len(tools))


def test_contrast_is_how_much_more_often_the_runs_that_called_a_tool_first_succeeded():
    runs = [_ep("a", ("check_signal", "reboot"), "success"), _ep("b", ("check_signal", "reboot"), "success"),
            _ep("c", ("get_customer", "reboot"), "failure")]
    assert _contrast("check_signal", "reboot", runs) == 3 / 4 - 1 / 3
    assert _contrast("get_customer", "reboot", runs) == 1 / 3 - 3 / 4
    assert _contrast("check_signal", "toggle_data", runs) == 0.0  # no run reached that step
    assert _contrast("read_manual", "reboot", runs[:2]) == 0.0  # nobody called it: nothing to compare


def test_the_check_keeps_the_prerequisite_that_told_success_from_failure_not_the_nearest_tools():
    path = ("check_signal", "get_customer", "check_status", "reboot")
    runs = [_ep("a", path, "success"), _ep("b", ("check_signal", "reboot"), "success"),
            _ep("c", ("get_customer", "check_status", "reboot"), "failure"),
            _ep("d", ("get_customer", "check_status", "reboot"), "failure")]
    assert _order_check(path, {"reboot"}, runs=runs)["check"]["tools"] == ["check_signal", "reboot"]
    # with nothing to tell the tools apart, the tools closest to the step (as before)
    assert _order_check(path, {"reboot"})["check"]["tools"] == ["get_customer", "check_status", "reboot"]


def test_a_failure_rule_with_a_check_is_worded_by_its_step_so_other_task_types_propose_the_same_rule():
    refl = HeuristicReflector()
    a = refl.reflect(_ep("a", ("check_signal", "reboot", "toggle_data"), "failure"),
                     [_ep("s1", ("check_signal", "reseat_sim", "toggle_data"), "success")])
    b = refl.reflect(_ep("b", ("check_signal", "toggle_roaming", "toggle_data"), "failure"),
                     [_ep("s2", ("check_signal", "reseat_sim", "toggle_data"), "success")])
    assert isinstance(a, Reflection) and isinstance(b, Reflection)
    assert a.task_type != b.task_type  # two task types (their sets of tools) ...
    # ... one rule: what the success did before the step and the failure did not (both checked the signal)
    assert a.reusable_rule == b.reusable_rule == "Before toggle_data, call reseat_sim first."
    assert a.check == b.check == {"kind": "order", "tools": ["reseat_sim", "toggle_data"]}


def test_a_failure_whose_type_never_succeeded_learns_from_a_success_that_took_its_last_step():
    failed = _ep("f", ("get_customer", "toggle_data"), "failure")
    other_step = _ep("s1", ("check_signal", "reboot"), "success")  # succeeded at another step: not its lesson
    same_step = _ep("s2", ("check_signal", "reseat_sim", "toggle_data"), "success")
    out = HeuristicReflector().reflect(failed, [other_step, same_step])
    assert isinstance(out, Reflection)
    assert out.check == {"kind": "order", "tools": ["check_signal", "reseat_sim", "toggle_data"]}
    assert out.reusable_rule == "Before toggle_data, call check_signal → reseat_sim first."
    alone = HeuristicReflector().reflect(failed, [other_step])  # no success reached toggle_data: no check
    assert not isinstance(alone, Reflection) or alone.check is None


def test_a_success_check_asks_for_the_whole_order_its_text_names_so_another_order_does_not_follow_it():
    # a lucky success took its steps in the wrong order (toggle_data before reboot); its rule's text names that
    # order, and its check must too. Among these runs only get_customer told success from failure at `reboot`, so a
    # check of the telling prerequisites alone (get_customer before reboot) would be followed by the correct run r1,
    # which would then confirm the wrong order
    lucky = _ep("ok", ("get_customer", "toggle_data", "reboot"), "success")
    related = [_ep("r1", ("get_customer", "reboot", "toggle_data"), "success"),
               _ep("r2", ("reboot", "toggle_data"), "failure"), _ep("r3", ("toggle_data", "reboot"), "failure")]
    assert _order_check(_path(lucky), {"reboot", "toggle_data"}, runs=[lucky, *related])["check"]["tools"] == \
        ["get_customer", "reboot"]
    out = HeuristicReflector().reflect(lucky, related)
    assert isinstance(out, Reflection)
    assert out.reusable_rule.endswith("call get_customer → toggle_data → reboot in this order.")
    check = Check.from_dict(out.check)
    assert check.tools == ("get_customer", "toggle_data", "reboot")
    correct = related[0].tools
    assert check.reaches(correct) and not check.followed(correct)  # the correct run reaches the step, ignoring it
    assert check.followed(lucky.tools)
    # nothing precedes the first state change: nothing to check
    alone = HeuristicReflector().reflect(_ep("s", ("reboot", "check_status"), "success"), related[1:])
    assert isinstance(alone, Reflection) and alone.check is None


def test_scope_counter_examples_name_each_other_task_type_once_without_quoting_its_requests():
    # what the rule is not for: the task types of related runs of another type, each once; quoting one of their
    # requests would repeat, in every injection of the rule, what the episodes injected beside it already say
    ok = _ep("ok", ("check_signal", "reboot"), "success")
    related = [_ep("r1", ("get_customer", "reseat_sim"), "success", task_type="sim"),
               _ep("r2", ("get_customer", "reseat_sim"), "failure", task_type="sim"),
               _ep("r3", ("get_customer", "toggle_data"), "success", task_type="data")]
    out = HeuristicReflector().reflect(ok, related)
    assert isinstance(out, Reflection)
    assert out.counter_examples == ["not for sim tasks", "not for data tasks"]
    assert not any(r.instruction in c or "such as" in c for r in related for c in out.counter_examples)


def test_a_trigger_is_the_tools_verb_or_for_a_light_verb_the_noun_it_takes():
    def ep(instruction: str) -> CompressedEpisode:
        return replace(_ep("p", ("get_customer", "make_payment", "cancel_line"), "success"), instruction=instruction)

    # 'make' alone would fire on any request that says 'make sure': the light verb's noun tells instead
    assert HeuristicReflector._trigger(ep("Please make sure my phone works")) is None
    assert HeuristicReflector._trigger(ep("I want to settle my payment"))["any"] == ["payment"]
    assert HeuristicReflector._trigger(ep("Make the payment and cancel the old line"))["any"] == ["payment", "cancel"]
