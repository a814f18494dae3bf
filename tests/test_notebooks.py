"""Every notebook under ``notebooks/`` runs top to bottom on a fresh kernel of this interpreter, and is committed
executed (valid nbformat v4, ``python3`` kernel, every code cell with its outputs, none naming a machine path), on
the full-size development data.

The kernel and its environment come from :mod:`notebook_kernel` (which also holds the command that regenerates the
committed outputs). When ``../shared/datasets`` is beside the checkout, its development splits are fetched
(verified) into the kernel's home first, so the notebooks run on the full-size data; without it they run on the
committed samples and say so — under ``CI=true`` that is a failure.
"""

from __future__ import annotations

import base64
import os
import re
import sys
from pathlib import Path
from typing import Callable

import nbformat
import pytest

from notebook_kernel import KERNEL_NAME, NOTEBOOKS_DIR, execute, fetch_development_data, kernel_environment, \
    machine_paths, notebooks
from support import SHARED_DATASETS

NOTEBOOKS = notebooks()
FULL = "data: full-size development data"
SAMPLE = "data: sample "


def _name(path: Path) -> str:
    return path.relative_to(NOTEBOOKS_DIR).as_posix()


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``python3`` kernelspec for ``sys.executable`` first on JUPYTER_PATH, a kernel environment (inherited from
    this process) that keeps everything the kernel writes under ``tmp_path``, and the development data fetched into
    the kernel's home when it is beside the checkout."""
    from jupyter_client.kernelspec import KernelSpecManager

    kernel_environment(tmp_path, monkeypatch.setenv, lambda name: monkeypatch.delenv(name, raising=False))
    if SHARED_DATASETS.is_dir():
        fetch_development_data(SHARED_DATASETS, tmp_path / "home")
    argv = KernelSpecManager().get_kernel_spec(KERNEL_NAME).argv
    assert argv[0] == sys.executable, f"kernel {KERNEL_NAME!r} resolves to {argv[0]}, expected {sys.executable}"
    return tmp_path


def _outputs(nb: nbformat.NotebookNode, marker: str | None = None) -> list[nbformat.NotebookNode]:
    """Outputs of the code cells (only those whose source contains ``marker``, when given)."""
    return [out for cell in nb.cells if cell.cell_type == "code" and (marker is None or marker in cell.source)
            for out in cell.get("outputs", [])]


def _text(outputs: list[nbformat.NotebookNode]) -> str:
    """stdout plus the text/plain of results and displays."""
    parts = []
    for out in outputs:
        if out.output_type == "stream" and out.name == "stdout":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts.append(out.data.get("text/plain", ""))
    return "\n".join(parts)


def _pngs(nb: nbformat.NotebookNode) -> list[bytes]:
    return [base64.b64decode(out.data["image/png"]) for out in _outputs(nb)
            if out.output_type == "display_data" and "image/png" in out.data]


def _data_notes(nb: nbformat.NotebookNode) -> list[str]:
    """The ``data: …`` lines a notebook printed (which data it ran on)."""
    return [line for line in _text(_outputs(nb)).splitlines() if line.startswith("data: ")]


def _on_full_data(nb: nbformat.NotebookNode) -> bool:
    """Whether every data cell ran on the full-size data; under CI it must."""
    notes = _data_notes(nb)
    if os.environ.get("CI") == "true":
        assert notes and all(n.startswith(FULL) for n in notes), f"under CI the notebook must run on the full data:" \
                                                                  f" {notes}"
    assert all(n.startswith((FULL, SAMPLE)) for n in notes), notes
    return bool(notes) and all(n.startswith(FULL) for n in notes)


# ------------------------------------------------------------------ what each notebook must show
def _check_quickstart(nb: nbformat.NotebookNode) -> None:
    pngs = _pngs(nb)
    assert len(pngs) >= 2, f"expected the score-terms chart and the side-by-side chart, got {len(pngs)} PNG(s)"
    assert all(png.startswith(b"\x89PNG") and len(png) > 10_000 for png in pngs), "a figure came out empty"

    retrieval = _text(_outputs(nb, "cfg.flat()"))
    assert "retrieval.weights.lexical" in retrieval and "0.2" in retrieval, f"retrieval config table:\n{retrieval}"

    events = _text(_outputs(nb, "events_frame()"))
    assert "promoted" in events and "merged" in events and "confirmed" in events, f"events table:\n{events}"
    promoted_rows = [line for line in events.splitlines() if line.rstrip().endswith("True")]
    assert len(promoted_rows) >= 2 and all(" L3 " in row for row in promoted_rows), \
        f"expected at least two promotions to L3 in the events table:\n{events}"

    search = _text(_outputs(nb, "run.search"))
    assert "Pull last quarter's East China sales figures." in search and "[L3#" in search, \
        f"search result should show the demo query and the promoted rule:\n{search}"

    injection = _text(_outputs(nb, "injection.text"))
    assert "tokens (budget 600)" in injection, f"injection cell:\n{injection}"
    assert "## General rules (from past experience)" in injection and "## Similar past tasks" in injection, \
        f"injection block should hold rules and past tasks:\n{injection}"

    override = _text(_outputs(nb, "cfg.with_params"))
    assert "default weights" in override and "first design weights" in override, \
        f"side-by-side ranking table:\n{override}"


