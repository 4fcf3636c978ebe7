"""The primitive registry: each primitive module registers its function with its Signature.

A primitive is `fn(sch: Schedule, **params) -> None | value | list`; it checks every
precondition first (raising ScheduleError) and only then rewrites through `sch.state`.
Importing this package imports every primitive module, which registers them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tirc.schedule.signature import Signature


@dataclass(frozen=True)
class Primitive:
    signature: Signature
    apply: Callable[..., Any]


_BY_OP: dict[str, Primitive] = {}
_BY_TVM: dict[str, Primitive] = {}


def primitive(signature: Signature) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        entry = Primitive(signature, function)
        _BY_OP[signature.op] = entry
        _BY_TVM[signature.tvm] = entry
        return function

    return register


def _load_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def by_op(op: str) -> Primitive | None:
    if not _BY_OP:
        _load_all()
    return _BY_OP.get(op)


def by_tvm_name(kind: str) -> Primitive | None:
    if not _BY_OP:
        _load_all()
    return _BY_TVM.get(kind)


def all_ops() -> list[str]:
    if not _BY_OP:
        _load_all()
    return sorted(_BY_OP)
