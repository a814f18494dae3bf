"""Plots of a sweep: the objective against each swept field."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import pandas as pd


def sensitivity_plot(trials: "pd.DataFrame", fields: Sequence[str], objective: str, *, best: int | None = None,
                     title: str = "", path: str | Path | None = None) -> Any:
    """One panel per swept field: each valid trial's ``objective`` column against the field's value, the ``best``
    trial (its ``number``) marked.

    Returns the figure (also saved to ``path`` when given).
    """
    import pandas as pd

    size = (3.2 * max(1, len(fields)), 3.0)
    if path is not None:  # a file: no pyplot, so a notebook's backend and figures stay as they are
        from matplotlib.figure import Figure

        fig = Figure(figsize=size)
    else:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=size)
    axes = fig.subplots(1, max(1, len(fields)), squeeze=False, sharey=True)
    ok = trials[trials["status"] == "ok"]
    for a, name in zip(axes[0], fields):
        x = pd.to_numeric(ok[name], errors="coerce") if name in ok else pd.Series(dtype=float)
        a.scatter(x, ok[objective], s=10, alpha=0.5)
        if best is not None and name in ok:
            b = ok[ok["number"] == best]
            a.scatter(pd.to_numeric(b[name], errors="coerce"), b[objective], s=40, color="red", label="best")
        a.set_xlabel(name.replace("retrieval.", "").replace("weights.", "w."), fontsize=8)
    axes[0][0].set_ylabel(objective)
    fig.suptitle(f"{title}: {objective} per trial" if title else f"{objective} per trial", fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=100)
    return fig