def _check_reflection(nb: nbformat.NotebookNode) -> None:
    pngs = _pngs(nb)
    assert len(pngs) >= 1, "expected the chart of trigger decisions per reason"
    assert all(png.startswith(b"\x89PNG") and len(png) > 10_000 for png in pngs), "a figure came out empty"

    full = _on_full_data(nb)
    data = _text(_outputs(nb, "load(data.path"))
    expected = "40 episodes of 10 tasks from gpt-4o-airline.dev.json" if full else \
        "20 episodes of 5 tasks from gpt-4o-airline.sample.json"
    assert expected in data, f"dataset cell:\n{data}"

    chosen = _text(_outputs(nb, "failed_with_error"))
    assert "chosen: " in chosen and " tool error(s)" in chosen and "tau-airline-" in chosen, \
        f"the example episode should be a failed tau-bench episode with a tool error:\n{chosen}"

    compression = _text(_outputs(nb, "compressed.to_text"))
    sizes = re.search(r"raw trace: +\d+ steps, ([\d,]+) characters of JSON\ncompressed text: .*?([\d,]+) characters",
                      compression)
    assert sizes, f"compression cell should print the raw and compressed sizes:\n{compression}"
    raw, small = (int(g.replace(",", "")) for g in sizes.groups())
    assert small < raw, f"the compressed text ({small}) should be shorter than the raw trace ({raw})"
    assert "error at step" in compression, f"the chosen episode's tool error should be shown:\n{compression}"

    decisions = _text(_outputs(nb, "o.as_row()"))
    assert "strategy_failure" in decisions and "routine_success" in decisions, f"decisions table:\n{decisions}"
    if full:
        assert "repeat_failure" in decisions, f"decisions table:\n{decisions}"
    stats = _text(_outputs(nb, "reflection_stats()"))
    assert "trigger_rate" in stats and "strategy_failure" in stats, f"reflection stats:\n{stats}"

    outcome = _text(_outputs(nb, "by_id[chosen.episode_id]"))
    assert "reason='strategy_failure'" in outcome, f"the chosen failure should trigger a reflection:\n{outcome}"
    assert "reusable_rule" in outcome or "rejected: " in outcome, f"chosen episode's outcome:\n{outcome}"

    llm = _text(_outputs(nb, "LiteLLMReflector.from_config"))
    assert "No LLM configured" in llm and "stub server stopped after 1 request(s)" in llm, f"LLM cell:\n{llm}"
    assert "accepted Reflection for" in llm, f"the stub's canned reflection should pass validation:\n{llm}"
    usage = _text(_outputs(nb, "usage_summary()"))
    assert "'calls': 1, 'failed_calls': 0, 'attempts': 1" in usage, f"usage summary:\n{usage}"


def _check_replay(nb: nbformat.NotebookNode) -> None:
    pngs = _pngs(nb)
    assert len(pngs) >= 2, "expected the trigger-reason chart and the four replay plots"
    assert all(png.startswith(b"\x89PNG") and len(png) > 10_000 for png in pngs), "a figure came out empty"
    head = _text(_outputs(nb, "report = run_replay"))
    expected = ("gpt-4o-airline.dev: 120 episodes, 90 judged queries in 30 groups" if _on_full_data(nb) else
                "gpt-4o-airline.sample: 20 episodes, 15 judged queries in 5 groups")
    assert expected in head, head
    table = _text(_outputs(nb, "report.table()"))
    for name in ("none", "dense", "bm25", "hindsight", "ndcg@5", "hit@3"):
        assert name in table, f"side-by-side table:\n{table}"
    assert "trigger rate" in _text(_outputs(nb, "trigger_reasons"))
    example = _text(_outputs(nb, "judge_mode(history, mode)"))
    assert "transfer  {'b': {'a': 2}}" in example and "outcome   {'d': {'b': 1, 'a': 1, 'c': 2}}" in example, example
    modes = _text(_outputs(nb, "report.table(mode=mode)"))
    for line in ("transfer: 20 queries" if _on_full_data(nb) else "outcome: ", "outcome: ", "dense+ok", "bm25+ok"):
        assert line in modes, f"per-mode tables:\n{modes}"
    groups = _text(_outputs(nb, 'report.group_table("ndcg@5")'))
    assert "best_baseline" in groups and "margin" in groups and "mean" in groups, f"group table:\n{groups}"
    assert "lift" in _text(_outputs(nb, 'report.result.lift')) or "no later run" in \
        _text(_outputs(nb, 'report.result.lift'))
    ceiling = _text(_outputs(nb, 'report.result.rule_ceiling'))
    assert "tasks have both a success and a failure" in ceiling and "ideal lift" in ceiling, ceiling
    for form in ("order", "avoid", "stated", "grounded", "chance"):
        assert form in ceiling, ceiling
    power = _text(_outputs(nb, 'report.result.lift_power'))
    assert "'histories': 40" in power and "'cleared'" in power, power
    explained = _text(_outputs(nb, "explain_queries(data.paths"))
    for column in ("rank", "semantic", "lexical", "task_type_match", "score", "repeat"):
        assert column in explained, f"explained query:\n{explained}"


