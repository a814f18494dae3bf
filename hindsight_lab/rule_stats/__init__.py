"""The statistics of rules: what recorded runs say of the rules a memory promoted, and what they could support.

- :mod:`.lift`: the success lift of the runs that followed a promoted rule over those that did not, pooled over
  rules and tested against a null that keeps each task's difficulty (outcomes shuffled within tasks);
- :mod:`.ceiling`: the rule ceiling — every rule of the checkable forms tried on the whole history, and what an
  ideal memory, promoting each once the runs so far support it, would gain on the later runs;
- :mod:`.power`: how much data such a lift needs, simulated at a replay's own shape.

The lift is measured on recorded runs whose agents never saw the rules: it says a rule predicts success, not that
following it causes success (the live environment measures cause). The replay harness (:mod:`hindsight_lab.replay`)
calls these on its runs; nothing here knows a memory system.
"""
