"""What a registered dataset is: :class:`DatasetEntry` (its name, format, file, split rule, checksum, licence) and
the :class:`Source` a development split is derived from. The entries themselves are in :mod:`.catalog`; finding
them by name and on this machine is :mod:`.registry`'s."""

from __future__ import annotations

from dataclasses import dataclass

from .splits import Split

__all__ = ["DatasetEntry", "Source"]


@dataclass(frozen=True)
class Source:
    """Where a development split comes from: a file of a public repository at a commit."""

    repo: str
    path: str
    commit: str
    note: str = ""

    @property
    def url(self) -> str:
        """The file's raw download URL, pinned at the commit."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"

    def describe(self) -> str:
        return f"{self.repo}:{self.path}@{self.commit[:12]}"


@dataclass(frozen=True)
class DatasetEntry:
    """One registered dataset file.

    Attributes:
        name: What commands take (``hindsight-lab replay NAME``).
        format: Its trace format (an adapter of this package).
        filename: Its path under the datasets folder (``$HINDSIGHT_LAB_HOME/datasets/`` for a fetched split,
            the checkout's ``datasets/samples/`` for a sample).
        title: One line on what it holds.
        split: The rule that derives it from its source (the public file, or the split a sample is taken from).
        sha256: Of the derived file (canonical form, see :mod:`.splits`).
        size: Its size in bytes.
        source: The public file a development split is derived from; None for a sample, and for data written
            for this project and shared with its developers only (fetched with ``--from DIR``).
        sample_of: The development split a sample is derived from; None for a development split.
        licence: The data's licence (a sample's is its split's; a test checks they agree).
    """

    name: str
    format: str
    filename: str
    title: str
    split: Split
    sha256: str
    size: int
    source: Source | None = None
    sample_of: str | None = None
    licence: str = ""

    @property
    def is_sample(self) -> bool:
        return self.sample_of is not None
