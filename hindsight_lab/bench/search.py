"""``hindsight-lab bench``: search latency, ANN recall, write throughput and peak memory, each against raw Chroma.

Everything is measured in one run on real text embedded with the real model (HNSW recall on random vectors means
nothing), with the query cache off and distinct query texts that are not in the corpus:

- **search**: for each store size, a fresh process (``python -m hindsight_lab.bench --worker SPEC``, which runs
  :func:`worker_main`) opens the store and times :meth:`MemorySystem.search` against the raw baseline,
  ``embed_query`` + one ``collection.query(n_results=20)`` on the episodes collection, in alternating blocks of the
  same queries; its peak RSS is the search process's.
- **recall@20**: Chroma's top 20 from the raw query against the exact top 20 of a numpy scan of the stored vectors.
- **write**: :meth:`MemorySystem.write_episodes` in batches, embedding included, against ``embed`` + ``add`` on a
  raw collection with the same HNSW settings; then episodes written one at a time (as reflection stores them),
  their embeddings computed before, in milliseconds per write against one ``add`` each.

With ``postgres_url`` (``bench --postgres URL``), every size is also measured on a Postgres namespace of that
database, in the same run: the same corpus filled through ``write_episodes``, searched by a fresh process, its raw
baseline ``embed_query`` + the store's own pgvector query; reported under ``"<size>/postgres"``, with its search
p50 against Chroma's and its open time: from the state the filling memory saved (``open_s``) and, in another fresh
process, from every record (``open_rebuild_s``, ``store.snapshot_every: 0``).

The corpus and its embedding cache are :mod:`hindsight_lab.bench.corpus`'s; a store is filled through
``write_episodes`` with an embedder that returns the cached vectors for corpus texts. :func:`run_bench` returns the
figures, :func:`format_table` renders them; the command line prints and writes them.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .._env import home
from ..errors import ConfigError
from ..types import Bucket
from .corpus import CORPUS_SEED, GENERATOR_VERSION, LookupEmbedder, corpus_embeddings, generate, make_episode

logger = logging.getLogger(__name__)

QUERY_SEED, WRITE_SEED = 2, 3
TOP_N, WARMUP, WRITE_BATCH, FILL_BATCH = 20, 5, 64, 5000
SINGLE_WRITES = 200  # episodes written one at a time after the batches (at most write-n)
_BLOCK, _PAUSE_S = 20, 0.3  # search-vs-raw timing: queries per block, pause between blocks
TARGETS = {"search_ratio": 1.5, "growth": 1.3, "recall": 0.95, "write_ratio": 0.7, "peak_rss_mb": 1536.0,
           "open_s": 3.0}


# --------------------------------------------------------------------------------------------------- measuring
def _config(path: Path | str, model: str | None = None) -> Any:
    """Default config on the store at ``path`` (a folder, or ``URL#namespace`` for Postgres), query cache off
    (``model``: the embedder it builds, if any).

    Episodes are embedded by their instruction, the text the corpus matrix holds, so the exact search the recall is
    measured against and the store index the same vectors."""
    from ..config import LabConfig

    url, _, namespace = str(path).partition("#")
    where = {"store.url": url, "store.namespace": namespace} if namespace else {"store.path": str(path)}
    params: dict[str, Any] = {**where, "embedder.query_cache_size": 0, "episode.key": "instruction"}
    return LabConfig().with_params({**params, "embedder.model": model} if model else params)


def fill_store(path: Path | str, corpus: Sequence[tuple[int, str]], matrix: np.ndarray, embedder: Any,
               *, show_progress: bool = False) -> list[str]:
    """Write the corpus episodes through :meth:`MemorySystem.write_episodes`; returns their record ids in order."""
    from tqdm.auto import tqdm

    from ..memory import MemorySystem
    from ..trace import Episode

    lookup = LookupEmbedder(embedder, {text: i for i, (_, text) in enumerate(corpus)}, matrix)
    ids: list[str] = []
    with MemorySystem(_config(path), embedder=lookup) as mem:
        for lo in tqdm(range(0, len(corpus), FILL_BATCH), desc=f"filling {len(corpus)}", disable=not show_progress):
            eps = [Episode.model_validate(make_episode(CORPUS_SEED, j)) for j, _ in corpus[lo:lo + FILL_BATCH]]
            ids += [r.id for r in mem.write_episodes(eps)]
    if lookup.computed:
        logger.warning("%d corpus texts were not in the embedding cache and were encoded", lookup.computed)
    return ids


def _summary(ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)), "mean": float(a.mean())}


def search_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: time ``search`` and the raw baseline per query, and report peak RSS.

    ``spec`` holds ``store``, ``model``, ``warmup`` and ``queries`` (texts); the raw top-20 ids and query vectors
    come back for the recall computation, which runs in the parent (so the corpus matrix never counts here).
    """
    import psutil

    from ..memory import MemorySystem

    load_before = os.getloadavg()[0]
    cfg = _config(spec["store"], spec["model"])
    if spec.get("open_only"):  # the open time without the saved state: every record read and indexed
        t0 = time.perf_counter()
        MemorySystem(cfg.with_params({"store.snapshot_every": 0})).open().close()
        return {"open_s": time.perf_counter() - t0}
    t0 = time.perf_counter()
    mem = MemorySystem(cfg).open()
    open_s = time.perf_counter() - t0
    if "#" in spec["store"]:  # Postgres: the store's own pgvector query
        def raw(q: str) -> tuple[list[str], np.ndarray]:
            v = mem.embedder.embed_query(q)
            return [r.id for r, _, _ in mem.store.query(Bucket.EPISODE, v, TOP_N)], v
    else:
        col = mem.store.client.get_collection(mem.store.collection_name(Bucket.EPISODE), embedding_function=None)

        def raw(q: str) -> tuple[list[str], np.ndarray]:
            v = mem.embedder.embed_query(q)
            return col.query(query_embeddings=[v], n_results=TOP_N)["ids"][0], v

    for q in spec["warmup"]:
        mem.search(q)
        raw(q)
    # Blocks, not per-query interleaving: a search leaves side effects (e.g. BLAS threads still spinning after the
    # rerank's matmul) that would slow a raw query run right after it and hide the search's own cost. The pause
    # lets them settle; alternating which side goes first in a block spreads drift in machine load evenly.
    search_ms, raw_ms, ids, vecs = [], [], [], []
    queries = spec["queries"]
    for b, lo in enumerate(range(0, len(queries), _BLOCK)):
        for side in ((0, 1) if b % 2 == 0 else (1, 0)):
            time.sleep(_PAUSE_S)
            for q in queries[lo:lo + _BLOCK]:
                t = time.perf_counter()
                if side == 0:
                    mem.search(q)
                    search_ms.append((time.perf_counter() - t) * 1000)
                else:
                    got, v = raw(q)
                    raw_ms.append((time.perf_counter() - t) * 1000)
                    ids.append(got)
                    vecs.append(v.tolist())
    peak_mb = peak_rss_mb()
    rss_mb = psutil.Process().memory_info().rss / 2**20
    mem.close()
    return {"search_ms": _summary(search_ms), "raw_ms": _summary(raw_ms), "open_s": open_s, "peak_rss_mb": peak_mb,
            "rss_after_mb": rss_mb, "raw_ids": ids, "query_vectors": vecs,
            "load_1m": {"before": load_before, "after": os.getloadavg()[0]}}


def peak_rss_mb() -> float:
    """This process's peak resident memory: Linux's ``VmHWM``, the high-water mark of its own address space.
    ``getrusage``'s ``ru_maxrss`` is not used where ``VmHWM`` exists: Linux carries it over an ``execve``, so a
    process started by the bench (``vfork`` + ``exec``) would report the bench's own peak, corpus matrix and all."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def recall_at(raw_ids: Sequence[Sequence[str]], vectors: np.ndarray, matrix: np.ndarray, ids: Sequence[str],
              k: int = TOP_N) -> float:
    """Mean over queries of ``|ANN top-k ∩ exact top-k| / k``, exact by dot product (normalised: cosine)."""
    scores = np.asarray(vectors, dtype=np.float32) @ np.asarray(matrix, dtype=np.float32).T
    exact = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return float(np.mean([len({ids[i] for i in row} & set(got)) / k for row, got in zip(exact, raw_ids)]))


def measure_writes(path: Path, episodes: Sequence[Any], embedder: Any, *, batch: int = WRITE_BATCH,
                   singles: Sequence[Any] = ()) -> dict[str, Any]:
    """Episodes/s of ``write_episodes`` vs ``embed`` + ``collection.add`` on a raw collection (first batch: warm-up);
    then, on the stores the batches filled, the milliseconds of each of ``singles`` written alone (a reflection
    stores one episode at a time), embeddings computed before, so the figures are the stores' own."""
    from ..memory import MemorySystem
    from ..store.chroma import hnsw_configuration, make_client

    cfg = _config(path / "hindsight")
    col = make_client(path=str(path / "raw")).create_collection(
        "raw-episodes", embedding_function=None, configuration=hnsw_configuration(cfg.store.hnsw))
    secs = [0.0, 0.0]
    texts = [e.instruction for e in singles]
    known = LookupEmbedder(embedder, {t: i for i, t in enumerate(texts)}, embedder.embed(texts)) if texts \
        else embedder
    one: list[list[float]] = [[], []]
    with MemorySystem(cfg, embedder=known) as mem:
        for b, lo in enumerate(range(0, len(episodes), batch)):
            chunk = episodes[lo:lo + batch]
            for which in ((0, 1) if b % 2 == 0 else (1, 0)):
                t = time.perf_counter()
                if which == 0:
                    mem.write_episodes(chunk)
                else:
                    texts = [e.instruction for e in chunk]
                    col.add(ids=[e.episode_id for e in chunk], embeddings=embedder.embed(texts), documents=texts,
                            metadatas=[{"outcome": e.outcome} for e in chunk])
                if b:
                    secs[which] += time.perf_counter() - t
        for k, ep in enumerate(singles):
            for which in ((0, 1) if k % 2 == 0 else (1, 0)):
                t = time.perf_counter()
                if which == 0:
                    mem.write_episodes([ep])
                else:
                    col.add(ids=[ep.episode_id], embeddings=known.embed([ep.instruction]),
                            documents=[ep.instruction], metadatas=[{"outcome": ep.outcome}])
                one[which].append((time.perf_counter() - t) * 1000.0)
    n = len(episodes) - min(batch, len(episodes))
    out: dict[str, Any] = {"hindsight_eps": n / secs[0], "raw_eps": n / secs[1], "ratio": secs[1] / secs[0],
                           "batch": batch}
    if singles:
        out["single"] = {"episodes": len(singles), "hindsight_ms": _summary(one[0]), "raw_ms": _summary(one[1])}
    return out


def run_bench(sizes: Sequence[int], *, queries: int = 200, write_n: int = 2000, model: str = "all-MiniLM-L6-v2",
              cache_dir: Path | None = None, show_progress: bool = False, postgres_url: str | None = None
              ) -> dict[str, Any]:
    """Run every measurement and return the JSON-ready result (figures, targets, machine; no paths)."""
    from ..embed import make_embedder
    from ..trace import Episode

    sizes = sorted(set(sizes))
    if not sizes or sizes[0] < TOP_N or queries < 1 or write_n < 1:
        raise ConfigError(f"bench: expected sizes >= {TOP_N}, queries >= 1 and write-n >= 1 "
                          f"(got sizes={list(sizes)}, queries={queries}, write-n={write_n})")
    embedder = make_embedder(model, query_cache_size=0)
    corpus = generate(CORPUS_SEED, sizes[-1])
    matrix = corpus_embeddings([t for _, t in corpus], embedder, cache_dir or home() / "bench" / "cache",
                               show_progress=show_progress)
    qs = [t for _, t in generate(QUERY_SEED, queries + WARMUP, exclude={t for _, t in corpus})]
    out: dict[str, Any] = {"schema": 1, "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "model": embedder.name(), "generator_version": GENERATOR_VERSION, "sizes": sizes,
                           "queries": queries, "top_n": TOP_N, "query_cache": "off", "search": {}}
    with tempfile.TemporaryDirectory(prefix="hindsight-bench-") as tmp:
        for n in sizes:
            stores = [(str(n), str(Path(tmp) / f"store-{n}"))]
            if postgres_url:
                stores.append((f"{n}/postgres", f"{postgres_url}#bench-{n}-{os.getpid()}-{int(time.time())}"))
            for key, store in stores:
                out["search"][key] = _measure(store, n, corpus, matrix, embedder, qs, model, Path(tmp),
                                              show_progress)
                shutil.rmtree(store, ignore_errors=True) if "#" not in store else _drop(store)
            if postgres_url:
                pg = out["search"][f"{n}/postgres"]
                pg["vs_chroma_p50"] = pg["search_ms"]["p50"] / out["search"][str(n)]["search_ms"]["p50"]
        if len(sizes) > 1:
            first, last = out["search"][str(sizes[0])], out["search"][str(sizes[-1])]
            out["growth_p50"] = last["search_ms"]["p50"] / first["search_ms"]["p50"]
            out["growth_raw_p50"] = last["raw_ms"]["p50"] / first["raw_ms"]["p50"]
        single = min(SINGLE_WRITES, write_n)
        eps = [Episode.model_validate(make_episode(WRITE_SEED, j))
               for j, _ in generate(WRITE_SEED, write_n + WRITE_BATCH + single)]
        out["write"] = measure_writes(Path(tmp) / "write", eps[:-single], embedder, singles=eps[-single:])
    out["write"]["episodes"] = write_n
    out["targets"] = targets(out)
    out["all_pass"] = all(t["pass"] for t in out["targets"])
    out["machine"] = _machine()
    return out


def _measure(store: str, n: int, corpus: Sequence[tuple[int, str]], matrix: np.ndarray, embedder: Any,
             qs: Sequence[str], model: str, tmp: Path, show_progress: bool) -> dict[str, Any]:
    """Fill one store with the first ``n`` corpus episodes and search it from a fresh process."""
    t0 = time.perf_counter()
    ids = fill_store(store, corpus[:n], matrix[:n], embedder, show_progress=show_progress)
    fill_s = time.perf_counter() - t0
    spec, result = tmp / "spec.json", tmp / "result.json"
    spec.write_text(json.dumps({"store": store, "model": model, "warmup": list(qs[:WARMUP]),
                                "queries": list(qs[WARMUP:]), "out": str(result)}))
    logger.info("searching the %d-episode store in a fresh process", n)
    subprocess.run([sys.executable, "-m", "hindsight_lab.bench", "--worker", str(spec)], check=True)
    res = json.loads(result.read_text())
    if "#" in store:  # Postgres opens from its saved state: the same open from the records, for comparison
        spec.write_text(json.dumps({"store": store, "model": model, "open_only": True, "out": str(result)}))
        subprocess.run([sys.executable, "-m", "hindsight_lab.bench", "--worker", str(spec)], check=True)
        res["open_rebuild_s"] = json.loads(result.read_text())["open_s"]
    res["recall_at_20"] = recall_at(res.pop("raw_ids"), np.asarray(res.pop("query_vectors")), matrix[:n], ids)
    res["ratio_p50"] = res["search_ms"]["p50"] / res["raw_ms"]["p50"]
    return {"fill_s": fill_s, **res}


def _drop(store: str) -> None:
    """Drop a Postgres namespace the bench made (``URL#namespace``)."""
    import psycopg

    from ..store.pgconn import embedded_folder
    from ..store.pgschema import schema_name

    url, _, namespace = store.partition("#")
    if embedded_folder(url) is not None:
        return  # an embedded folder is the caller's to remove
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema_name(namespace)}" CASCADE')


