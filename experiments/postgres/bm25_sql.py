"""BM25 served by Postgres versus the in-process index: do they rank alike, and what does each cost?

The groundwork of issue 20, item 2 (recall served by the database). The corpus is the benchmark's synthetic
instructions (hindsight_lab.bench); the in-process side is hindsight_lab.retrieve.lexical.LexicalIndex; the SQL side
keeps the same statistics in tables a store would maintain on every write (postings ``(term, slot, tf)``, document
lengths, document frequencies, N and the total length) and scores with Lucene's BM25 in one query. Tokens come from
the same tokenizer in both. Reports the top-k overlap, the largest difference between the two sides' i-th scores,
the records one side ranks in its top k above the k-th score that the other leaves out (0: the same ranking up to
ties, which the templated corpus has many of and which float sums in another order break otherwise), and p50 / p95
ms of each side.

    python experiments/postgres/bm25_sql.py --url postgresql://... [--n 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np

_SCORE = """
WITH q AS (SELECT t.term, t.df FROM bm25.terms t WHERE t.term = ANY(%(terms)s)),
     s AS (SELECT n, total::float8 / n AS avgdl FROM bm25.stats)
SELECT p.slot, sum(ln(1 + (s.n - q.df + 0.5) / (q.df + 0.5))
                   * p.tf / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * d.len / s.avgdl))) AS score
FROM bm25.postings p JOIN q ON q.term = p.term JOIN bm25.docs d ON d.slot = p.slot CROSS JOIN s
GROUP BY p.slot ORDER BY score DESC, p.slot LIMIT %(k)s
"""


def _load(conn, texts: list[str]) -> None:
    from hindsight_lab.retrieve.lexical import tokenize

    conn.execute("DROP SCHEMA IF EXISTS bm25 CASCADE")
    conn.execute("CREATE SCHEMA bm25")
    conn.execute("CREATE TABLE bm25.docs (slot integer PRIMARY KEY, len integer NOT NULL)")
    conn.execute("CREATE TABLE bm25.postings (term text NOT NULL, slot integer NOT NULL, tf real NOT NULL)")
    df: Counter = Counter()
    bags = [Counter(tokenize(text)) for text in texts]
    with conn.cursor().copy("COPY bm25.docs FROM STDIN") as docs:  # one COPY at a time on a connection
        for slot, terms in enumerate(bags):
            docs.write_row((slot, sum(terms.values())))
    with conn.cursor().copy("COPY bm25.postings FROM STDIN") as postings:
        for slot, terms in enumerate(bags):
            for term, tf in terms.items():
                postings.write_row((term, slot, tf))
                df[term] += 1
    conn.execute("CREATE INDEX ON bm25.postings (term) INCLUDE (slot, tf)")
    conn.execute("CREATE TABLE bm25.terms (term text PRIMARY KEY, df integer NOT NULL)")
    with conn.cursor().copy("COPY bm25.terms FROM STDIN") as copy:
        for term, n in df.items():
            copy.write_row((term, n))
    conn.execute("CREATE TABLE bm25.stats AS SELECT count(*) AS n, sum(len) AS total FROM bm25.docs")
    conn.execute("ANALYZE")
    conn.commit()


def measure(url: str, n: int, queries: int, k: int) -> dict:
    import psycopg

    from hindsight_lab import bench
    from hindsight_lab.retrieve.lexical import LexicalIndex, tokenize

    drawn = [t for _, t in bench.generate(bench.CORPUS_SEED, n + queries)]
    texts, qs = drawn[:n], drawn[n:]
    idx = LexicalIndex()
    t0 = time.perf_counter()
    for slot, text in enumerate(texts):
        idx.add(str(slot), text, "episode")
    build_s = time.perf_counter() - t0
    out: dict = {"n": n, "queries": queries, "k": k, "in_process_build_s": build_s}
    with psycopg.connect(url) as conn:
        t0 = time.perf_counter()
        _load(conn, texts)
        out["sql_load_s"] = time.perf_counter() - t0
        out["postings"] = conn.execute("SELECT count(*) FROM bm25.postings").fetchone()[0]
        out["sql_mb"] = conn.execute("SELECT pg_total_relation_size('bm25.postings') + pg_total_relation_size("
                                     "'bm25.docs') + pg_total_relation_size('bm25.terms')").fetchone()[0] / 2 ** 20
        overlap, score_diff, same_order, misses, ms_mem, ms_sql = [], [], [], [], [], []
        for query in qs:
            t0 = time.perf_counter()
            scores = idx.scores(query)
            mine = [(int(rid), float(scores[int(rid)])) for rid, _ in idx.top(scores, k)]
            ms_mem.append((time.perf_counter() - t0) * 1000)
            terms = list(dict.fromkeys(tokenize(query)))
            t0 = time.perf_counter()
            theirs = [(slot, float(score)) for slot, score in conn.execute(
                _SCORE, {"terms": terms, "k": k, "k1": idx.k1, "b": idx.b}).fetchall()]
            ms_sql.append((time.perf_counter() - t0) * 1000)
            if not mine:
                continue
            overlap.append(len({s for s, _ in mine} & {s for s, _ in theirs}) / len(mine))
            same_order.append([s for s, _ in mine] == [s for s, _ in theirs])
            # the same ranking up to ties: the k scores agree, and a record only one side has scores as the k-th
            score_diff.append(float(np.max(np.abs(np.array([v for _, v in mine]) - [v for _, v in theirs]))))
            kth = mine[-1][1]
            misses.append(sum(1 for s, v in mine if s not in dict(theirs) and v > kth + 1e-9))
        conn.execute("DROP SCHEMA bm25 CASCADE")
        conn.commit()
    out.update({"topk_overlap": float(np.mean(overlap)), "same_order_share": float(np.mean(same_order)),
                "max_score_diff_at_rank": float(np.max(score_diff)), "misses_beyond_ties": int(np.sum(misses)),
                "in_process_ms": {"p50": float(np.percentile(ms_mem, 50)), "p95": float(np.percentile(ms_mem, 95))},
                "sql_ms": {"p50": float(np.percentile(ms_sql, 50)), "p95": float(np.percentile(ms_sql, 95))}})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL database")
    parser.add_argument("--n", type=int, default=100000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(measure(args.url, args.n, args.queries, args.k), indent=1))


if __name__ == "__main__":
    main()
