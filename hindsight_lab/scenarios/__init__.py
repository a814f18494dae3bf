"""Scenarios that test a memory beyond recorded traces: worlds the project generates, with a known right answer.

- :mod:`.lures`: lexical lures — pairs of a request and an earlier run that shares its words but not its task type,
  beside the run of the right type; a memory passes a pair when it injects the right run first;
- :mod:`.live`: the live environment — a simulated customer-service world whose tasks an agent with a memory solves
  one after the other, so that what the memory injects changes what the agent does (cause, not only prediction);
- :mod:`.demo`: the story ``hindsight-lab demo`` tells on the packaged episodes (embedded store, no network).

The episodes they draw on come from :mod:`hindsight_lab.datasets.synthetic`; the systems they run are the replay's
(:mod:`hindsight_lab.replay.systems`). ``hindsight-lab lures`` and ``hindsight-lab live`` print their tables; the
sweep and the fit use them as terms and rows.
"""
