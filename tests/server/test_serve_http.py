"""``hindsight-lab serve --transport http``: one server process per backend (an embedded store, a store on the
session's ``chroma run`` server, and one on the session's Postgres), loading the exported config file unchanged, with the real MiniLM; the official MCP
client over streamable HTTP."""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
import uuid
from typing import Any, Iterator

import anyio
import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.scenarios.demo import DEMO_QUERY, DEMO_REFUND_QUERY, run_demo
from hindsight_lab.server.config import load_served
from hindsight_lab.server.process import ServeProcess, get_health, http_client
from support import REPO

# The config the server loads: the sweep's export for tau-bench airline, unchanged.
SERVED_CONFIG = REPO / "experiments" / "tuned" / "tau-bench-airline.yaml"

QUERIES = [DEMO_QUERY, DEMO_REFUND_QUERY, "Summarise the North China sales report by product line",
           "A customer complains that a parcel arrived late"]


@pytest.fixture(scope="module", params=["embedded", pytest.param("server", marks=pytest.mark.server),
                                        pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, minilm: Any
           ) -> Iterator[dict[str, Any]]:
    """A store filled in-process (the demo story) and searched in-process, then a server on it."""
    tmp = tmp_path_factory.mktemp("served")
    store = (request.getfixturevalue("chroma_server") if request.param == "server"
             else request.getfixturevalue("postgres_url") if request.param == "postgres" else str(tmp / "store"))
    ranked_ns = "r" + uuid.uuid4().hex[:10]
    cfg = LabConfig.from_yaml(SERVED_CONFIG)
    where = {"store.path": store} if request.param == "embedded" else {"store.url": store}
    expected, other_weights = {}, {}
    first_design = LabConfig.from_yaml(REPO / "experiments" / "configs" / "first-design-weights.yaml")
    with MemorySystem(cfg.with_params({**where, "store.namespace": ranked_ns}), embedder=minilm) as mem:
        run_demo(mem)
        for q in QUERIES:
            res = mem.search(q)
            expected[q] = {"ids": res.ids, "totals": [h.scores.total for h in res.hits],
                           "injection": res.injection.text}
    with MemorySystem(first_design.with_params({**where, "store.namespace": ranked_ns}), embedder=minilm) as mem:
        other_weights = {q: mem.search(q).ids for q in QUERIES}
    srv = ServeProcess(SERVED_CONFIG, store, log=tmp / "server.log").start()
    try:
        yield {"srv": srv, "backend": request.param, "ranked_ns": ranked_ns, "expected": expected,
               "other_weights": other_weights, "config": cfg, "settings": load_served(SERVED_CONFIG)[1]}
    finally:
        code = srv.stop()
        assert code == 0, f"server exit code {code}; log:\n{srv.log_tail()}"


@pytest.mark.slow
def test_health_endpoint(served: dict[str, Any]) -> None:
    health = get_health(served["srv"].base_url)
    assert health["status"] == "ok" and health["service"] == "hindsight-lab"
    assert health["store"] == {"server": "chroma-server", "postgres": "postgres"}.get(served["backend"], "embedded")
    assert "default" in health["namespaces"] and health["maintenance"]["interval_s"] == 3600.0
    # the MCP endpoint is not the health endpoint: a GET without an MCP session is refused
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(served["srv"].url, timeout=5)


@pytest.mark.slow
def test_served_search_ranks_like_the_library_in_process(served: dict[str, Any], helpers: Any) -> None:
    ns = served["ranked_ns"]

    async def searches() -> dict[str, dict[str, Any]]:
        async with http_client(served["srv"].url) as client:
            return {q: helpers.ok(await client.call_tool("hindsight_memory_search", {"query": q, "namespace": ns}))
                    for q in QUERIES}

    got = anyio.run(searches)
    kinds = set()
    for q in QUERIES:
        want = served["expected"][q]
        assert helpers.ids(got[q]) == want["ids"], q
        assert [h["scores"]["total"] for h in got[q]["hits"]] == pytest.approx(want["totals"], abs=1e-6), q
        assert got[q]["injection"]["text"] == want["injection"], q
        kinds |= {h["record"]["kind"] for h in got[q]["hits"]}
    # a meaningful comparison: several hits per query, rules and episodes alike, and an order that another
    # config's weights would change (negative control: the first design's weights rank these queries differently)
    assert all(len(served["expected"][q]["ids"]) >= 3 for q in QUERIES)
    assert {"rule", "episode"} <= kinds
    assert any(served["other_weights"][q] != served["expected"][q]["ids"] for q in QUERIES)


@pytest.mark.slow
def test_every_tool_two_namespaces_and_bad_inputs(served: dict[str, Any], helpers: Any) -> None:
    async def session() -> None:
        async with http_client(served["srv"].url) as client:
            await helpers.exercise_tools(client, "hindsight_", helpers.namespace(), helpers.namespace(),
                                         served["settings"].max_content_chars)

    anyio.run(session)
    assert served["srv"].proc.poll() is None, "the server is still up"


@pytest.mark.slow
def test_oversize_request_body_is_refused(served: dict[str, Any]) -> None:
    # the declared size is enough: the server answers 413 before reading a byte of the body
    limit = served["settings"].max_request_bytes
    conn = http.client.HTTPConnection("127.0.0.1", served["srv"].port, timeout=10)
    try:
        conn.putrequest("POST", "/mcp")
        for key, value in (("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"),
                           ("Content-Length", str(limit + 1))):
            conn.putheader(key, value)
        conn.endheaders()
        assert conn.getresponse().status == 413
    finally:
        conn.close()
    assert get_health(served["srv"].base_url)["status"] == "ok"  # and the server is still up
