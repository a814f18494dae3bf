"""``datasets fetch`` against a real HTTP server on 127.0.0.1: a good file, a bad checksum, a connection dropped
mid-file (then resumed), a 404 and no server at all. The file on disk exists only when its split's checksum
matches, and a failed fetch leaves everything else in the home folder as it was.

The served "public file" is a committed sample's items re-serialised with other whitespace plus items of other
tasks, so a fetch also shows that the split rule and the canonical form give back the registered bytes."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from hindsight_lab.cli import main
from hindsight_lab.datasets.fetch import fetch
from hindsight_lab.datasets.registry import DatasetEntry, Source, datasets_home, get, local_path, resolve
from hindsight_lab.errors import DatasetError

SAMPLE = "tau-bench-airline-sample"


class _Server:
    """Serves ``body`` at ``/data.json`` with Range support; ``mode`` ``drop`` closes the connection after
    ``drop_at`` bytes of a full response (Content-Length announces the whole file)."""

    def __init__(self, body: bytes) -> None:
        self.body, self.mode, self.drop_at = body, "ok", len(body) // 2
        self.ranges: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path != "/data.json":
                    self.send_error(404, "Not Found")
                    return
                server.ranges.append(self.headers.get("Range"))
                body, status, start = server.body, 200, 0
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes=") and server.mode == "ok":
                    start = int(rng[len("bytes="):].split("-")[0])
                    if start >= len(body):
                        self.send_error(416, "Range Not Satisfiable")
                        return
                    status = 206
                self.send_response(status)
                self.send_header("Content-Length", str(len(body) - start))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if server.mode == "drop":
                    self.wfile.write(body[:server.drop_at])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(body[start:])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/data.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _public_file() -> bytes:
    """The sample's tasks plus two tasks the split leaves out, indented (not the canonical form)."""
    items = json.loads(local_path(get(SAMPLE)).read_bytes())  # type: ignore[union-attr]
    extra = [dict(items[0], task_id=99), dict(items[1], task_id=98)]
    return json.dumps(extra[:1] + items + extra[1:], indent=1).encode()


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(_public_file())
    yield srv
    srv.close()


@pytest.fixture
def entry(server: _Server) -> DatasetEntry:
    """The sample's entry as if it were a development split published at the local server."""
    sample = get(SAMPLE)
    return replace(sample, name="local-test-dev", sample_of=None,
                   source=Source("local/test", "data.json", "0" * 40, "MIT"))


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _bystander(home: Path) -> dict[str, str]:
    """Files that a fetch must never touch: another dataset and a replay store."""
    other = home / "datasets" / "locomo" / "locomo10.dev.json"
    other.parent.mkdir(parents=True)
    other.write_text('[{"sample_id": "kept"}]')
    store = home / "store" / "chroma.sqlite3"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"store bytes that must not change")
    return _snapshot(home)


def test_good_checksum_writes_the_split_atomically(server: _Server, entry: DatasetEntry) -> None:
    done = fetch(entry, url=server.url)
    assert done.action == "fetched" and done.path == datasets_home() / entry.filename
    assert done.path.read_bytes() == local_path(get(SAMPLE)).read_bytes()  # type: ignore[union-attr]
    assert hashlib.sha256(done.path.read_bytes()).hexdigest() == entry.sha256
    assert [p.name for p in done.path.parent.iterdir()] == [done.path.name]  # no part or temporary file left
    again = fetch(entry, url=server.url)
    assert again.action == "present" and len(server.ranges) == 1  # verified on disk, not downloaded again


def test_bad_checksum_writes_nothing(server: _Server, entry: DatasetEntry, _own_home: Path) -> None:
    before = _bystander(_own_home)
    items = json.loads(server.body)
    items[2]["reward"] = 0.5  # one value of a kept task differs from the registered split
    server.body = json.dumps(items).encode()
    with pytest.raises(DatasetError, match="checksum mismatch.*expected " + entry.sha256):
        fetch(entry, url=server.url)
    dest = datasets_home() / entry.filename
    assert not dest.exists() and not list(dest.parent.glob("*.part"))
    assert _snapshot(_own_home) == before