def targets(out: dict[str, Any]) -> list[dict[str, Any]]:
    """The acceptance targets, each with its value, limit and pass/miss."""
    rows = []
    for n, r in out["search"].items():
        rows += [(f"search p50 / raw p50 @ {n}", r["ratio_p50"], "<=", TARGETS["search_ratio"]),
                 (f"recall@{TOP_N} @ {n}", r["recall_at_20"], ">=", TARGETS["recall"]),
                 (f"peak RSS MB @ {n}", r["peak_rss_mb"], "<=", TARGETS["peak_rss_mb"])]
        if "vs_chroma_p50" in r:
            rows.append((f"search p50 / Chroma's @ {n}", r["vs_chroma_p50"], "<=", TARGETS["search_ratio"]))
            rows.append((f"open s @ {n}", r["open_s"], "<=", TARGETS["open_s"]))
    if "growth_p50" in out:
        rows.append((f"search p50 growth {out['sizes'][0]}->{out['sizes'][-1]}", out["growth_p50"], "<=",
                     TARGETS["growth"]))
    rows.append(("write eps / raw eps", out["write"]["ratio"], ">=", TARGETS["write_ratio"]))
    return [{"name": name, "value": v, "op": op, "limit": lim, "pass": bool(v <= lim if op == "<=" else v >= lim)}
            for name, v, op, lim in rows]


