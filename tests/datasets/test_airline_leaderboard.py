"""The four tau2-bench airline leaderboard submissions (gpt-4.1-mini, gpt-oss-120b, claude-sonnet-4-5,
claude-opus-4-6): their registry entries, their committed samples (the same 5 tasks as the gpt-4.1 airline sample),
``datasets fetch --from`` under the source's own file name, and the six-file airline cross-agent group — on the
samples everywhere, and on the development files when ``../shared/datasets`` is there."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from hindsight_lab.cli import main
from hindsight_lab.datasets import load
from hindsight_lab.datasets.catalog import TAU2_BENCH
from hindsight_lab.datasets.combine import load_history
from hindsight_lab.datasets.fetch import fetch
from hindsight_lab.datasets.registry import DatasetEntry, datasets_home, expand, get, local_path, resolve, samples_dir
from hindsight_lab.datasets.tau2_bench import qualified_task_id
from hindsight_lab.errors import DatasetError

from support import SHARED_DATASETS, shared_dataset

# the cross-agent order of the airline group, and what each development file holds: runs, successes (README)
AGENTS = ("gpt-4.1", "sft-gpt-4.1", "gpt-4.1-mini", "gpt-oss-120b", "claude-sonnet-4-5", "claude-opus-4-6")
DEV_RUNS = {"gpt-4.1": (20, 10), "sft-gpt-4.1": (20, 13), "gpt-4.1-mini": (50, 28), "gpt-oss-120b": (50, 19),
            "claude-sonnet-4-5": (50, 36), "claude-opus-4-6": (50, 38)}
# the four new entries: agent → (file name at the source, abbreviated commit)
NEW = {
    "gpt-4.1-mini": ("toolorchestra_airline_gpt-5_1trial.json", "633a3169"),
    "gpt-oss-120b": ("langchain_agent_airline_2025-11-26_00-37-06.json", "52a4ed7b"),
    "claude-sonnet-4-5": ("claude-sonnet-4-5_airline_default_gpt4.1_1trials.json", "921a1cb8"),
    "claude-opus-4-6": ("airline.json", "dfdc3f7b"),
}
SAMPLE_TASKS = {qualified_task_id("airline", t) for t in ("2", "6", "8", "13", "16")}  # the gpt-4.1 file's first 5


def _dev(agent: str) -> DatasetEntry:
    return get(f"tau2-airline-{agent}-dev")


def _sample(agent: str) -> DatasetEntry:
    return get(f"tau2-airline-{agent}-sample")


@pytest.mark.parametrize("agent", list(NEW))
def test_dev_entry_names_its_source_and_all_50_tasks(agent: str) -> None:
    entry = _dev(agent)
    name, commit = NEW[agent]
    assert entry.format == "tau2-bench" and entry.filename == f"tau2-bench/airline_{agent}.json"
    assert entry.source is not None and entry.source.repo == TAU2_BENCH and entry.source.commit == commit
    assert entry.source.path.startswith("web/leaderboard/public/submissions/")
    assert entry.source.path.endswith(f"/trajectories/{name}") and "abbreviated" in entry.source.note
    assert entry.licence == "MIT" and not entry.is_sample and len(entry.split.keep) == 50
    assert entry.split.describe() == "50 task ids by sha256 prefix" and "all 50 tasks" in entry.title
    # a sample keeps 5 of the tasks its development split keeps, and carries its licence
    sample = _sample(agent)
    assert sample.sample_of == entry.name and sample.licence == entry.licence
    assert set(sample.split.keep) < set(entry.split.keep)


@pytest.mark.parametrize("agent", list(NEW))
def test_sample_loads_five_tasks(agent: str) -> None:
    entry = _sample(agent)
    path = local_path(entry)
    assert path == samples_dir() / "tau2-bench" / f"airline_{agent}.sample.json"
    data = path.read_bytes()
    assert (hashlib.sha256(data).hexdigest(), len(data)) == (entry.sha256, entry.size)
    assert entry.split.derive(data) == data  # its own split, in the canonical form
    episodes, _ = load(path)
    assert len(episodes) == 5 and {e.task_id for e in episodes} == SAMPLE_TASKS
    raw = json.loads(data)
    assert len(raw["tasks"]) == len(raw["simulations"]) == 5
    assert {e.meta["agent"] for e in episodes} == {raw["info"]["agent_info"]["llm"]}


def test_airline_groups_are_six_files_in_order() -> None:
    assert [e.name for e in expand("tau2-airline-cross-dev")] == [f"tau2-airline-{a}-dev" for a in AGENTS]
    assert [e.name for e in expand("tau2-airline-cross-sample")] == [f"tau2-airline-{a}-sample" for a in AGENTS]
    paths = resolve("tau2-airline-cross-sample")
    assert [p.name for p in paths] == [f"airline_{a}.sample.json" for a in AGENTS]
    episodes, info = load_history(paths)
    assert [(f["name"], f["episodes"]) for f in info["files"]] == [(p.name, 5) for p in paths]
    assert len(episodes) == 30 and {e.task_id for e in episodes} == SAMPLE_TASKS
    assert [e.meta["source_file"] for e in episodes] == [p.name for p in paths for _ in range(5)]


def test_datasets_list_shows_the_new_entries(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    for agent in NEW:
        assert f"tau2-airline-{agent}-dev" in out and f"tau2-airline-{agent}-sample" in out
    assert "tau2-airline-cross-dev" in out and "tau2-airline-cross-sample" in out


def _public_source(sample: DatasetEntry) -> bytes:
    """The sample's object with one task (and its run) the split leaves out, indented otherwise than the
    canonical form: what a source file of more tasks looks like."""
    data = json.loads(local_path(sample).read_bytes())  # type: ignore[union-attr]
    extra_task = dict(data["tasks"][0], id="not-a-kept-task")
    extra_sim = dict(data["simulations"][0], task_id="not-a-kept-task", id="extra-simulation")
    return json.dumps({**data, "tasks": [extra_task, *data["tasks"]],
                       "simulations": [*data["simulations"], extra_sim]}, indent=1).encode()


@pytest.mark.parametrize("agent", list(NEW))
def test_fetch_from_a_folder_with_the_source_file_name(agent: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The development entry as registered (its name, file name and source path) with the sample's split rule and
    checksum: a folder holding a sample-derived source under the source's own file name gives the sample back."""
    dev, sample = _dev(agent), _sample(agent)
    entry = replace(dev, split=sample.split, sha256=sample.sha256, size=sample.size)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / NEW[agent][0]).write_bytes(_public_source(sample))

    from hindsight_lab.datasets import registry

    known = registry.entries()
    monkeypatch.setattr("hindsight_lab.datasets.registry.entries", lambda: {**known, entry.name: entry})
    assert main(["datasets", "fetch", entry.name, "--from", str(mirror)]) == 0
    assert f"{entry.name}: fetched" in capsys.readouterr().out
    dest = datasets_home() / dev.filename
    assert dest.read_bytes() == local_path(sample).read_bytes()  # type: ignore[union-attr]
    assert [p.name for p in dest.parent.iterdir()] == [dest.name]  # no part or temporary file left
    assert resolve(entry.name) == [dest]

    # one changed value of a kept run: the checksum fails and the verified file stays as it was
    (mirror / NEW[agent][0]).write_bytes(_public_source(sample).replace(b'"reward": 1.0', b'"reward": 0.5', 1)
                                         .replace(b'"reward": 0.0', b'"reward": 0.5', 1))
    with pytest.raises(DatasetError, match="checksum mismatch.*expected " + entry.sha256):
        fetch(entry, from_dir=mirror, force=True)
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == sample.sha256


