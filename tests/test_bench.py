"""`hindsight-lab bench` end to end at a tiny size, on the real model and real Chroma (the 100k run stays out of CI)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hindsight_lab.bench.corpus import corpus_embeddings, generate, make_episode
from hindsight_lab.bench.search import recall_at
from hindsight_lab.cli import main
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.trace.summary import derive_task_type
from hindsight_lab.trace import Episode


def _numbers(node: object, path: str = "") -> list[tuple[str, float]]:
    if isinstance(node, dict):
        return [x for k, v in node.items() for x in _numbers(v, f"{path}.{k}")]
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return [(path, float(node))]
    return []


@pytest.mark.slow
def test_bench_tiny_run_writes_every_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HINDSIGHT_LAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "bench.json"
    assert main(["bench", "--sizes", "150,300", "--queries", "15", "--write-n", "64", "--out", str(out)]) == 0
    data = json.loads(out.read_text())

    assert data["sizes"] == [150, 300] and data["queries"] == 15 and data["query_cache"] == "off"
    figures = [(k, v) for k, v in _numbers(data["search"]) if "load_1m" not in k]  # a load average may be 0
    figures += _numbers(data["write"]) + [("growth_p50", data["growth_p50"]), ("growth_raw", data["growth_raw_p50"])]
    assert len(figures) > 20
    for name, value in figures:
        assert math.isfinite(value) and value > 0, name
    for n in ("150", "300"):
        r = data["search"][n]
        assert 0.0 <= r["recall_at_20"] <= 1.0
        # HNSW on a few hundred real points is near exact; a broken ANN-vs-exact comparison scores ~0.
        assert r["recall_at_20"] > 0.9, r["recall_at_20"]
        assert r["search_ms"]["p95"] >= r["search_ms"]["p50"] > 0
    one = data["write"]["single"]
    assert one["episodes"] == 64
    for side in ("hindsight_ms", "raw_ms"):
        assert one[side]["p95"] >= one[side]["p50"] > 0, side
    assert {t["name"] for t in data["targets"]} >= {"write eps / raw eps", "search p50 growth 150->300"}
    assert all(isinstance(t["pass"], bool) for t in data["targets"])
    assert str(tmp_path) not in out.read_text()  # no machine paths in the JSON
    assert list((tmp_path / "home" / "bench" / "cache").glob("corpus-300-*.npy"))  # embeddings saved once

    printed = capsys.readouterr().out
    assert "recall@20 @ 300" in printed and ("PASS" in printed or "MISS" in printed)
    assert "write one at a time (64 episodes" in printed


def test_generator_is_prefix_stable_distinct_and_varied() -> None:
    corpus = generate(1, 2000)
    assert generate(1, 500) == corpus[:500]  # a smaller store is a prefix of a larger one: one cache serves both
    texts = [t for _, t in corpus]
    assert len(set(texts)) == len(texts)
    queries = generate(2, 200, exclude=set(texts))
    assert not {t for _, t in queries} & set(texts)
    types = {derive_task_type(Episode.model_validate(make_episode(1, j)), ("get", "search", "find", "query",
                                                                           "list", "check", "lookup", "fetch"))
             for j, _ in corpus}
    assert len(types) >= 30


def test_recall_at_counts_overlap_with_exact_top_k() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(50, 8)).astype(np.float32)
    ids = [f"r{i}" for i in range(50)]
    q = matrix[:2] + 0.01
    exact = [[ids[i] for i in np.argsort(-(matrix @ v))[:5]] for v in q]
    assert recall_at(exact, q, matrix, ids, k=5) == 1.0
    half = [row[:3] + ["x", "y"] for row in exact]
    assert recall_at(half, q, matrix, ids, k=5) == pytest.approx(0.6)


def test_corpus_embeddings_are_cached_reused_for_prefixes_and_checked(tmp_path: Path) -> None:
    emb = HashingEmbedder(dim=64)
    texts = [t for _, t in generate(1, 60)]
    first = corpus_embeddings(texts, emb, tmp_path)
    [path] = tmp_path.glob("corpus-60-*.npy")
    again = corpus_embeddings(texts[:25], emb, tmp_path)  # a smaller run reads the larger cache
    assert isinstance(again, np.memmap) and np.array_equal(again, first[:25])
    # Guards against stale vectors: a cache whose rows no longer match the texts is encoded again, not used.
    np.save(path, first[::-1].copy())
    fixed = corpus_embeddings(texts, emb, tmp_path)
    assert not isinstance(fixed, np.memmap) and np.array_equal(fixed, first)


@pytest.mark.slow
@pytest.mark.postgres
def test_bench_measures_postgres_beside_chroma_in_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          postgres_url: str) -> None:
    monkeypatch.setenv("HINDSIGHT_LAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "bench.json"
    assert main(["bench", "--sizes", "200", "--queries", "10", "--write-n", "64", "--postgres", postgres_url,
                 "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    chroma, pg = data["search"]["200"], data["search"]["200/postgres"]
    assert pg["recall_at_20"] > 0.9 and pg["search_ms"]["p95"] >= pg["search_ms"]["p50"] > 0 and pg["open_s"] > 0
    assert math.isclose(pg["vs_chroma_p50"], pg["search_ms"]["p50"] / chroma["search_ms"]["p50"])
    assert any(t["name"] == "search p50 / Chroma's @ 200/postgres" for t in data["targets"])
    assert postgres_url not in out.read_text()  # no URL (socket folder) in the JSON


@pytest.mark.slow
def test_the_search_process_peak_memory_is_its_own_not_the_bench_process() -> None:
    # Regression: the search process reported getrusage's ru_maxrss, which Linux carries over the execve that
    # starts it, so at 100k it showed the bench's own peak (the corpus matrix and the filled stores)
    import subprocess
    import sys

    ballast = np.ones(400 * 2**20 // 8)  # 400 MB held by this (the parent) process while the child runs
    out = subprocess.run([sys.executable, "-c", "from hindsight_lab.bench.search import peak_rss_mb; "
                          "print(peak_rss_mb())"], capture_output=True, text=True, check=True).stdout
    assert 0 < float(out) < 250, out
    assert ballast[-1] == 1.0


@pytest.mark.slow
def test_bench_replay_reads_per_query_cost_and_its_growth_by_history_size(tmp_path) -> None:
    from hindsight_lab.bench.replay import format_replay_bench, history, run_replay_bench

    eps = history(40, runs=4)
    assert len({e.task_id for e in eps}) == 10 and [e.task_id for e in eps][10] == "bench-t0"  # runs spread out
    assert all(a.started_at < b.started_at for a, b in zip(eps, eps[1:]))
    out = run_replay_bench([40, 120], systems=["dense", "hindsight"], queries=10, model="hashing-64")
    assert [(r["n"], r["system"]) for r in out["rows"]] == [(40, "dense"), (40, "hindsight"), (120, "dense"),
                                                             (120, "hindsight")]
    for r in out["rows"]:
        assert r["queries"] == 10 and r["query_p50_ms"] > 0 and r["episodes_per_s"] > 0 and r["peak_rss_mb"] > 0
    big, small = (next(r for r in out["rows"] if r["system"] == "hindsight" and r["n"] == n) for n in (120, 40))
    assert out["growth_p50"]["hindsight"] == pytest.approx(big["query_p50_ms"] / small["query_p50_ms"])
    text = format_replay_bench(out)
    assert "growth of the per-query p50, 40 → 120 episodes: hindsight ×" in text
