"""Memory management: export → import (embedded, a `chroma run` server and Postgres, same model or another one; a
store moved from Chroma to Postgres and back), malformed imports that change nothing, list / show / delete, and
inspect — on real Chroma (and Postgres) with the real MiniLM."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from hindsight_lab import Kind, LabConfig, MemoryNotFound, MemorySystem, TraceFormatError, ValidationError
from hindsight_lab.cli import main
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.memory.export import export_jsonl, import_jsonl, read_export
from hindsight_lab.memory.listing import inspect, list_frame
from support import T0, episode

QUERIES = ["Cancel my reservation to Denver", "I was charged twice for the upgrade", "change the seat on my flight",
           "refund the cancelled trip"]


def _open(path_or_url: str, embedder, namespace: str = "default") -> MemorySystem:
    where = {"store.url": path_or_url} if "://" in path_or_url else {"store.path": path_or_url}
    cfg = LabConfig().with_params({**where, "store.namespace": namespace, "retrieval.track_retrievals": False})
    return MemorySystem(cfg, embedder=embedder).open()


@pytest.fixture(scope="module")
def source(tmp_path_factory, minilm) -> tuple[Path, Path]:
    """A store with episodes, candidates, an L3 rule, archived records, flagged and superseded rules, feedback and
    retrieval history; and its export."""
    root = tmp_path_factory.mktemp("manage")
    cfg = LabConfig().with_params({"store.path": str(root / "src")})
    with MemorySystem(cfg, embedder=minilm) as mem:
        eps = [episode(f"e{i}", text, tools, outcome=out, task_id=f"t{i % 3}", started_at=(T0 + timedelta(hours=i))
                       .isoformat())
               for i, (text, tools, out) in enumerate([
                   ("Cancel my reservation to Denver", ["get_reservation_details", "cancel_reservation"], "success"),
                   ("Please cancel the trip to Boston", ["cancel_reservation"], "failure"),
                   ("I was charged twice for the seat upgrade", ["get_user_details", "refund_payment"], "success"),
                   ("Move my flight to Friday", ["search_direct_flight", "update_reservation_flights"], "success")])]
        mem.write_episodes(eps)
        for i in range(3):
            mem.write("Call get_reservation_details before cancel_reservation.", task_type="cancel_reservation",
                      confidence=0.9, counter_examples=["basic economy"], source_episode_ids=[f"e{i}"],
                      trigger={"any": ["cancel"]}, now=T0 + timedelta(days=1))
        mem.write("Call cancel_reservation first, then get_reservation_details.", task_type="cancel_reservation",
                  confidence=0.6, source_episode_ids=["e1"], now=T0)
        mem.write("Refund duplicate charges to the original card.", task_type="refund_payment", confidence=0.7,
                  source_episode_ids=["e2"], now=T0 + timedelta(days=1))
        mem.write("Refund duplicate charges as a voucher, not to the original card.", task_type="refund_payment",
                  confidence=0.7,
                  source_episode_ids=["e2"], now=T0 + timedelta(days=1))
        rule = mem.records(Kind.RULE)[0]
        res = mem.search("cancel my booking", task_id="t-q", now=T0 + timedelta(days=2))
        assert rule.id in res.ids  # its trigger guarantees it a place
        mem.record_outcome([rule.id], "success", task_id="t-q", now=T0 + timedelta(days=2))
        mem.feedback(rule.id, "up", "worked", now=T0 + timedelta(days=2))
        report = mem.maintain(T0 + timedelta(days=3))
        assert report.superseded  # the old order is archived with its successor
        old = mem.write_episode(episode("e-old", "Where is my luggage", ["get_bag_status"]),
                                now=T0 - timedelta(days=40))
        mem.maintain(T0 + timedelta(days=3))
        assert mem.get(old.id).archived
    path = root / "export.jsonl"
    with _open(str(root / "src"), minilm) as mem:
        assert export_jsonl(mem, path) == len(read_export(path))
    return root / "src", path


def _lines(path: Path) -> list[str]:
    return sorted(path.read_text(encoding="utf-8").splitlines())


def _same_records(a: Path, b: Path) -> None:
    """Every record and field equal; vectors equal up to float32 rounding (Chroma's cosine index stores the
    vector it was given re-normalised, which can move the last bit)."""
    rows_a, rows_b = ({r.id: (r, e) for r, e, _ in read_export(p)} for p in (a, b))
    assert rows_a.keys() == rows_b.keys()
    for rid, (rec, emb) in rows_a.items():
        other, other_emb = rows_b[rid]
        assert other == rec, rid
        assert np.allclose(emb, other_emb, rtol=0, atol=1e-6), rid


def _results(mem: MemorySystem) -> list[list[tuple[str, float]]]:
    return [[(h.id, round(h.scores.total, 5)) for h in mem.search(q, now=T0 + timedelta(days=4)).hits]
            for q in QUERIES]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["embedded", pytest.param("server", marks=pytest.mark.server),
                                     pytest.param("postgres", marks=pytest.mark.postgres)])
def test_export_import_reproduces_every_record_and_the_same_search(source, tmp_path, minilm, backend, request):
    src, exported = source
    target = (request.getfixturevalue("chroma_server") if backend == "server"
              else request.getfixturevalue("postgres_url") if backend == "postgres" else str(tmp_path / "dst"))
    ns = "imp" + uuid.uuid4().hex[:8]
    with _open(target, minilm, ns) as dst:
        done = import_jsonl(dst, exported)
        assert done["imported"] == done["kept_vectors"] == len(_lines(exported)) and done["reembedded"] == 0
    with _open(target, minilm, ns) as dst, _open(str(src), minilm) as orig:  # reopened: indexes rebuilt
        again = tmp_path / "again.jsonl"
        export_jsonl(dst, again)
        _same_records(again, exported)  # every record, field and vector, archived ones included
        assert dst.stats()["archived"] == orig.stats()["archived"] >= 2
        assert _results(dst) == _results(orig)
        flagged = [r for r in dst.records() if r.attrs.get("conflicts_with")]
        superseded = [r for r in dst.records(archived=True) if r.attrs.get("superseded_by")]
        assert flagged and superseded


@pytest.mark.slow
@pytest.mark.postgres
def test_a_store_moves_from_chroma_to_postgres_and_back_unchanged(source, tmp_path, minilm, postgres_url):
    src, exported = source
    ns = "mv" + uuid.uuid4().hex[:8]
    with _open(postgres_url, minilm, ns) as pg:
        import_jsonl(pg, exported)
        from_pg = tmp_path / "from-postgres.jsonl"
        export_jsonl(pg, from_pg)
        pg_results = _results(pg)
    assert from_pg.read_bytes() == exported.read_bytes()  # Postgres gives back exactly what Chroma exported
    with _open(str(tmp_path / "back"), minilm) as back, _open(str(src), minilm) as orig:
        import_jsonl(back, from_pg)
        again = tmp_path / "back.jsonl"
        export_jsonl(back, again)
        _same_records(again, exported)
        assert _results(back) == _results(orig) == pg_results


def test_import_into_another_model_re_embeds(source, tmp_path):
    _, exported = source
    with _open(str(tmp_path / "hash"), HashingEmbedder(dim=64)) as dst:
        done = import_jsonl(dst, exported)
        assert done["reembedded"] == done["imported"] and done["kept_vectors"] == 0
        assert {r.embedding_model for r in dst.records()} == {"hashing-64"}
        assert dst.search("cancel my reservation").hits
        again = tmp_path / "hash.jsonl"
        export_jsonl(dst, again)
        assert json.loads(again.read_text().splitlines()[0])["embedding"]["dim"] == 64


def _corrupt(exported: Path, tmp_path: Path, line: int, change) -> Path:
    rows = exported.read_text(encoding="utf-8").splitlines()
    rows[line - 1] = change(rows[line - 1])
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return bad


def _patch(**fields):
    return lambda line: json.dumps({**json.loads(line), **fields})


@pytest.mark.parametrize("line, change, match", [
    (3, lambda s: s[:-5], r"bad.jsonl:3: invalid JSON"),
    (2, _patch(confidence=1.5), r"bad.jsonl:2: .*less than or equal to 1.*\(field 'confidence'\)"),
    (4, _patch(kind="fact"), r"bad.jsonl:4: .*\(field 'kind'\)"),
    (5, _patch(created_at="yesterday"), r"bad.jsonl:5: .*\(field 'created_at'\)"),
    (2, _patch(colour="red"), r"bad.jsonl:2: unknown field .*\(field 'colour'\)"),
    (3, _patch(embedding={"dtype": "float32", "dim": 384, "b64": "!!"}), r"bad.jsonl:3: not valid base64"),
    (3, _patch(embedding={"dtype": "float32", "dim": 3, "b64": "A" * 22 + "=="}), r"bad.jsonl:3: 16 bytes"),
    (6, _patch(id="placeholder"), None),  # duplicate id: set below
])
def test_a_malformed_import_names_file_line_field_and_changes_nothing(source, tmp_path, minilm, line, change, match):
    _, exported = source
    if match is None:
        first = json.loads(exported.read_text().splitlines()[0])["id"]
        change, match = _patch(id=first), rf"bad.jsonl:6: duplicate id '{first}' \(first on line 1\)"
    bad = _corrupt(exported, tmp_path, line, change)
    with _open(str(tmp_path / "dst"), minilm) as dst:
        dst.write("A rule that was here before the import.", now=T0)
        before = dst.stats()
        with pytest.raises(TraceFormatError, match=match):
            import_jsonl(dst, bad)
        assert dst.stats() == before


def test_wrong_dimension_for_the_same_model_and_existing_ids(source, tmp_path, minilm):
    _, exported = source
    bad = _corrupt(exported, tmp_path, 1, _patch(embedding={"dtype": "float32", "dim": 2, "b64": "AAAAAAAAAAA="}))
    with _open(str(tmp_path / "dst"), minilm) as dst:
        with pytest.raises(ValidationError, match=r"bad.jsonl:1: embedding has 2 dimensions.*nothing was written"):
            import_jsonl(dst, bad)
        assert dst.stats()["episodes"] == 0
        import_jsonl(dst, exported)
        n = sum(dst.stats()[k] for k in ("episodes", "candidates", "rules", "archived"))
        with pytest.raises(ValidationError, match="already holds"):
            import_jsonl(dst, exported)
        assert import_jsonl(dst, exported, on_existing="skip")["skipped"] == n
        assert import_jsonl(dst, exported, on_existing="replace")["replaced"] == n
        assert sum(dst.stats()[k] for k in ("episodes", "candidates", "rules", "archived")) == n


def test_list_filters_and_inspect(source, minilm):
    src, _ = source
    with _open(str(src), minilm) as mem:
        rules = list_frame(mem, layer="L3")
        assert len(rules) >= 1 and set(rules["kind"]) == {"rule"}
        assert set(list_frame(mem, kind="episode")["layer"]) == {"L2"}
        assert set(list_frame(mem, task_type="refund_payment")["task_type"]) == {"refund_payment"}
        archived = list_frame(mem, archived="archived")
        assert len(archived) >= 2 and archived["archived"].all()
        assert len(list_frame(mem, archived="all")) == len(list_frame(mem)) + len(archived)
        with pytest.raises(ValidationError, match="layer: expected L2 or L3"):
            list_frame(mem, layer="L1")
        rule = mem.records(Kind.RULE)[0]
        info = inspect(mem, rule.id)
        assert [p["episode_id"] for p in info["provenance"]] == ["e0", "e1", "e2"]
        assert info["provenance"][1]["outcome"] == "failure" and info["provenance"][0]["instruction"]
        assert info["retrievals"] and info["retrievals"][0]["task_id"] == "t-q"
        assert info["outcomes"] and info["outcomes"][0]["outcome"] == "success"
        assert info["feedback"]["ups"] == 1 and info["feedback"]["notes"] == ["up: worked"]
        assert info["conflicts"]["supersedes"]
        old = mem.get(info["conflicts"]["supersedes"][0])
        chain = inspect(mem, old.id)["conflicts"]
        assert chain["superseded_by"] == rule.id and chain["successor_chain"][0]["state"] == "active"
        with pytest.raises(MemoryNotFound, match="no memory with id 'rule-nope'"):
            inspect(mem, "rule-nope")


def test_cli_memories_and_inspect(source, tmp_path, capsys):
    src, exported = source
    store = tmp_path / "cli"
    assert main(["memories", "import", str(exported), "--store", str(store)]) == 0
    assert "kept their vectors, 0 re-embedded" in capsys.readouterr().out
    assert main(["memories", "list", "--store", str(store), "--kind", "rule"]) == 0
    out = capsys.readouterr().out
    rule_id = next(line.split()[0] for line in out.splitlines() if line.startswith("rule-"))
    assert main(["memories", "show", rule_id, "--store", str(store)]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == rule_id
    assert main(["inspect", rule_id, "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "provenance (3 episode(s))" in out and "supersedes" in out and "feedback: 1 up" in out
    assert main(["memories", "delete", rule_id, "rule-nope", "--store", str(store)]) == 2
    assert "rule-nope" in capsys.readouterr().err  # nothing deleted when one id is unknown
    assert main(["memories", "delete", rule_id, "--store", str(store)]) == 0
    assert main(["memories", "show", rule_id, "--store", str(store)]) == 2
    out_file = tmp_path / "e.jsonl"
    assert main(["memories", "export", str(out_file), "--store", str(store), "--no-archived"]) == 0
    assert all(not json.loads(x)["archived"] for x in out_file.read_text().splitlines())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    assert main(["memories", "import", str(bad), "--store", str(tmp_path / "fresh")]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1: Field required" in err and "(field 'kind')" in err
    assert not (tmp_path / "fresh").exists()  # the target was not even created
    assert main(["memories", "list", "--store", str(tmp_path / "nowhere")]) == 2