def _check_agent_loop(nb: nbformat.NotebookNode) -> None:
    assert len(_pngs(nb)) >= 1, "expected the success-per-block chart"
    loop = _text(_outputs(nb, "await agent_loop()"))
    assert "tools: hindsight_memory_write, hindsight_memory_search, hindsight_memory_reflect" in loop, loop
    rates = _text(_outputs(nb, "by_block = "))
    found = re.search(r"with memory: first half ([\d.]+), second half ([\d.]+); without memory: ([\d.]+), ([\d.]+)",
                      rates)
    assert found, f"success cell:\n{rates}"
    early, later, bare_early, bare_later = map(float, found.groups())
    assert later > early and later > bare_later and early > bare_early, f"success should improve with memory:\n{rates}"
    block = _text(_outputs(nb, 'late["block"]'))
    assert "## General rules (from past experience)" in block and "[L2#" in block, f"injected block:\n{block}"
    assert "the agent followed Hint(" in block, block
    assert "server exit code: 0" in _text(_outputs(nb, "server.stop()"))


def _check_conflicts(nb: nbformat.NotebookNode) -> None:
    pngs = _pngs(nb)
    assert len(pngs) >= 1 and all(png.startswith(b"\x89PNG") and len(png) > 10_000 for png in pngs), \
        "expected the 2-D picture of clusters and conflicts"
    pairs = _text(_outputs(nb, "judge_pairs(pairs"))
    found = re.search(r"(\d+) pairs: precision ([\d.]+), recall ([\d.]+)", pairs)
    assert found, f"pairs cell:\n{pairs}"
    assert found[1] == ("40" if _on_full_data(nb) else "9"), pairs
    assert float(found[2]) >= 0.8 and float(found[3]) >= 0.8, pairs
    planted = _text(_outputs(nb, "evaluate_plan(plan, planted)"))
    scores = dict(re.findall(r"'(precision|recall|recall_noise_pairs)': ([\d.]+)", planted))
    assert float(scores["precision"]) >= 0.9 and float(scores["recall"]) >= 0.9, planted
    assert float(scores["recall_noise_pairs"]) == 1.0, planted
    assert "'recall_noise_pairs': 0.0" in _text(_outputs(nb, "no_neighbours"))
    replay = _text(_outputs(nb, "superseded_by"))
    assert "archived   rule-" in replay and "successor  rule-" in replay, replay
    assert "successor injected: True | old rule injected: False" in _text(_outputs(nb, "old rule injected"))
    flagged = _text(_outputs(nb, "flagged.maintain"))
    assert "flagged" in flagged and flagged.count("[conflicts with [L") == 2, flagged
    assert "'reembedded': 0" in _text(_outputs(nb, "import_jsonl(copy"))


def _check_cross_agent(nb: nbformat.NotebookNode) -> None:
    assert len(_pngs(nb)) >= 1, "expected the nDCG@5 bar chart"
    history = _text(_outputs(nb, "load_history(telecom.paths)"))
    full = _on_full_data(nb)
    runs = "40 runs" if full else "5 runs"
    assert f"telecom_gpt-4.1.{'' if full else 'sample.'}json ({runs}); telecom_sft-gpt-4.1" in history, history
    head = _text(_outputs(nb, "report = run_replay(telecom.paths"))
    assert f"{40 if full else 5} judged queries in {40 if full else 5} tasks" in head and "over both files" in head, \
        head
    for name in ("none", "dense", "bm25", "hindsight", "ndcg@5"):
        assert name in head, f"side-by-side table:\n{head}"
    by_source = _text(_outputs(nb, "report.source_table()"))
    assert "telecom_sft-gpt-4.1" in by_source and "queries" in by_source, by_source
    assert "hindsight" in _text(_outputs(nb, "airline_report.table()"))


