"""A memory's in-process state as bytes: saved in a store that keeps a change log, read back at the next open.

What a memory rebuilds at open from every stored record — the recall index (:class:`~hindsight_lab.retrieve.index.
RecallIndex`: where each record lives, the keyword, task-type and trigger indexes, the classifier), the rules'
checks, the evidence against stored successes and the trigger state — depends only on the records and on the
config. A store with a change log (Postgres: :mod:`hindsight_lab.store.pgsnapshot`) keeps these bytes stamped
with the change number they hold; the next open restores them and applies only the changes numbered after it, as
a memory applies another process's writes (:mod:`.changes`). A memory saves its state while it holds the
namespace's write lock, right after catching up, so the stamp is exact: every change up to it is in the state
and none after it.

The bytes are a compressed pickle read by an unpickler that builds only this package's classes and a few plain types
(containers, arrays, dates, compiled patterns): a database row cannot make the reader run anything else. The
state's functions (the classifier's embedder, the archive reader) are left out and the new memory's are put in;
the classifier's fitted model is left out and refitted at its first prediction. A state saved under another
:func:`fingerprint` — another format, package version, embedding model or config of what the state is derived
from — is never read.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import pickle
import zlib
from typing import Any, Callable, NamedTuple

from ..errors import StoreError

logger = logging.getLogger(__name__)

FORMAT = 1
"""Bump when what a state holds, or how it is derived from the records, changes."""

_PLAIN = {
    "builtins": {"set", "frozenset", "list", "dict", "tuple", "bytearray", "int", "float", "str", "bool"},
    "collections": {"Counter", "defaultdict", "OrderedDict", "deque"},
    "array": {"array", "_array_reconstructor"},
    "datetime": {"datetime", "date", "timedelta", "timezone"},
    "re": {"_compile"},
    "copyreg": {"_reconstructor"},
    "numpy": {"ndarray", "dtype"},
    "numpy.core.multiarray": {"_reconstruct", "scalar"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.dtypes": {"Float32DType", "Float64DType", "Int64DType", "Int8DType"},
}


class State(NamedTuple):
    """What a memory rebuilds at open, as of change ``seq``."""

    seq: int
    index: Any  # RecallIndex
    checked: dict[str, set[str]]
    contradictions: Any  # Contradictions
    triggers: Any  # TriggerState


def fingerprint(config: Any, embedding_model: str) -> str:
    """What a saved state depends on besides the records: this format, the package version, the embedding model
    and the config of the classifier, the evidence and the trigger rules."""
    from importlib import metadata

    try:  # the installed distribution's (the engine does not import the package above it)
        version = metadata.version("hindsight-lab")
    except metadata.PackageNotFoundError:
        version = "unknown"
    parts = {"format": FORMAT, "version": version, "embedding_model": embedding_model,
             "classifier": config.retrieval.classifier.model_dump(mode="json"),
             "episode": config.episode.model_dump(mode="json"),
             "triggers": config.reflect.triggers.model_dump(mode="json")}
    return hashlib.blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=16).hexdigest()


def dumps(state: State, functions: dict[str, Callable[..., Any]]) -> bytes:
    """The state as bytes; ``functions`` (by name) are left out by identity, and so is the classifier's model."""
    by_id = {id(fn): name for name, fn in functions.items()}
    model = state.index.classifier._model
    if model is not None:
        by_id[id(model)] = "unfitted"
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.persistent_id = lambda obj: by_id.get(id(obj))  # type: ignore[method-assign]
    pickler.dump(tuple(state))
    return zlib.compress(out.getvalue(), 1)  # a fifth of the size for a tenth of the pickling time


class _Reader(pickle.Unpickler):
    def __init__(self, data: bytes, functions: dict[str, Callable[..., Any]]) -> None:
        super().__init__(io.BytesIO(zlib.decompress(data)))
        self.functions = {**functions, "unfitted": None}

    def persistent_load(self, pid: Any) -> Any:
        if pid not in self.functions:
            raise pickle.UnpicklingError(f"unknown reference {pid!r}")
        return self.functions[pid]

    def find_class(self, module: str, name: str) -> Any:
        if name in _PLAIN.get(module, ()):
            return super().find_class(module, name)
        if module.startswith("hindsight_lab.") and "." not in name:
            found = super().find_class(module, name)
            if isinstance(found, type) and found.__module__ == module:  # a class of the package, defined there
                return found
        raise pickle.UnpicklingError(f"a saved state may not hold {module}.{name}")


def loads(data: bytes, functions: dict[str, Callable[..., Any]]) -> State:
    """The state back, the new memory's ``functions`` put where the saved one's were."""
    state = State(*_Reader(data, functions).load())
    state.index.classifier._dirty = True  # its model is refitted at the first prediction
    return state


def save(store: Any, config: Any, state: State, functions: dict[str, Callable[..., Any]]) -> bool:
    """Keep the state in the store (one that has ``save_snapshot``); False when it was not kept. A failure is
    logged, never raised: the state can always be rebuilt from the records."""
    try:
        return bool(store.save_snapshot(fingerprint(config, store.embedding_model_), state.seq,
                                        dumps(state, functions)))
    except (StoreError, pickle.PicklingError, TypeError, AttributeError) as exc:
        logger.warning("the memory's state was not saved (%s); the next open rebuilds it from the records", exc)
        return False


def load(store: Any, config: Any, functions: dict[str, Callable[..., Any]]) -> State | None:
    """The state saved for this config and model, or None (none saved, saved for another, newer than the store's
    change counter, or unreadable: logged, and the caller rebuilds from the records)."""
    if not callable(getattr(store, "load_snapshot", None)):
        return None
    found = store.load_snapshot(fingerprint(config, store.embedding_model_))
    if found is None:
        return None
    seq, data = found
    if seq > store.change_seq():
        logger.warning("the saved state (change %d) is newer than the store (change %d): rebuilding", seq,
                       store.change_seq())
        return None
    try:
        return loads(data, functions)._replace(seq=seq)
    except (pickle.UnpicklingError, zlib.error, EOFError, AttributeError, TypeError, ValueError, ImportError) as exc:
        logger.warning("the saved state could not be read (%s): rebuilding from the records", exc)
        return None
