"""Seeded synthetic data with ground truth: scenarios in the trace format (DESIGN §5) for the article's failure
cases, planted conflicting rules, and the benchmark's instruction corpus — all drawn from one vocabulary.

The package owns the synthetic task catalogue (:mod:`.tasks`: task types, their tools, the order their
state-changing tools must be called in, small hand-written instruction templates), the words and the draws every
generator makes (:mod:`.names`), the scenario generator (:func:`generate`, one module per scenario family) and the
committed fixtures under ``datasets/synthetic/`` (:mod:`.fixtures`; ``python -m hindsight_lab.datasets.synthetic``
regenerates them byte for byte). :mod:`hindsight_lab.scenarios.live` reuses the catalogue,
:mod:`hindsight_lab.scenarios.lures` evaluates the lures; :mod:`.rules` plants contradicting rules for the conflict
pass and :mod:`.corpus` writes the search benchmark's corpus.

Scenarios (``n`` counts groups; each group has its own span of days on the generator's own clock):

- ``lures`` (:mod:`.lures`): lexical lures across task types. Per pair: background episodes
  (``background_per_type`` of every task type about the same kind of thing as the query, one of every other), a
  **right** memory (the query's intent in other words, other entities) and a **lure** (another task type about the
  very same order, account or booking, so it shares most of the query's words), then the **query**, whose
  ``relevant_episode_ids`` is ``[right]``.
- ``floods`` (:mod:`.floods`): context inflation. A useful successful run of a task type, then ``retries`` (15)
  near-identical failed retries of one task, then a query of that type whose only relevant memory is the useful run.
- ``lucky`` (:mod:`.order`): two runs with the required tool order, a run that skipped the prerequisite and
  succeeded by chance (``meta.lucky``), the same wrong order failing three times after it, then a query; relevant:
  the two right runs.
- ``policy`` (:mod:`.order`): a rule that changes over time. Before ``meta.policy_changed_at`` one order of two
  tools succeeds, after it that order fails and the reverse succeeds; the query comes after the change and its
  relevant memories are the successes under the new policy.
- ``strategic`` (:mod:`.strategic`): a short strategic rule (a ``reflection`` step of one run) that two later
  queries of *other* task types need, although their instructions share almost no words with it; relevant: the run
  with the rule.

Every episode carries its ground-truth ``task_type``, ``task_id``, ``started_at`` and ``meta`` with ``scenario``,
``group`` and ``role``; everything is a pure function of ``(scenario, n, seed)`` through ``random.Random``.

Examples:
    >>> eps = generate("lures", n=2, seed=0)
    >>> sorted({e.meta["role"] for e in eps})
    ['background', 'lure', 'query', 'right']
    >>> q = next(e for e in eps if e.meta["role"] == "query")
    >>> q.relevant_episode_ids == [q.meta["right"]]
    True
    >>> generate("floods", n=1, seed=3) == generate("floods", n=1, seed=3)
    True
"""

from __future__ import annotations

from .episodes import START, build_episode
from .fixtures import FIXTURE_SEED, FIXTURE_SIZES, fixture_dir, write_fixtures
from .lures import content_tokens, shared_tokens
from .names import draw_entities
from .rules import evaluate_plan, planted_rules
from .scenarios import GROUP_DAYS, SCENARIOS, generate
from .strategic import STRATEGIC_RULES
from .tasks import READ_ONLY_TOOLS, TASK_TYPES, TRAP_TYPES, TaskType

__all__ = ["FIXTURE_SEED", "FIXTURE_SIZES", "GROUP_DAYS", "READ_ONLY_TOOLS", "SCENARIOS", "START", "STRATEGIC_RULES",
           "TASK_TYPES", "TRAP_TYPES", "TaskType", "build_episode", "content_tokens", "draw_entities",
           "evaluate_plan", "fixture_dir", "generate", "planted_rules", "shared_tokens", "write_fixtures"]
