"""The primitive registry: each primitive module registers its function with its Signature.

A primitive is `fn(sch: Schedule, **params) -> None | value | list`; it checks every
precondition first (raising ScheduleError) and only then rewrites through `sch.state`.

Modules are imported on demand, by name, so a plan pays only for the primitives it uses:
primitive `split` lives in `split.py`, except the queries named in `SHARED_MODULES`; TVM's
instruction kind is the name without underscores, in CamelCase (`compute_at` is
`ComputeAt`, `reindex` is `ReIndex`), so `ComputeAt` finds `compute_at` by folding case and
underscores. tests/schedule/test_primitive_registry.py checks both rules against the modules.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from tirc.schedule.signature import Signature


@dataclass(frozen=True)
class Primitive:
    signature: Signature
    apply: Callable[..., Any]


# modules that define several primitives, and the ones they define
SHARED_MODULES: dict[str, tuple[str, ...]] = {
    "query": (
        "get_sblock",
        "get_loops",
        "get_child_blocks",
        "get_producers",
        "get_consumers",
        "get_output_blocks",
    ),
}

_BY_OP: dict[str, Primitive] = {}
_BY_TVM: dict[str, Primitive] = {}


def primitive(signature: Signature) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        entry = Primitive(signature, function)
        _BY_OP[signature.op] = entry
        _BY_TVM[signature.tvm] = entry
        return function

    return register


@cache
def _module_of() -> dict[str, str]:
    """Each primitive's name to the name of its module, from the file names alone."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        for op in SHARED_MODULES.get(info.name, (info.name,)):
            found[op] = info.name
    return found


def _fold(name: str) -> str:
    return name.replace("_", "").lower()


@cache
def _op_of_folded() -> dict[str, str]:
    return {_fold(op): op for op in _module_of()}


def by_op(op: str) -> Primitive | None:
    """The primitive called `op` in plans (`compute_at`), importing its module on first use."""
    entry = _BY_OP.get(op)
    if entry is None and op in _module_of():
        importlib.import_module(f"{__name__}.{_module_of()[op]}")
        entry = _BY_OP.get(op)
    return entry


def by_tvm_name(kind: str) -> Primitive | None:
    """The primitive whose TVM instruction kind is exactly `kind` (`ComputeAt`)."""
    op = _op_of_folded().get(_fold(kind))
    if op is None or by_op(op) is None:
        return None
    return _BY_TVM.get(kind)


def all_ops() -> list[str]:
    """Every primitive's name, without importing any of them."""
    return sorted(_module_of())


def load_all() -> dict[str, Primitive]:
    """Every primitive, each module imported: for listings and for the registry's tests."""
    return {op: entry for op in all_ops() if (entry := by_op(op)) is not None}
