"""One self-contained HTML page of results: headings, tables (pandas' ``to_html``) and PNG plots embedded as
``data:image/png;base64`` URIs, its style inline, so the file opens offline with no other file beside it and refers
to nothing on the network. Every text is escaped (:func:`html.escape`; ``to_html`` escapes its cells).

:func:`replay_page` lays out a replay's ``report.html`` (:meth:`hindsight_lab.replay.report.ReplayReport.save`)
from the typed :class:`~hindsight_lab.evaluation.ReplayMetrics` and the plots the report computed; the rest are the
parts it is made of. Nothing of the package is imported at run time: the report passes its data in.

Examples:
    >>> import pandas as pd
    >>> text = page("Replay", [heading("repeat"), table(pd.DataFrame({"ndcg@5": [0.5]}, index=["bm25"]))])
    >>> text.startswith("<!DOCTYPE html>") and "<td>0.500</td>" in text
    True
    >>> facts({"queries": 15, "order": "by trial"}).count("<tr>")
    2
"""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING, Any, Iterable, Mapping

if TYPE_CHECKING:
    from ..evaluation import ReplayMetrics

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1em; margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
p.note { color: #555; font-size: 0.9em; max-width: 60em; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
"""


def page(title: str, blocks: Iterable[str]) -> str:
    """A whole HTML document: ``title`` as its title and first heading, then ``blocks`` (HTML made by the other
    functions here), with the style inline."""
    body = "\n".join(blocks)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}'
            f"</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{html.escape(title)}</h1>\n{body}\n"
            "</body>\n</html>\n")


def heading(text: str, level: int = 2) -> str:
    return f"<h{level}>{html.escape(text)}</h{level}>"


def note(text: str) -> str:
    """A paragraph of explanation."""
    return f'<p class="note">{html.escape(text)}</p>'


def table(frame: Any, *, index: bool = True, digits: int = 3) -> str:
    """A DataFrame as an HTML table: floats to ``digits`` places, missing cells (None too) as ``—``, cells
    escaped."""
    import numpy as np

    frame = frame.where(frame.notna(), np.nan).infer_objects()  # None would print as "None"
    return frame.to_html(index=index, border=0, na_rep="—", escape=True,
                         float_format=lambda v: f"{v:.{digits}f}")


def facts(values: Mapping[str, Any], *, digits: int = 3) -> str:
    """A two-column table of names and values (floats to ``digits`` places)."""
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_cell(v, digits))}</td></tr>"
                   for k, v in values.items())
    return f"<table>{rows}</table>"


def picture(png: bytes, caption: str) -> str:
    """A PNG embedded in the page as a ``data:`` URI, with its caption."""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption, quote=True)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return "—" if value is None else str(value)


def scalars(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The plain values of a ``metrics.json`` mapping (numbers, strings, None), one level of mappings flattened
    as ``prefix key``, a pair of numbers (an interval) as ``[low, high]``; lists of records are left out."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping) and not prefix:
            out.update(scalars(value, prefix=f"{key} "))
        elif isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
            out[f"{prefix}{key}"] = f"[{value[0]:.3f}, {value[1]:.3f}]"
        elif value is None or isinstance(value, (int, float, str)):
            out[f"{prefix}{key}"] = value
    return out


def replay_page(result: "ReplayMetrics", *, questions: Mapping[str, str], sources: Any,
                pictures: Mapping[str, bytes]) -> str:
    """A replay's ``report.html``.

    Args:
        result: the replay's typed metrics (:class:`~hindsight_lab.evaluation.ReplayMetrics`; the margins group
            by group need its per-episode rows).
        questions: judging mode → what it asks, for its heading.
        sources: the per-source table (empty for one source).
        pictures: plot name → PNG bytes.
    """
    import pandas as pd

    ds, c = result.dataset, result.comparison
    repeat = c.modes["repeat"]
    blocks = [facts({k: v for k, v in scalars(ds).items() if not k.startswith("skipped ")}
                    | {"queries": repeat.queries, "groups": repeat.groups})]
    if ds.get("skipped"):
        blocks.append(note(f"skipped {ds['skipped'].get('lines')} invalid line(s): {ds['skipped'].get('by_reason')}"))
    blocks.append(note("Each cell: the mean over the mode's queries, with its 95% bootstrap interval over whole groups "
                       "(tasks, conversations) in brackets; p: a paired randomization test against hindsight."))
    judged = [c.modes[m] for m in c.judged_modes()]
    for part in judged:
        blocks += [heading(f"{part.mode}: {questions.get(part.mode, '')}"),
                   note(f"{part.queries} queries in {part.groups} groups"), table(part.table())]
    if c.absent_modes():
        blocks.append(note(f"{', '.join(c.absent_modes())}: n/a (no query of that kind in this replay)"))
    for part in judged:
        baselines = part.rivals()
        if c.reference not in part.systems or not baselines or not part.rows:
            continue
        margin = part.margins("ndcg@5", c.reference, baselines)
        m = margin["margin"]
        blocks += [heading(f"{part.mode}, group by group: hindsight against the best of {', '.join(baselines)}", 3),
                   note(f"ndcg@5 margin mean {m.mean():+.3f} (from {m.min():+.3f} to {m.max():+.3f}), "
                        f"ahead in {int((m > 0).sum())}, behind in {int((m < 0).sum())} of {len(m)} "
                        "groups"), table(margin)]
    if len(sources):
        blocks += [heading("by source (queries of each file)"), table(sources)]
    reflecting = {n: v for n, v in repeat.systems.items() if "trigger_rate" in v}
    if reflecting:
        rows = {n: {k: v[k] for k in ("trigger_rate", "reflections", "promotions", "reuse_rate") if k in v}
                for n, v in reflecting.items()}
        blocks += [heading("reflection and promotions"), table(pd.DataFrame.from_dict(rows, orient="index"))]
    blocks += _lift_blocks(result)
    timing = {k: v for k, v in result.timing.items() if k != "resumed_units" or v}
    blocks += [heading("timing (seconds)"), facts(timing, digits=2), heading("plots")]
    blocks += [picture(png, name.replace("_", " ")) for name, png in pictures.items()]
    return page(f"Replay: {ds.get('name', '')}", blocks)


def _lift_blocks(result: "ReplayMetrics") -> list[str]:
    """The promoted rules' lift, the rule ceiling and the lift test's power, where the replay has them."""
    import pandas as pd

    blocks = []
    lift = result.lift
    if lift:
        rows = {n: {k: v for k, v in scalars(cell).items() if k != "note"} for n, cell in lift.items()}
        blocks += [heading("promoted rules and their lift"), table(pd.DataFrame.from_dict(rows, orient="index"))]
        blocks += [note(n) for n in dict.fromkeys(c["note"] for c in lift.values() if c.get("note"))]
    ceiling = result.rule_ceiling
    if ceiling:
        forms = {form: scalars(cell) for form, cell in ceiling.get("forms", {}).items()}
        blocks += [heading("rule ceiling: rules the traces support within tasks"),
                   facts({k: v for k, v in ceiling.items() if not isinstance(v, (Mapping, list))}),
                   table(pd.DataFrame.from_dict(forms, orient="index")),
                   note("supported: rules with P above min_confidence from min_tasks or more tasks (an optimistic "
                        "ceiling); chance: the same with outcomes shuffled within tasks; forward: an ideal memory "
                        "that promotes each rule once the runs so far support it, its lift read on later runs.")]
    power = result.lift_power
    if power and "histories" in power:
        blocks += [heading("power of the lift test at this replay's shape"), facts(scalars(power))]
    return blocks
