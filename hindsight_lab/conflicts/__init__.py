"""Conflicting rules (article §7.2): the detection engine. Cluster L3 rules and L2 candidates with HDBSCAN, find
contradictions within clusters and among nearest neighbours, and plan their resolution — supersede a clearly
stronger, newer rule's rival, flag close pairs so both are recalled and shown as conflicting, merge duplicates.
The memory applies a plan (:mod:`hindsight_lab.memory.maintain`); flagged rivals are shown at recall time
(:mod:`hindsight_lab.retrieve.marks`).

- ``text``, ``claims``: reading a rule's orderings, tools, negations and quantities; ``detect``: the offline
  detector; ``llm``: the optional LiteLLM judge.
- ``cluster``: HDBSCAN and the pairs to compare; ``resolve``: strength, supersede or flag, the surviving duplicate;
  ``scan``: one pass as a plan; ``pairs``: judging labelled pairs. The commands live in
  :mod:`hindsight_lab.cli.conflicts`, the bench in :mod:`hindsight_lab.bench.conflicts`, the picture in
  :mod:`hindsight_lab.report.conflicts`.
The planted contradictions of the synthetic benchmark are :mod:`hindsight_lab.datasets.synthetic.rules`.
"""