def test_dropped_connection_keeps_nothing_then_resumes(server: _Server, entry: DatasetEntry,
                                                       _own_home: Path) -> None:
    before = _bystander(_own_home)
    server.mode = "drop"
    with pytest.raises(DatasetError, match=r"interrupted after [\d,]+ of [\d,]+ bytes.*run the same command again"):
        fetch(entry, url=server.url)
    dest = datasets_home() / entry.filename
    part = dest.with_name(dest.name + ".source.part")
    assert not dest.exists() and part.stat().st_size == server.drop_at
    assert {k: v for k, v in _snapshot(_own_home).items() if not k.endswith(".part")} == before

    server.mode = "ok"
    done = fetch(entry, url=server.url)
    assert server.ranges[-1] == f"bytes={server.drop_at}-" and done.resumed_at == server.drop_at
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == entry.sha256 and not part.exists()


def test_server_that_ignores_ranges_restarts_the_download(server: _Server, entry: DatasetEntry) -> None:
    # Regression guard for the resume path: a 200 answer to a Range request is the whole file, not the rest.
    dest = datasets_home() / entry.filename
    dest.parent.mkdir(parents=True)
    dest.with_name(dest.name + ".source.part").write_bytes(server.body[:100])
    server.mode = "no-range"
    done = fetch(entry, url=server.url)
    assert done.resumed_at == 0 and hashlib.sha256(dest.read_bytes()).hexdigest() == entry.sha256


def test_404_and_no_server(server: _Server, entry: DatasetEntry, _own_home: Path) -> None:
    before = _bystander(_own_home)
    with pytest.raises(DatasetError, match=r"cannot download http://127.0.0.1:\d+/missing\.json: HTTP 404"):
        fetch(entry, url=server.url.replace("data.json", "missing.json"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/data.json"
    with pytest.raises(DatasetError, match="cannot reach .*no network"):
        fetch(entry, url=closed, timeout_s=5)
    assert not (datasets_home() / entry.filename).exists()
    assert {k: v for k, v in _snapshot(_own_home).items()} == before


def test_from_dir_verifies_the_local_copy(tmp_path: Path, entry: DatasetEntry) -> None:
    copy = tmp_path / "mirror" / "data.json"
    copy.parent.mkdir()
    copy.write_bytes(_public_file())
    assert fetch(entry, from_dir=copy.parent).action == "fetched"
    copy.write_bytes(copy.read_bytes().replace(b'"reward": 1.0', b'"reward": 0.0', 1))
    with pytest.raises(DatasetError, match="checksum mismatch"):
        fetch(entry, from_dir=copy.parent, force=True)
    assert hashlib.sha256((datasets_home() / entry.filename).read_bytes()).hexdigest() == entry.sha256


def test_names_resolve_and_unknown_names_say_what_to_do() -> None:
    assert resolve(SAMPLE) == [local_path(get(SAMPLE))]
    assert [p.name for p in resolve("tau2-telecom-cross-sample")] == ["telecom_gpt-4.1.sample.json",
                                                                      "telecom_sft-gpt-4.1.sample.json"]
    with pytest.raises(DatasetError, match="not on this machine; fetch it with `hindsight-lab datasets fetch "
                                           "tau-bench-airline-dev`"):
        resolve("tau-bench-airline-dev")
    with pytest.raises(DatasetError, match="did you mean tau-bench-airline-sample"):
        resolve("tau-bench-airline-sampel")
    with pytest.raises(DatasetError, match="no-such.jsonl: no such trace file"):
        resolve("no-such.jsonl")


def test_every_sample_matches_its_registry_entry() -> None:
    from hindsight_lab.datasets.registry import entries

    samples = [e for e in entries().values() if e.is_sample]
    assert len(samples) >= 5
    for e in samples:
        data = local_path(e).read_bytes()  # type: ignore[union-attr]
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (e.sha256, e.size), e.name
        # a sample is its own split: the rule keeps all of it, in the canonical form
        assert e.split.derive(data) == data, e.name


def test_cli_list_fetch_path(server: _Server, entry: DatasetEntry, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("tau-bench-airline-dev", "tau2-telecom-cross-dev", "locomo-sample", "CC BY-NC 4.0"):
        assert name in out
    assert main(["datasets", "path", "tau-bench-airline-dev"]) == 2
    assert "hindsight-lab datasets fetch tau-bench-airline-dev" in capsys.readouterr().err
    monkeypatch.setattr("hindsight_lab.datasets.registry.entries", lambda: {entry.name: entry})
    assert main(["datasets", "fetch", entry.name, "--url", server.url]) == 0
    assert "local-test-dev: fetched" in capsys.readouterr().out
    assert main(["datasets", "path", entry.name]) == 0
    assert capsys.readouterr().out.strip() == str(datasets_home() / entry.filename)
