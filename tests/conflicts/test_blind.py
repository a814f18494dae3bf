"""The offline detector on the blind set (``blind_pairs.jsonl``, see ``BLIND_PAIRS.md``): 168 pairs in twelve
domains that none of the other sets use, written by someone who read neither the detector, its tests nor any
earlier pair set, before the detector's third round. Only its aggregate figures are looked at, six times so far:
before the third round (precision 0.750, recall 0.393), after its cues (0.773 / 0.405), after a tidy-up (the same),
and after each of three steps written from pairs of our own — conditions that pick out other cases (0.791 / 0.405),
copulas, channels and quantities (0.800 / 0.429), deeper direct antonyms and verbs told by their place (the same). Never read its pairs while changing the
detector; a session that does must say so and write another blind set.

Issue 18 asks for precision ≥ 0.9 and recall ≥ 0.85. The detector is far from both, so this test asserts the
measured floor and prints the table by kind; raise the floor when the detector improves, never fit it to the
pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight_lab.conflicts.detect import OfflineDetector
from hindsight_lab.conflicts.pairs import judge_pairs, scores
from hindsight_lab.datasets.conflict_pairs import load_pairs
from support import check_pair_scores

HERE = Path(__file__).parent
TARGET = {"precision": 0.9, "recall": 0.85}  # issue 18's acceptance figures
FLOOR = {"precision": 0.80, "recall": 0.42}  # measured 0.800 / 0.429: 36 of 84 conflicts found, 9 false alarms


@pytest.fixture(scope="module")
def blind_scores() -> dict:
    return scores(judge_pairs(load_pairs(HERE / "blind_pairs.jsonl"), OfflineDetector()))


def test_blind_set_is_as_documented():
    pairs = load_pairs(HERE / "blind_pairs.jsonl")
    assert len(pairs) == 168 and sum(p.conflict for p in pairs) == 84
    domains = {json.loads(line)["domain"] for line in (HERE / "blind_pairs.jsonl").read_text().splitlines()}
    assert len(domains) == 12


def test_blind_precision_and_recall(blind_scores):
    check_pair_scores("blind pairs", blind_scores, FLOOR, TARGET)
