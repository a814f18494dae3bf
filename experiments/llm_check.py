"""The LiteLLM reflector against a real OpenAI-compatible server: prompt sizes, times and outcomes of every call.

Runs what ``hindsight-lab reflect`` runs (a fresh temporary store, the triggers, the reflector) on a dataset with
``reflect.reflector: litellm`` pointed at ``--api-base``, then prints one row per call to the server (the prompt
tokens the server reported and the project's own estimate, the completion tokens, the seconds against the
reflection's budget, the status), one row per reflection (accepted, or the rejection reason and its detail), and the
checks of issue 16: no context-window error, no call past its time budget, no rejection for a field the system
knows (task_type, outcome, episode_id), and no ``reflector_error`` (a server fault the reflector could not get
past; a reflection that timed out within its budget is counted, not failed). Exit code 1 when a check fails.

Not a test (CI has no model server): run it by hand against a server, e.g. llama-cpp-python's with a small GGUF
model and a 4,096-token context::

    python -m llama_cpp.server --model MODEL.gguf --n_ctx 4096 --host 127.0.0.1 --port 8080
    python experiments/llm_check.py --api-base http://127.0.0.1:8080/v1 --context-tokens 4096 --limit-tasks 8

A server that needs no key still gets one from LiteLLM's ``openai/`` provider: ``--api-key-env`` names a variable
to send (default: none; LiteLLM then sends ``OPENAI_API_KEY`` if set, a local server ignores it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import Counter
from typing import Any

import yaml

KNOWN_FIELDS = ("task_type", "outcome", "episode_id")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--api-base", required=True, help="the server's OpenAI-compatible URL, e.g. http://HOST:PORT/v1")
    p.add_argument("--model", default="openai/local", help="LiteLLM model string (default openai/local)")
    p.add_argument("--api-key-env", help="environment variable holding the key sent to the server")
    p.add_argument("--dataset", default="tau-bench-airline-dev", help="trace file or registered dataset name")
    p.add_argument("--limit-tasks", type=int, default=8, help="keep the first N tasks (default 8)")
    p.add_argument("--context-tokens", type=int, help="reflect.llm.context_tokens (the server's context)")
    p.add_argument("--timeout-s", type=float, help="reflect.llm.timeout_s (the budget of one reflection)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more config overrides")
    p.add_argument("--json", help="also write the calls, reflections and checks to this JSON file")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from hindsight_lab.config import LabConfig
    from hindsight_lab.datasets.combine import load_history
    from hindsight_lab.datasets.registry import resolve
    from hindsight_lab.memory import MemorySystem

    overrides: dict[str, Any] = {"reflect.reflector": "litellm", "reflect.llm.model": args.model,
                                 "reflect.llm.api_base": args.api_base, "reflect.llm.api_key_env": args.api_key_env}
    if args.context_tokens:
        overrides["reflect.llm.context_tokens"] = args.context_tokens
    if args.timeout_s:
        overrides["reflect.llm.timeout_s"] = args.timeout_s
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key.strip()] = yaml.safe_load(value)
    episodes, info = load_history(resolve(args.dataset), limit_tasks=args.limit_tasks)
    with tempfile.TemporaryDirectory(prefix="llm-check-") as tmp:
        cfg = LabConfig().with_params({**overrides, "store.path": tmp})
        with MemorySystem(cfg) as mem:
            outcomes = mem.reflect_many(episodes)
            calls = [dict(c) for c in mem.reflector.calls]
            llm = mem.reflector.describe()["args"]
    reflections = [{"episode_id": o.episode_id, "task_type": o.compressed.task_type, "outcome": o.compressed.outcome,
                    "accepted": o.reflection is not None,
                    "rejection": o.rejection.reason if o.rejection else None,
                    "detail": o.rejection.detail if o.rejection else None,
                    "rule": o.reflection.reusable_rule if o.reflection else None,
                    "raw": o.rejection.raw[:300] if o.rejection else None}
                   for o in outcomes if o.decision.reflect]
    return {"dataset": info["name"], "episodes": len(episodes), "llm": llm, "calls": calls,
            "reflections": reflections, "checks": checks(calls, reflections, llm)}


def checks(calls: list[dict[str, Any]], reflections: list[dict[str, Any]], llm: dict[str, Any]) -> dict[str, Any]:
    budget = float(llm["timeout_s"])
    context_errors = [r["episode_id"] for r in reflections if r["rejection"] == "prompt_too_long"]
    over = [c for c in calls if c["latency_s"] > budget * c["batch_size"] + 1.0]  # 1 s for the client's own work
    known = [r["episode_id"] for r in reflections if r["rejection"] in ("missing_field", "wrong_type")
             and any((r["detail"] or "").startswith(f) for f in KNOWN_FIELDS)]
    errors = [r["episode_id"] for r in reflections if r["rejection"] == "reflector_error"]
    timed_out = [r["episode_id"] for r in reflections if r["rejection"] == "timed_out"]
    return {"context_window_errors": context_errors, "calls_over_budget": len(over), "known_field_rejections": known,
            "reflector_errors": errors, "timed_out": timed_out,
            "passed": not context_errors and not over and not known and not errors}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def report(result: dict[str, Any]) -> str:
    import pandas as pd

    llm, calls, refl = result["llm"], result["calls"], result["reflections"]
    budget = float(llm["timeout_s"])
    lines = [f"{result['dataset']}: {result['episodes']} episodes, {len(refl)} reflections, {len(calls)} calls to "
             f"{llm['model']} at {llm['api_base']}; context {llm['context_tokens']}, max_tokens {llm['max_tokens']}, "
             f"budget {budget:g} s per reflection, batch_size {llm['batch_size']}", ""]
    rows = [{"call": i, "episodes": " ".join(c.get("episode_ids") or []) or "?", "prompt_tokens": c["prompt_tokens"],
             "estimated": c.get("prompt_tokens_estimated"), "completion_tokens": c["completion_tokens"],
             "seconds": round(c["latency_s"], 1), "budget_s": budget * c["batch_size"], "attempts": c["attempts"],
             "output": c["output"], "status": c["status"]} for i, c in enumerate(calls, 1)]
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        if rows:
            lines.append(pd.DataFrame(rows).to_string(index=False))
        lines.append("")
        frame = pd.DataFrame([{k: v for k, v in r.items() if k != "raw"} | {"detail": (r["detail"] or "")[:70],
                                                                               "rule": (r["rule"] or "")[:60]}
                              for r in refl])
        if not frame.empty:
            lines.append(frame.to_string(index=False))
    prompts = [c["prompt_tokens"] for c in calls if c["prompt_tokens"] is not None]
    seconds = [c["latency_s"] for c in calls]
    reasons = Counter(r["rejection"] or "accepted" for r in refl)
    lines += ["", f"prompt tokens (server): max {max(prompts, default=None)}, median {_median(prompts)}; "
              f"completion tokens: total {sum(c['completion_tokens'] or 0 for c in calls)}; "
              f"seconds per call: max {max(seconds, default=0):.1f}, median {_median(seconds) or 0:.1f} "
              f"(budget {budget:g} s per reflection)",
              "outcomes: " + ", ".join(f"{k} {n}" for k, n in reasons.most_common())]
    ck = result["checks"]
    lines.append(f"checks: context-window errors {len(ck['context_window_errors'])}, calls over budget "
                 f"{ck['calls_over_budget']}, rejections for a known field {len(ck['known_field_rejections'])}, "
                 f"reflector errors {len(ck['reflector_errors'])} (timed out within the budget: "
                 f"{len(ck['timed_out'])}): "
                 + ("passed" if ck["passed"] else "FAILED"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    print(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1, default=str)
    return 0 if result["checks"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
