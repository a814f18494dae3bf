"""The cached evaluator scores a config exactly as a full replay of that config does."""

from __future__ import annotations

import numpy as np
import pytest
from support import shared_dataset

from hindsight_lab.config import LabConfig, WeightsConfig
from hindsight_lab.replay.report import METRICS
from hindsight_lab.replay.runner import run_replay
from hindsight_lab.sweep.cache import capture, load_episode_data
from hindsight_lab.sweep.evaluate import FastEvaluator, param_batch

TAU = "tau-bench/gpt-4o-airline.dev.json"


def _random_config(rng: np.random.Generator) -> LabConfig:
    """Random values of every fast field; every rerank weight by name, so a new term is drawn too."""
    names = list(WeightsConfig.model_fields)
    w = rng.random(len(names))
    return LabConfig().with_params({
        **{f"retrieval.weights.{name}": float(v) for name, v in zip(names, w)},
        "retrieval.min_relative_score": float(rng.choice([0.0, 0.6, 0.8])),
        "retrieval.recency_half_life_days": float(rng.choice([3.0, 30.0])),
        "retrieval.token_budget": int(rng.choice([300, 1500])),
        "retrieval.max_triggered": int(rng.choice([0, 2])),
        "retrieval.enough_score": [None, 0.5, 0.7][int(rng.integers(3))]})


@pytest.fixture(scope="module")
def tau_cache(minilm):
    data = load_episode_data(shared_dataset(TAU), limit=8)
    return data, capture(data, LabConfig(), embedder=minilm)


@pytest.mark.slow
def test_fast_evaluation_equals_full_replay(tau_cache, minilm) -> None:
    data, cache = tau_cache
    assert len(cache.queries) > 10 and sum(len(q.candidates) for q in cache.queries) > 0
    rng = np.random.default_rng(7)
    configs = [LabConfig()] + [_random_config(rng) for _ in range(3)]
    fast = FastEvaluator(cache).evaluate(configs).summary()
    for i, cfg in enumerate(configs):
        report = run_replay(shared_dataset(TAU), systems=["hindsight"], config=cfg, limit=8, embedder=minilm)
        full = report.mode("repeat").systems["hindsight"]
        for name in (*METRICS, "tokens_median", "tokens_p95", "hit_rate", "empty_queries"):
            assert fast.loc[i, name] == pytest.approx(full[name], abs=1e-12), (i, name)
    # the configs differ enough that the check is not vacuous
    assert fast["tokens_median"].nunique() > 1 and fast["ndcg@5"].nunique() > 1


@pytest.mark.slow
def test_batches_and_chunks_agree(tau_cache) -> None:
    _, cache = tau_cache
    rng = np.random.default_rng(3)
    configs = [_random_config(rng) for _ in range(40)]
    whole = FastEvaluator(cache, chunk=1000).evaluate(configs)
    chunked = FastEvaluator(cache, chunk=7).evaluate(param_batch(configs))
    one_by_one = [FastEvaluator(cache).evaluate([c]).values[:, 0] for c in configs[:5]]
    assert np.array_equal(whole.values, chunked.values) and np.array_equal(whole.tokens, chunked.tokens)
    for i, vals in enumerate(one_by_one):
        assert np.array_equal(whole.values[:, i], vals)
