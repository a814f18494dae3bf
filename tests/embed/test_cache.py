"""The disk cache of vectors: keyed by model fingerprint and text, shared by processes, and a replay that reads every
vector from it scores as the replay that wrote them."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from hindsight_lab.embed import HashingEmbedder, PrefetchedEmbedder, SentenceTransformerEmbedder
from hindsight_lab.embed.cache import VectorCache, disk_cache, fingerprint


class Counting(HashingEmbedder):
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(dim=16)
        self.asked: list[str] = []

    def embed(self, texts):  # type: ignore[override]
        self.asked.extend(texts)
        return super().embed(texts)


def test_vectors_come_back_exactly_by_model_and_text(tmp_path: Path) -> None:
    a, b = VectorCache(tmp_path / "v.sqlite", "model-a"), VectorCache(tmp_path / "v.sqlite", "model-b")
    vec = np.array([0.1, -2.5, 3.25e-8], dtype=np.float32)
    a.put({"refund order 42": vec, "ünïcode ✈": vec * 2})
    got = a.get(["refund order 42", "ünïcode ✈", "never stored"])
    assert set(got) == {"refund order 42", "ünïcode ✈"} and got["refund order 42"].tobytes() == vec.tobytes()
    assert b.get(["refund order 42"]) == {} and len(a) == 2 and len(b) == 0  # another model holds nothing of it
    a.put({"refund order 42": vec + 1})  # a text stored again replaces its vector
    assert a.get(["refund order 42"])["refund order 42"][0] == pytest.approx(1.1) and len(a) == 2
    many = {f"text {i}": np.full(4, i, dtype=np.float32) for i in range(1200)}  # more than one statement's worth
    a.put(many)
    assert len(a.get(list(many))) == 1200


def _put(path: str, worker: int) -> None:
    VectorCache(path, "m").put({f"w{worker}-{i}": np.full(8, worker, dtype=np.float32) for i in range(200)})


def test_processes_write_one_cache_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "v.sqlite")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_put, args=(path, w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(VectorCache(path, "m")) == 600


def test_the_fingerprint_names_what_a_vector_depends_on(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    base = fingerprint("m", folder, True)
    assert base == fingerprint("m", folder, True) and base.startswith("m@")
    assert fingerprint("m", folder, False) != base and fingerprint("other", folder, True) != base
    (folder / "config.json").write_text('{"hidden_size": 384}')  # other weights or settings in the same folder
    assert fingerprint("m", folder, True) != base
    st = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    assert st.fingerprint() == SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2").fingerprint()
    assert st.model_ is None  # no model load for a fingerprint
    assert disk_cache(HashingEmbedder(dim=8), tmp_path / "v.sqlite") is None  # cheaper to run than to cache
    assert disk_cache(PrefetchedEmbedder(st, []), tmp_path / "v.sqlite").model == st.fingerprint()


def test_a_prefetch_reads_what_an_earlier_one_kept_and_embeds_only_the_rest(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "v.sqlite", "hashing-16")
    first_inner = Counting()
    first = PrefetchedEmbedder(first_inner, ["a", "b", "c"], cache=cache)
    assert first.from_cache == 0 and sorted(first_inner.asked) == ["a", "b", "c"]
    second_inner = Counting()
    second = PrefetchedEmbedder(second_inner, ["b", "c", "d"], cache=cache)
    assert second.from_cache == 2 and second_inner.asked == ["d"]
    assert second.embed(["b"]).tobytes() == first.embed(["b"]).tobytes()


@pytest.mark.slow
def test_a_replay_that_reads_every_vector_from_the_cache_scores_as_the_one_that_wrote_them(minilm) -> None:
    """The sample group of the six airline agents: without the cache, then writing it, then reading it back."""
    from hindsight_lab.config import LabConfig
    from hindsight_lab.replay.runner import run_replay

    def figures(config: LabConfig) -> tuple[dict, float]:
        report = run_replay("tau2-airline-cross-sample", embedder=minilm, config=config)
        return json.loads(json.dumps(report.comparison.figures())), report.result.timing["prefetch_s"]

    off, _ = figures(LabConfig().with_params({"embedder.disk_cache": False}))
    cold, cold_s = figures(LabConfig())
    warm, warm_s = figures(LabConfig())
    assert warm == cold  # every vector read back: the very figures
    _close(off, cold, 1e-6)
    assert warm_s < cold_s


def _close(a: object, b: object, tol: float) -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b)
        for k in a:
            _close(a[k], b[k], tol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, tol)
    elif isinstance(a, float) and isinstance(b, float):
        assert abs(a - b) <= tol
    else:
        assert a == b
