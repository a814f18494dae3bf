"""A 2-D picture of a conflict pass (``hindsight-lab conflicts --png``, ``notebooks/05_conflicts.ipynb``): rules
projected with PCA, coloured by HDBSCAN cluster (noise as grey crosses), flagged pairs joined by red lines,
superseded rules joined to their successor by dashed arrows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..conflicts.scan import ConflictPlan


def project(x: np.ndarray) -> np.ndarray:
    """PCA to two dimensions (zeros for fewer than two rows)."""
    if len(x) < 2:
        return np.zeros((len(x), 2))
    from sklearn.decomposition import PCA

    dims = min(2, x.shape[1], len(x))
    out = PCA(n_components=dims, random_state=0).fit_transform(np.asarray(x, dtype=np.float64))
    return np.pad(out, ((0, 0), (0, 2 - dims)))


def plot_plan(plan: ConflictPlan, path: str | Path | None = None, *, title: str | None = None) -> Any:
    """Draw the plan; write a PNG to ``path`` when given. Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    xy = project(plan.embeddings)
    pos = {r.id: i for i, r in enumerate(plan.records)}
    fig, ax = plt.subplots(figsize=(8, 6), dpi=110)
    noise = plan.labels < 0
    if (~noise).any():
        ax.scatter(xy[~noise, 0], xy[~noise, 1], c=plan.labels[~noise] % 20, cmap="tab20", s=28, vmin=0, vmax=19,
                   label=f"{plan.n_clusters} clusters")
    if noise.any():
        ax.scatter(xy[noise, 0], xy[noise, 1], c="0.55", marker="x", s=26, label=f"noise ({int(noise.sum())})")
    for i, f in enumerate(plan.flags):
        a, b = xy[pos[f.a]], xy[pos[f.b]]
        ax.plot([a[0], b[0]], [a[1], b[1]], color="crimson", lw=1.6, label="flagged pair" if i == 0 else None)
    for i, s in enumerate(plan.supersessions):
        a, b = xy[pos[s.old]], xy[pos[s.new]]
        ax.annotate("", xy=b, xytext=a, arrowprops=dict(arrowstyle="->", color="darkorange", ls="--", lw=1.3))
        if i == 0:
            ax.plot([], [], color="darkorange", ls="--", label="superseded → successor")
    summary = plan.summary()
    ax.set_title(title or f"{summary['records']} rules: {summary['clusters']} clusters, {summary['noise']} noise, "
                          f"{summary['flagged']} flagged, {summary['superseded']} superseded", fontsize=10)
    ax.set_xlabel("PCA 1")
    ax.set_ylabel("PCA 2")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
        plt.close(fig)
    return fig