def _check_sweeps(nb: nbformat.NotebookNode) -> None:
    assert len(_pngs(nb)) >= 1, "expected the weight-sensitivity plot"
    choice = _text(_outputs(nb, "sel = result.selection"))
    found = re.search(r"chosen: (base|\d+) \(.+\)\nCV maximize ndcg@5: base ([\d.]+) ± [\d.]+, best \((?:the base: "
                      r"no trial scores higher|trial \d+)\) ([\d.]+) ± [\d.]+, gain ([+-][\d.]+)", choice)
    assert found, f"selection cell:\n{choice}"
    base, best, gain = map(float, found.groups()[1:])
    assert best >= base and abs(best - base - gain) < 1e-3, choice
    assert "optimism of the best of" in choice and "none" in choice and "test.ndcg@5" in choice, choice
    logged = _text(_outputs(nb, "mlflow.get_run(result.parent_run_id)"))
    assert "'selection.optimism'" in logged and "metrics.cv.mean" in logged, logged
    assert "provenance:" in _text(_outputs(nb, "export_config(with_provenance(result), out)"))


CHECKS: dict[str, Callable[[nbformat.NotebookNode], None]] = {"01_quickstart.ipynb": _check_quickstart,
                                                              "02_reflection.ipynb": _check_reflection,
                                                              "03_replay.ipynb": _check_replay,
                                                              "04_sweeps.ipynb": _check_sweeps,
                                                              "05_conflicts.ipynb": _check_conflicts,
                                                              "06_agent_loop.ipynb": _check_agent_loop,
                                                              "07_cross_agent.ipynb": _check_cross_agent}
STABLE = {"03_replay.ipynb": "report.table()", "07_cross_agent.ipynb": "report.table()"}
"""Cells whose output is deterministic (no timing in it): a fresh run on the full data must print what is
committed, so committed outputs cannot go stale."""


# ------------------------------------------------------------------ tests
def test_notebooks_are_found() -> None:
    # Guards the glob: a wrong folder would otherwise turn every parametrized test below into a silent skip.
    assert NOTEBOOKS, f"no *.ipynb under {NOTEBOOKS_DIR}"
    assert set(CHECKS) <= {_name(p) for p in NOTEBOOKS}, "CHECKS names a notebook that does not exist"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_is_committed_executed(path: Path) -> None:
    # Someone browsing the repository sees every table and plot: the notebooks are committed executed, top to
    # bottom, on the full-size development data (`python tests/notebook_kernel.py --data DIR` regenerates them).
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata.get("kernelspec", {}).get("name") == KERNEL_NAME, f"{_name(path)}: kernelspec name"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), \
        f"{_name(path)}: not executed top to bottom in one run (execution counts {[c.execution_count for c in code]})"
    errors = [i for i, c in enumerate(code) if any(o.output_type == "error" for o in c.outputs)]
    assert not errors, f"{_name(path)}: code cells {errors} hold an error"
    assert not machine_paths(nb), f"{_name(path)}: outputs name machine paths: {machine_paths(nb)[:3]}"
    notes = _data_notes(nb)
    assert all(n.startswith(FULL) for n in notes), f"{_name(path)}: committed on sample data: {notes}"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_runs(path: Path, kernel_env: Path) -> None:
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    try:
        execute(nb, path.parent)
    except CellExecutionError as exc:
        pytest.fail(f"{_name(path)}: a cell raised; the cell and its traceback:\n{exc}", pytrace=False)
    skipped = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.execution_count is None]
    assert not skipped, f"{_name(path)}: code cells {skipped} did not run"
    CHECKS.get(_name(path), lambda nb: None)(nb)
    if _name(path) in STABLE and _on_full_data(nb):
        committed = nbformat.read(path, as_version=4)
        marker = STABLE[_name(path)]
        assert _text(_outputs(nb, marker)) == _text(_outputs(committed, marker)), \
            f"{_name(path)}: the committed output of `{marker}` is stale; regenerate the notebooks"


@pytest.mark.slow
def test_failing_cell_fails_and_kernel_is_this_interpreter(kernel_env: Path) -> None:
    # Negative control for test_notebook_runs: a cell that raises must surface as CellExecutionError. The cell
    # before it shows which interpreter and which HINDSIGHT_LAB_HOME the kernel got.
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import os, sys\nprint(sys.prefix)\nprint(os.environ['HINDSIGHT_LAB_HOME'])"),
        nbformat.v4.new_code_cell("raise ValueError('boom from the control notebook')"),
        nbformat.v4.new_code_cell("print('never reached')"),
    ])
    with pytest.raises(CellExecutionError, match="boom from the control notebook"):
        execute(nb, kernel_env)
    assert _text(nb.cells[0].outputs).split() == [sys.prefix, str(kernel_env / "home")]
    assert nb.cells[2].execution_count is None
