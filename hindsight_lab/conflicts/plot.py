"""Deprecated: the picture of a conflict pass moved to :mod:`hindsight_lab.report.conflicts`; this name stays for
one release."""

from __future__ import annotations

import warnings

from ..report.conflicts import plot_plan, project

__all__ = ["plot_plan", "project"]

warnings.warn("hindsight_lab.conflicts.plot is deprecated and goes in the next release: import plot_plan from "
              "hindsight_lab.report.conflicts", DeprecationWarning, stacklevel=2)
