"""Clustered bootstrap intervals and the paired randomization test (DESIGN §6: resample whole tasks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hindsight_lab.metrics.stats import bootstrap_ci, paired_randomization_test


def _normal(n: int, seed: int, loc: float = 0.5) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    return {f"q{i}": float(v) for i, v in enumerate(rng.normal(loc, 0.2, size=n))}


def _clustered(n_groups: int = 10, per_group: int = 20) -> tuple[dict[str, float], dict[str, str]]:
    """Every query of a task scores alike (its task is easy or hard): strongly clustered values."""
    vals, groups = {}, {}
    for g in range(n_groups):
        for i in range(per_group):
            q = f"t{g}-q{i}"
            vals[q] = 1.0 if g % 2 == 0 else 0.0
            groups[q] = f"t{g}"
    return vals, groups


# -- bootstrap ---------------------------------------------------------------------------------------------------
def test_bootstrap_contains_the_mean():
    vals = _normal(60, 1)
    mean, low, high = bootstrap_ci(vals)
    assert mean == pytest.approx(np.mean(list(vals.values())))
    assert low < mean < high


def test_bootstrap_narrows_with_more_data():
    _, lo_s, hi_s = bootstrap_ci(_normal(20, 2))
    _, lo_l, hi_l = bootstrap_ci(_normal(500, 2))
    assert (hi_l - lo_l) < 0.5 * (hi_s - lo_s)    # ~sqrt(25) = 5x narrower in theory


def test_bootstrap_hand_case_constant_values():
    # every resample has the same mean -> a zero-width interval at the mean
    assert bootstrap_ci({"a": 0.25, "b": 0.25, "c": 0.25}) == (0.25, 0.25, 0.25)


def test_group_resampling_is_wider_on_clustered_data():
    vals, groups = _clustered()
    mean_q, lo_q, hi_q = bootstrap_ci(vals)                 # pretends 200 independent queries
    mean_g, lo_g, hi_g = bootstrap_ci(vals, groups)        # 10 independent tasks
    assert mean_q == mean_g == 0.5
    assert (hi_g - lo_g) > 2 * (hi_q - lo_q)
    # equal-sized groups: the group bootstrap is exactly the bootstrap of the 10 task means
    task_means = {f"t{g}": 1.0 if g % 2 == 0 else 0.0 for g in range(10)}
    _, lo_t, hi_t = bootstrap_ci(task_means)
    assert (lo_g, hi_g) == pytest.approx((lo_t, hi_t), abs=1e-12)  # same seed, same draws


def test_group_mean_is_query_weighted():
    # group a: 3 queries of 1.0, group b: 1 query of 0.0 -> the reported mean is per query (0.75), not per group
    vals = {"a1": 1.0, "a2": 1.0, "a3": 1.0, "b1": 0.0}
    groups = {"a1": "a", "a2": "a", "a3": "a", "b1": "b"}
    mean, low, high = bootstrap_ci(vals, groups, n_resamples=4000)
    assert mean == 0.75
    # resampled groups: {a,a} -> 1.0, {a,b} -> 0.75, {b,b} -> 0.0 with probabilities 1/4, 1/2, 1/4
    assert (low, high) == (0.0, 1.0)


def test_bootstrap_is_deterministic_and_order_free():
    vals, groups = _clustered(8, 3)
    vals = {q: v + 0.01 * i for i, (q, v) in enumerate(vals.items())}
    a = bootstrap_ci(vals, groups, seed=7)
    shuffled = dict(reversed(list(vals.items())))
    assert bootstrap_ci(shuffled, groups, seed=7) == a
    assert bootstrap_ci(vals, groups, seed=8) != a


def test_bootstrap_large_number_of_groups_chunks():
    # more groups than fit in one chunk of the resample matrix still works and is deterministic
    vals = _normal(3000, 4)
    r1 = bootstrap_ci(vals, n_resamples=1000)
    assert r1 == bootstrap_ci(vals, n_resamples=1000)
    assert r1[1] < r1[0] < r1[2]


@pytest.mark.parametrize("kwargs, match", [({"n_resamples": 0}, "n_resamples"), ({"alpha": 1.0}, "alpha"),
                                           ({"alpha": 0}, "alpha")])
def test_bootstrap_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_ci({"a": 1.0}, **kwargs)


def test_bootstrap_input_errors():
    with pytest.raises(ValueError, match="empty query set"):
        bootstrap_ci({})
    with pytest.raises(ValueError, match="query 'q2' is nan"):
        bootstrap_ci({"q1": 1.0, "q2": float("nan")})
    with pytest.raises(ValueError, match="have no group"):
        bootstrap_ci({"q1": 1.0, "q2": 0.0}, {"q1": "t"})
    with pytest.raises(ValueError, match="has group None"):
        bootstrap_ci({"q1": 1.0}, {"q1": None})


# -- paired randomization test -----------------------------------------------------------------------------------
def test_identical_systems_p_is_one():
    vals = _normal(40, 3)
    assert paired_randomization_test(vals, vals) == 1.0                          # 40 groups: Monte Carlo
    assert paired_randomization_test(vals, dict(vals), n_permutations=200) == 1.0
    small = dict(list(vals.items())[:5])
    assert paired_randomization_test(small, small) == 1.0                        # exact


def test_clearly_better_system_small_p():
    b = _normal(60, 5)
    a = {q: v + 0.3 for q, v in b.items()}
    p = paired_randomization_test(a, b, n_permutations=5000)
    assert p == pytest.approx(1 / 5001)                    # no sign vector reaches the observed difference
    assert paired_randomization_test(b, a, n_permutations=5000) == p             # two-sided, symmetric


def test_exact_hand_cases():
    # 2 groups, both +1: sign sums {2, 0, 0, -2}; |T| >= 2 for 2 of 4 -> 0.5
    assert paired_randomization_test({"q1": 1.0, "q2": 1.0}, {"q1": 0.0, "q2": 0.0}) == 0.5
    # diffs (3, 1, 1): sums over 8 sign vectors are 5, 3, 3, 1, -1, -3, -3, -5 -> |T| >= 5 for 2 of 8
    a = {"x": 3.0, "y": 1.0, "z": 1.0}
    b = {"x": 0.0, "y": 0.0, "z": 0.0}
    assert paired_randomization_test(a, b) == 0.25
    # diffs (1, 1, -1): |sum| is 1 or 3, always >= the observed 1 -> 1.0
    assert paired_randomization_test({"x": 1.0, "y": 1.0, "z": 0.0}, {"x": 0.0, "y": 0.0, "z": 1.0}) == 1.0


def test_groups_flip_together():
    # two tasks of 30 queries each, a better on every query: per query p is tiny, but with only two
    # independent tasks the exact p is 2/4 = 0.5
    b = {f"t{g}-q{i}": 0.0 for g in range(2) for i in range(30)}
    a = {q: 1.0 for q in b}
    groups = {q: q.split("-")[0] for q in b}
    assert paired_randomization_test(a, b, n_permutations=2000) < 0.001
    assert paired_randomization_test(a, b, groups) == 0.5


def test_exact_and_monte_carlo_agree():
    rng = np.random.default_rng(9)
    b = {f"q{i}": float(v) for i, v in enumerate(rng.normal(0.5, 0.2, size=36))}
    a = {q: v + float(rng.normal(0.05, 0.2)) for q, v in b.items()}
    groups = {q: f"t{i % 12}" for i, q in enumerate(sorted(b))}              # 12 tasks of 3 queries
    exact = paired_randomization_test(a, b, groups)                           # 2**12 sign vectors
    mc = paired_randomization_test(a, b, groups, n_permutations=20000, exact_max_groups=0, seed=1)
    assert 0.02 < exact < 0.98                                                # a non-trivial case
    assert mc == pytest.approx(exact, abs=0.015)                              # MC s.e. <= 0.0036


def test_randomization_deterministic_for_a_seed():
    b = _normal(50, 6)
    noise = _normal(50, 7, loc=0.03)
    a = {q: v + noise[q] for q, v in b.items()}    # a noisy difference: p well inside (0, 1)
    p1 = paired_randomization_test(a, b, seed=3, n_permutations=3000)
    assert p1 == paired_randomization_test(dict(reversed(list(a.items()))), b, seed=3, n_permutations=3000)
    assert p1 != paired_randomization_test(a, b, seed=4, n_permutations=3000)


def test_randomization_input_errors():
    with pytest.raises(ValueError, match="same queries"):
        paired_randomization_test({"q1": 1.0}, {"q2": 1.0})
    with pytest.raises(ValueError, match="empty query set"):
        paired_randomization_test({}, {})
    with pytest.raises(ValueError, match=r"\(b\): value for query 'q1' is nan"):
        paired_randomization_test({"q1": 1.0}, {"q1": float("nan")})
    with pytest.raises(ValueError, match="n_permutations"):
        paired_randomization_test({"q1": 1.0}, {"q1": 0.0}, n_permutations=0)
    with pytest.raises(ValueError, match="have no group"):
        paired_randomization_test({"q1": 1.0}, {"q1": 0.0}, {})


def test_bootstrap_one_group_holds_the_mean_to_the_last_bit():
    # Regression: with one group (a LoCoMo replay of one conversation) every resample is the whole set, summed in
    # another order than the reported mean's fsum; here that sum is one ulp above the mean, which fell outside.
    x = [0.021489705265908876, 0.8375779756625729, 0.5564543226524334, 0.6422943629324456, 0.1859062658947177,
         0.9925434121760651, 0.8599465287952899]
    values = {f"q{i}": v for i, v in enumerate(x)}
    mean, low, high = bootstrap_ci(values, {q: "conv" for q in values})
    assert mean == math.fsum(x) / len(x) and low <= mean <= high and high - low < 1e-15
