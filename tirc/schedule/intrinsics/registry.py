"""The tensor intrinsic registry: a description and an implementation per name.

Built-ins are .tir files in `library/`, one module per family; intrinsic `NAME` is the pair of
functions `NAME_desc` and `NAME_impl`, and a comment line `## NAME: summary` gives its
one-line summary. User intrinsics (`--intrinsics FILE.json`) win on a name clash.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from tirc.ir.function import IRModule, PrimFunc
from tirc.text import parse

_SUMMARY = re.compile(r"^## (?P<name>\w+): (?P<summary>.+)$", re.MULTILINE)


@dataclass(frozen=True)
class TensorIntrin:
    name: str
    desc: PrimFunc
    impl: PrimFunc
    summary: str = ""
    origin: str = "built-in"  # or the file it came from


@cache
def builtin_intrinsics() -> dict[str, TensorIntrin]:
    """Every intrinsic of the shipped library, in file and definition order (parsed once:
    the library is immutable data)."""

    found: dict[str, TensorIntrin] = {}
    library = resources.files("tirc.schedule.intrinsics") / "library"
    for entry in sorted(library.iterdir(), key=lambda item: item.name):
        if not entry.name.endswith(".tir"):
            continue
        text = entry.read_text()
        module = parse(text, name=f"tirc/schedule/intrinsics/library/{entry.name}")
        summaries = {m["name"]: m["summary"].strip() for m in _SUMMARY.finditer(text)}
        found.update(_pairs(module, summaries, entry.name))
    return found


def _pairs(module: IRModule, summaries: dict[str, str], origin: str) -> dict[str, TensorIntrin]:
    pairs: dict[str, TensorIntrin] = {}
    for name, func in module.functions:
        if not name.endswith("_desc"):
            continue
        base = name[: -len("_desc")]
        impl_name = f"{base}_impl"
        if impl_name not in module:
            raise ValueError(f"{origin}: intrinsic {base} has a description but no {impl_name}")
        pairs[base] = TensorIntrin(base, func, module[impl_name], summaries.get(base, ""), origin)
    return pairs


def lookup(name: str, user: Mapping[str, Any] | None = None) -> TensorIntrin | None:
    """The intrinsic called `name`: the user's (`{"desc": PrimFunc, "impl": PrimFunc}` as the
    driver reads --intrinsics) first, then the built-in library."""
    entry = (user or {}).get(name)
    if entry is not None:
        if isinstance(entry, TensorIntrin):
            return entry
        return TensorIntrin(name, entry["desc"], entry["impl"], origin="--intrinsics")
    return builtin_intrinsics().get(name)
