"""Filtered vector search on pgvector: does a search restricted to one bucket (or one domain) still return its k
nearest records, and at what cost? The measurement behind the Postgres store's layout (one table and HNSW index per
bucket, store/pgschema.py).

Corpus: the benchmark's synthetic instructions (hindsight_lab.bench, clustered like real text) embedded with the
packaged MiniLM, cached under HINDSIGHT_LAB_HOME like the benchmark's; each record gets a bucket at random (rules 2 %,
candidates 8 %, episodes the rest) and its template's domain. Queries: held-out instructions. For each filter and
layout: mean results returned for k asked, recall@k against an exact scan of the filtered records, p50 / p95 ms.

Layouts:
  one-index/off         one table, one HNSW index, WHERE filter, hnsw.iterative_scan = off (pgvector < 0.8 behaviour)
  one-index/strict      the same with iterative_scan = strict_order
  one-index/relaxed     the same with iterative_scan = relaxed_order (re-sorted in an outer query)
  partial-index         one table, one partial HNSW index per bucket (WHERE bucket = '...'), no other index
  table-per-bucket      one table and HNSW index per bucket, no filter at all (the store's layout)

    python experiments/postgres/filtered_search.py --url postgresql://... [--n 20000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import re
import time

import numpy as np


def _corpus(n: int, queries: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    from hindsight_lab import bench
    from hindsight_lab.embed import SentenceTransformerEmbedder

    drawn = bench.generate(bench.CORPUS_SEED, n + queries)
    emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    matrix = bench.corpus_embeddings([t for _, t in drawn[:n]], emb, bench.home() / "bench" / "cache")
    q = emb.embed([t for _, t in drawn[n:]])
    domains = [bench._TEMPLATES[bench._draw(bench.CORPUS_SEED, j)[1]][0] for j, _ in drawn[:n]]
    return np.asarray(matrix, dtype=np.float32), np.asarray(q, dtype=np.float32), domains


def _load(conn, matrix: np.ndarray, buckets: list[str], domains: list[str]) -> None:
    conn.execute("DROP SCHEMA IF EXISTS filtered_search CASCADE")
    conn.execute("CREATE SCHEMA filtered_search")
    conn.execute("CREATE TABLE filtered_search.one (id int PRIMARY KEY, bucket text, domain text, e vector(384))")
    with conn.cursor().copy("COPY filtered_search.one FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "text", "text", "vector"])
        for i, (b, d) in enumerate(zip(buckets, domains)):
            copy.write_row((i, b, d, matrix[i]))
    conn.execute("CREATE INDEX one_hnsw ON filtered_search.one USING hnsw (e vector_cosine_ops) "
                 "WITH (m = 16, ef_construction = 200)")
    conn.execute("CREATE TABLE filtered_search.part AS SELECT * FROM filtered_search.one")
    for b in sorted(set(buckets)):
        conn.execute(f"CREATE INDEX part_{b}_hnsw ON filtered_search.part USING hnsw (e vector_cosine_ops) "
                     f"WITH (m = 16, ef_construction = 200) WHERE bucket = '{b}'")
        conn.execute(f"CREATE TABLE filtered_search.t_{b} AS SELECT id, domain, e FROM filtered_search.one "
                     f"WHERE bucket = '{b}'")
        conn.execute(f"CREATE INDEX t_{b}_hnsw ON filtered_search.t_{b} USING hnsw (e vector_cosine_ops) "
                     "WITH (m = 16, ef_construction = 200)")
    conn.execute("ANALYZE")
    conn.commit()


def _sql(layout: str, column: str, value: str) -> str:
    if layout == "table-per-bucket":  # only a bucket filter has a table of its own
        return f"SELECT id FROM filtered_search.t_{value} ORDER BY e <=> %b LIMIT %s"
    table = "part" if layout == "partial-index" else "one"
    inner = f"SELECT id, e <=> %b AS d FROM filtered_search.{table} WHERE {column} = '{value}' ORDER BY d LIMIT %s"
    if layout == "one-index/relaxed":  # relaxed order: pgvector's advice is to re-sort in an outer query
        return f"WITH r AS MATERIALIZED ({inner}) SELECT id FROM r ORDER BY d"
    return inner.replace("id, e <=> %b AS d", "id").replace("ORDER BY d", "ORDER BY e <=> %b")


def measure(url: str, n: int, queries: int, k: int, ef_search: int) -> list[dict]:
    import psycopg
    from pgvector.psycopg import register_vector

    matrix, q, domains = _corpus(n, queries)
    rng = np.random.default_rng(0)
    buckets = list(rng.choice(["rule", "candidate", "episode"], size=n, p=[0.02, 0.08, 0.90]))
    rows = []
    with psycopg.connect(url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        _load(conn, matrix, buckets, domains)
        conn.execute(f"SET hnsw.ef_search = {ef_search}")
        share = {("bucket", b): float(np.mean([x == b for x in buckets])) for b in ("rule", "candidate", "episode")}
        share[("domain", "crm")] = float(np.mean([d == "crm" for d in domains]))
        for (column, value), frac in share.items():
            mask = np.array([x == value for x in (buckets if column == "bucket" else domains)])
            ids = np.flatnonzero(mask)
            exact = [set(ids[np.argsort(-(matrix[ids] @ qv))[:k]]) for qv in q]
            layouts = ["one-index/off", "one-index/strict", "one-index/relaxed"]
            layouts += ["partial-index", "table-per-bucket"] if column == "bucket" else []
            for layout in layouts:
                mode = {"one-index/strict": "strict_order", "one-index/relaxed": "relaxed_order"}.get(layout, "off")
                conn.execute(f"SET hnsw.iterative_scan = {mode}")
                statement = _sql(layout, column, value)
                plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + statement, (q[0],) * statement.count(
                    "%b") + (k,)).fetchall())
                used = re.search(r"Index Scan using (\w+)", plan)
                got, ms = [], []
                for qv in q:
                    t0 = time.perf_counter()
                    got.append([r[0] for r in conn.execute(statement, (qv,) * statement.count("%b") + (k,))])
                    ms.append((time.perf_counter() - t0) * 1000)
                rows.append({"filter": f"{column} = {value} ({frac:.1%})", "layout": layout,
                             "index": used[1] if used else "none (exact scan)",
                             "returned": float(np.mean([len(g) for g in got])),
                             "recall@k": float(np.mean([len(set(g) & e) / k for g, e in zip(got, exact)])),
                             "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95))})
        conn.execute("DROP SCHEMA filtered_search CASCADE")
        conn.commit()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL database with pgvector 0.8 or newer")
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--ef-search", type=int, default=100)
    args = parser.parse_args()
    import pandas as pd

    rows = measure(args.url, args.n, args.queries, args.k, args.ef_search)
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
