"""Issue 51.4: a replay writes one ``report.html`` beside metrics.json — every judging mode's table with its
intervals, the margins group by group, promotions, the rule ceiling and the power, timing, and the plots embedded —
that opens offline with no other file, and is logged to MLflow as an artifact."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hindsight_lab.cli import main
from hindsight_lab.replay.report import REPORT_FILES

PNG = b"\x89PNG\r\n\x1a\n"


class _Page(HTMLParser):
    """What a page refers to and holds: every src/href, the headings' text, the tables (opened and closed)."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.headings: list[str] = []
        self.opened = self.closed = 0
        self._in_heading = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.refs += [value or "" for name, value in attrs if name in ("src", "href")]
        self.opened += tag == "table"
        if tag in ("h1", "h2", "h3"):
            self._in_heading = True
            self.headings.append("")

    def handle_endtag(self, tag: str) -> None:
        self.closed += tag == "table"
        self._in_heading = self._in_heading and tag not in ("h1", "h2", "h3")

    def handle_data(self, data: str) -> None:
        if self._in_heading:
            self.headings[-1] += data


def _read(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def _offline(page: _Page) -> list[str]:
    """The references a browser would fetch from elsewhere (anything but an embedded data: URI or an anchor)."""
    return [r for r in page.refs if not r.startswith(("data:", "#"))]


def test_the_checker_catches_a_page_that_needs_the_network() -> None:  # negative control of _offline
    page = _read('<img src="https://example.org/plot.png"><a href="http://x/y">x</a><img src="plot.png">'
                 '<img src="data:image/png;base64,AAAA">')
    assert _offline(page) == ["https://example.org/plot.png", "http://x/y", "plot.png"]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """``hindsight-lab replay tau-bench-airline-sample --limit 2 --out DIR`` logged to a temporary sqlite MLflow
    store; returns the folder, the tracking URI and the run's id."""
    from mlflow.tracking import MlflowClient

    tmp = tmp_path_factory.mktemp("report-html")
    out, uri = tmp / "rep", f"sqlite:///{(tmp / 'mlflow.db').as_posix()}"
    with pytest.MonkeyPatch.context() as mp:  # a module fixture: the autouse home of conftest is per test
        mp.setenv("HINDSIGHT_LAB_HOME", str(tmp / "home"))
        assert main(["replay", "tau-bench-airline-sample", "--limit", "2", "--out", str(out), "--mlflow-uri", uri,
                     "--set", "embedder.model=hashing-256"]) == 0
    client = MlflowClient(tracking_uri=uri)
    [run] = client.search_runs([client.get_experiment_by_name("hindsight-replay").experiment_id])
    return out, uri, run.info.run_id


@pytest.mark.slow
def test_a_replay_writes_report_html_beside_metrics_json(replayed) -> None:
    out, _, _ = replayed
    assert (out / "report.html").is_file() and (out / "metrics.json").is_file()
    assert REPORT_FILES[0] == "report.html"


@pytest.mark.slow
def test_report_html_holds_every_modes_table_and_the_plots_and_needs_nothing_else(replayed) -> None:
    out, _, _ = replayed
    text = (out / "report.html").read_text(encoding="utf-8")
    metrics = json.loads((out / "metrics.json").read_text())
    page = _read(text)
    assert page.opened == page.closed and page.opened >= 8
    modes = [m for m, cell in metrics["modes"].items() if cell.get("queries")]
    assert modes == ["repeat", "outcome"]  # what the sample's first two tasks hold
    for mode in modes:
        assert any(h.startswith(f"{mode}: ") for h in page.headings), (mode, page.headings)
        cell = metrics["modes"][mode]
        value, (_, low, high) = cell["systems"]["bm25"]["ndcg@5"], cell["intervals"]["bm25"]["ndcg@5"]
        assert f"{value:.3f} [{low:.3f}, {high:.3f}]" in text, mode  # the table's cell, interval and all
    assert any(h.startswith("repeat, group by group") for h in page.headings)
    for heading in ("reflection and promotions", "promoted rules and their lift", "timing (seconds)", "plots"):
        assert heading in page.headings, (heading, page.headings)
    assert any(h.startswith("rule ceiling") for h in page.headings)
    assert any(h.startswith("power of the lift test") for h in page.headings)
    images = [r for r in page.refs if r.startswith("data:image/png;base64,")]
    assert len(images) == 4 and all(base64.b64decode(r.split(",", 1)[1]).startswith(PNG) for r in images)
    assert _offline(page) == [], _offline(page)
    assert "http://" not in text and "https://" not in text
    assert ">None<" not in text and ">nan<" not in text  # missing values read as —


@pytest.mark.slow
def test_report_html_is_logged_to_mlflow_with_the_other_files(replayed) -> None:
    from mlflow.tracking import MlflowClient

    out, uri, run_id = replayed
    artifacts = {a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(run_id)}
    assert {"report.html", "metrics.json", "episodes.csv", "hits_over_time.png", "config.yaml"} <= artifacts
    local = MlflowClient(tracking_uri=uri).download_artifacts(run_id, "report.html", str(out.parent / "dl"))
    assert Path(local).read_bytes() == (out / "report.html").read_bytes()


@pytest.mark.slow
def test_log_replay_without_a_folder_saves_and_logs_report_html(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from hindsight_lab import LabConfig
    from hindsight_lab.replay.runner import run_replay
    from hindsight_lab.tracking import log_replay

    report = run_replay("tau-bench-airline-sample", limit=2, systems=["bm25", "hindsight"],
                        config=LabConfig().with_params({"embedder.model": "hashing-64"}))
    uri = f"sqlite:///{(tmp_path / 'mlflow.db').as_posix()}"
    run_id = log_replay(report, tracking_uri=uri)
    assert "report.html" in {a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(run_id)}
