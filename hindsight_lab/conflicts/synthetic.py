"""Deprecated: the planted conflicting rules moved to :mod:`hindsight_lab.datasets.synthetic.rules`.

This module re-exports them for one release and warns once, when it is first imported.
"""

from __future__ import annotations

import warnings

from ..datasets.synthetic.rules import KINDS, START, evaluate_plan, planted_rules
from ..datasets.synthetic.rules import RULE_TASK_TYPES as TASK_TYPES

warnings.warn("hindsight_lab.conflicts.synthetic is deprecated and will be removed in the next release; import "
              "planted_rules and evaluate_plan from hindsight_lab.datasets.synthetic.rules",
              DeprecationWarning, stacklevel=2)

__all__ = ["KINDS", "START", "TASK_TYPES", "evaluate_plan", "planted_rules"]
