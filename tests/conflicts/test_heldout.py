"""The offline detector on the first held-out set (``heldout_pairs.jsonl``, see ``HELDOUT_PAIRS.md``): 160 pairs
written by someone who never saw the detector. It was kept for evaluation only until the detector's second round
(precision 0.957, recall 0.550); the third round read its misses and widened the detector with the general cues
they showed, so from then on it is a development set like the others. The set nobody tuned on is now
``blind_pairs.jsonl`` (``test_blind.py``).

This test asserts the measured floor (precision ≥ 0.96, recall ≥ 0.71; measured 0.966 / 0.713) and prints the table by
kind; raise the floor when the detector improves."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_lab.conflicts.detect import OfflineDetector
from hindsight_lab.conflicts.pairs import judge_pairs, scores
from hindsight_lab.datasets.conflict_pairs import load_pairs
from support import check_pair_scores

HERE = Path(__file__).parent
TARGET = {"precision": 0.9, "recall": 0.85}  # issue 18's acceptance figures
FLOOR = {"precision": 0.96, "recall": 0.71}  # measured 0.966 / 0.713: 57 of 80 conflicts found, 2 false alarms


@pytest.fixture(scope="module")
def heldout_scores() -> dict:
    return scores(judge_pairs(load_pairs(HERE / "heldout_pairs.jsonl"), OfflineDetector()))


def test_heldout_set_is_as_documented():
    pairs = load_pairs(HERE / "heldout_pairs.jsonl")
    assert len(pairs) == 160 and sum(p.conflict for p in pairs) == 80


def test_heldout_precision_and_recall(heldout_scores):
    check_pair_scores("first held-out pairs (development since the third round)", heldout_scores, FLOOR, TARGET)


def test_heldout_no_kind_is_left_out(heldout_scores):
    # every kind of contradiction is found at least in part, and every kind of compatible pair stays mostly apart
    for key, v in heldout_scores["by_kind"].items():
        assert v["correct"] >= (0.3 if key.startswith("conflict") else 0.9) * v["n"], (key, v)
