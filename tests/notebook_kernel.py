"""Running the notebooks on a kernel of this interpreter — shared by ``test_notebooks.py`` and by the one command
that regenerates the committed outputs:

    .venv/bin/python tests/notebook_kernel.py --data ../shared/datasets

which fetches every registered development split from ``--data`` (verified against its sha256, as
``hindsight-lab datasets fetch NAME --from DIR`` does) into a temporary ``HINDSIGHT_LAB_HOME``, executes every
notebook under ``notebooks/`` top to bottom, and writes each back with its outputs (less stderr: warnings and
progress bars) — or leaves it untouched if a cell raised or an output names a machine path.

The kernel is this interpreter: a ``python3`` kernelspec for ``sys.executable`` is written to a temporary folder
placed first on ``JUPYTER_PATH``, so nothing beyond ``pip install -e '.[dev]'`` is needed and a ``python3``
kernelspec installed elsewhere cannot take its place. Everything the kernel writes goes under the temporary folder
(``HINDSIGHT_LAB_HOME``, ``IPYTHONDIR``, ``JUPYTER_RUNTIME_DIR``), and the ``HINDSIGHT_LLM_*`` variables that make
``02_reflection`` call a real model are removed, so a run stays offline.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable

import nbformat

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
KERNEL_NAME = "python3"
CELL_TIMEOUT_S = 600
LLM_VARIABLES = ("HINDSIGHT_LLM_MODEL", "HINDSIGHT_LLM_API_BASE", "HINDSIGHT_LLM_API_KEY")
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:tmp|work|root|home|var|private|Users)/")
"""An absolute path of the machine that ran a notebook, in an output (committed outputs must hold none)."""


def notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOKS_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def kernel_environment(folder: Path, setenv: Callable[[str, str], None], delenv: Callable[[str], None]) -> None:
    """Write the kernelspec under ``folder`` and point the kernel's folders there (through ``setenv``)."""
    from ipykernel.kernelspec import write_kernel_spec

    jupyter = folder / "jupyter"
    write_kernel_spec(jupyter / "kernels" / KERNEL_NAME)  # argv[0] is sys.executable
    setenv("JUPYTER_PATH", str(jupyter))
    setenv("JUPYTER_RUNTIME_DIR", str(folder / "runtime"))
    setenv("IPYTHONDIR", str(folder / "ipython"))
    setenv("HINDSIGHT_LAB_HOME", str(folder / "home"))
    delenv("MPLBACKEND")  # Agg here would swallow the notebooks' inline figures
    for name in LLM_VARIABLES:
        delenv(name)  # 02_reflection would call a real model: use its local stub


def fetch_development_data(data_dir: Path, home: Path) -> list[str]:
    """Every registered development split found under ``data_dir``, verified, into ``home/datasets``; returns
    the names fetched."""
    from hindsight_lab.datasets.fetch import fetch
    from hindsight_lab.datasets.registry import entries

    done = []
    for entry in entries().values():
        if not entry.is_sample and (data_dir / entry.filename).is_file():
            fetch(entry, from_dir=data_dir, root=home / "datasets")
            done.append(entry.name)
    return done


def execute(nb: nbformat.NotebookNode, cwd: Path) -> None:
    """Run every cell in place; the first cell that raises raises :class:`nbclient.exceptions.CellExecutionError`."""
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL_NAME,
                   resources={"metadata": {"path": str(cwd)}}).execute()


def machine_paths(nb: nbformat.NotebookNode) -> list[str]:
    """Output lines that name an absolute path of this machine."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = out.get("text", "") + "".join(out.get("data", {}).get("text/plain", ""))
            text += "".join(out.get("data", {}).get("text/html", "")) + "\n".join(out.get("traceback", []))
            found += [line.strip()[:160] for line in text.splitlines() if MACHINE_PATH.search(line)]
    return found


def strip_volatile(nb: nbformat.NotebookNode) -> None:
    """Drop what changes with every run or says nothing to a reader: execution timestamps, and stderr (library
    warnings and progress bars, which also name the interpreter's install path)."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute every notebook on the full-size development data and "
                                     "write it back with its outputs.")
    parser.add_argument("--data", required=True, help="folder holding the development splits (e.g. a copy laid out "
                        "as $HINDSIGHT_LAB_HOME/datasets)")
    parser.add_argument("names", nargs="*", help="notebook file names (default: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hindsight-notebooks-") as tmp:
        folder = Path(tmp)
        kernel_environment(folder, os.environ.__setitem__, lambda k: os.environ.pop(k, None))
        fetched = fetch_development_data(Path(args.data), folder / "home")
        print(f"development data: {', '.join(fetched) or 'none found'}")
        failed = 0
        for path in notebooks():
            if args.names and path.name not in args.names:
                continue
            nb = nbformat.read(path, as_version=4)
            try:
                execute(nb, path.parent)
            except Exception as exc:  # noqa: BLE001 (report every notebook, keep the committed one)
                print(f"{path.name}: FAILED, left as it was: {str(exc).splitlines()[0][:200]}")
                failed += 1
                continue
            strip_volatile(nb)
            leaks = machine_paths(nb)
            if leaks:
                print(f"{path.name}: outputs name machine paths, left as it was: {leaks[:3]}")
                failed += 1
                continue
            nbformat.write(nb, path)
            print(f"{path.name}: executed and written")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
