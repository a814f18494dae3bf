"""Regenerate the committed fixtures: ``python -m hindsight_lab.datasets.synthetic`` (prints nothing)."""

from .fixtures import write_fixtures

if __name__ == "__main__":
    write_fixtures()