def _machine() -> dict[str, Any]:
    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    return {"cpu_count": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "versions": {d: version(d) for d in ("hindsight-lab", "chromadb", "torch", "sentence-transformers",
                                                 "numpy")}}


def format_table(out: dict[str, Any]) -> str:
    """A readable table of the figures and targets."""
    lines = [f"hindsight-lab bench — {out['model']}, {out['queries']} distinct queries, query cache off, "
             f"{out['machine']['cpu_count']} CPUs", "",
             f"{'size':>14} {'search p50':>11} {'p95':>8} {'raw p50':>9} {'p95':>8} {'ratio':>6} {'recall@20':>10}"
             f" {'peak RSS':>9} {'RSS after':>10} {'open s':>7} {'fill s':>7} {'load 1m':>9}"]
    for n, r in out["search"].items():
        s, w = r["search_ms"], r["raw_ms"]
        lines.append(f"{n:>14} {s['p50']:>9.2f}ms {s['p95']:>6.2f}ms {w['p50']:>7.2f}ms {w['p95']:>6.2f}ms "
                     f"{r['ratio_p50']:>6.2f} {r['recall_at_20']:>10.3f} {r['peak_rss_mb']:>7.0f}MB "
                     f"{r['rss_after_mb']:>8.0f}MB {r['open_s']:>7.1f} {r['fill_s']:>7.1f} "
                     f"{r['load_1m']['before']:>4.1f}/{r['load_1m']['after']:<4.1f}")
    lines += [f"{n}: search p50 {r['vs_chroma_p50']:.2f}x Chroma's, open {r['open_s']:.1f} s from the saved state "
              f"({r['open_rebuild_s']:.1f} s from the records)" for n, r in out["search"].items()
              if "vs_chroma_p50" in r]
    if "growth_p50" in out:
        lines.append(f"p50 growth {out['sizes'][0]}->{out['sizes'][-1]}: search {out['growth_p50']:.2f}x, "
                     f"raw {out['growth_raw_p50']:.2f}x")
    w = out["write"]
    lines += ["", f"write ({w['episodes']} episodes, batches of {w['batch']}, embedding included): hindsight "
              f"{w['hindsight_eps']:.1f} eps/s, raw {w['raw_eps']:.1f} eps/s"]
    if "single" in w:
        one, mine, raw = w["single"], w["single"]["hindsight_ms"], w["single"]["raw_ms"]
        lines.append(f"write one at a time ({one['episodes']} episodes after those, embeddings computed before): "
                     f"hindsight p50 {mine['p50']:.1f} ms, p95 {mine['p95']:.1f} ms; raw p50 {raw['p50']:.1f} ms, "
                     f"p95 {raw['p95']:.1f} ms")
    lines += ["", "targets:"]
    lines += [f"  {'PASS' if t['pass'] else 'MISS'}  {t['name']:<34} {t['value']:>9.3f}  (target {t['op']} "
              f"{t['limit']:g})" for t in out["targets"]]
    return "\n".join(lines)


def worker_main(spec_path: str) -> None:
    """The search process: read the spec JSON, run :func:`search_worker`, write its figures to ``spec["out"]``."""
    spec = json.loads(Path(spec_path).read_text())
    Path(spec["out"]).write_text(json.dumps(search_worker(spec)))