# ------------------------------------------------------------------------------------- ../shared/datasets files
@pytest.mark.parametrize("agent", AGENTS)
def test_dev_checksum_matches_the_shared_file(agent: str) -> None:
    entry = _dev(agent)
    raw = shared_dataset(entry.filename).read_bytes()
    split = entry.split.derive(raw, source=entry.filename)
    assert (hashlib.sha256(split).hexdigest(), len(split)) == (entry.sha256, entry.size)
    if agent in NEW:  # all 50 tasks: the split is the whole file, which is in the canonical form already
        assert split == raw
    # the committed sample is the sample's rule applied to the development file
    sample = _sample(agent)
    assert sample.split.derive(split) == local_path(sample).read_bytes()  # type: ignore[union-attr]


@pytest.mark.slow
def test_dev_group_fetches_from_shared_and_holds_240_episodes_of_50_tasks() -> None:
    for entry in expand("tau2-airline-cross-dev"):
        shared_dataset(entry.filename)
    for entry in expand("tau2-airline-cross-dev"):
        assert fetch(entry.name, from_dir=SHARED_DATASETS).action == "fetched"
    paths = resolve("tau2-airline-cross-dev")
    assert paths == [datasets_home() / f"tau2-bench/airline_{a}.json" for a in AGENTS]
    episodes, info = load_history(paths)
    assert [f["episodes"] for f in info["files"]] == [DEV_RUNS[a][0] for a in AGENTS]
    assert len(episodes) == 240 and len({e.task_id for e in episodes}) == 50
    runs_per_task = Counter(e.task_id for e in episodes)
    assert Counter(runs_per_task.values()) == {6: 20, 4: 30}  # the two 20-task files' tasks run six times
    successes = Counter(e.meta["source_file"] for e in episodes if e.outcome == "success")
    assert [successes[p.name] for p in paths] == [DEV_RUNS[a][1] for a in AGENTS]
