"""The tensor intrinsic registry: a description and an implementation per name.

Built-ins are .tir files in `library/`, one module per family; intrinsic `NAME` is the pair of
functions `NAME_desc` and `NAME_impl`, and a comment line `## NAME: summary` gives its
one-line summary. A file may define families: `#% N: 64, 128, 256` (or, for parameters that
vary together, `#% ab, dtype: (f16, float16), (bf16, bfloat16)`) lists a parameter's values, and
each function and summary line that names `{N}` is written once per value, in order. User
intrinsics (`--intrinsics FILE.json`) win on a name clash.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from tirc.ir.function import IRModule, PrimFunc
from tirc.text import parse

_SUMMARY = re.compile(r"^## (?P<name>\w+): (?P<summary>.+)$", re.MULTILINE)
_PARAMETERS = re.compile(r"^#% (?P<names>\w+(?:, *\w+)*): (?P<rows>.+)$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_FUNCTION = re.compile(r"^(?=    @T\.prim_func)", re.MULTILINE)


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
        written = entry.read_text()
        text = expand_families(written, entry.name)
        name = f"tirc/schedule/intrinsics/library/{entry.name}"
        if text != written:  # its lines are not the file's: say so in any located message
            name += " (families written out)"
        module = parse(text, name=name)
        summaries = {m["name"]: m["summary"].strip() for m in _SUMMARY.finditer(text)}
        found.update(_pairs(module, summaries, entry.name))
    return found


def expand_families(text: str, origin: str) -> str:
    """`text` with each function and `##` summary line that names family parameters written
    once per combination of their values, in the order the `#%` lines give them (other
    comments stay as they are)."""
    groups: list[tuple[tuple[str, ...], list[tuple[str, ...]]]] = []
    for found in _PARAMETERS.finditer(text):
        names = tuple(name.strip() for name in found["names"].split(","))
        rows: list[tuple[str, ...]]
        if len(names) == 1:
            rows = [(value.strip(),) for value in found["rows"].split(",")]
        else:
            cells = re.findall(r"\(([^)]*)\)", found["rows"])
            rows = [tuple(value.strip() for value in cell.split(",")) for cell in cells]
        if not rows or any(len(row) != len(names) for row in rows):
            raise ValueError(f"{origin}: '#% {found['names']}' needs rows of {len(names)} values")
        groups.append((names, rows))

    def instances(piece: str) -> str:
        used = set(_PLACEHOLDER.findall(piece))
        chosen = [(names, rows) for names, rows in groups if used & set(names)]
        copies = []
        for combination in itertools.product(*(rows for _, rows in chosen)):
            values: dict[str, str] = {}
            for (names, _), row in zip(chosen, combination, strict=True):
                values.update(zip(names, row, strict=True))
            copies.append(_substitute(piece, values))
        return "".join(copies)

    if not groups:
        return text
    header, *functions = _FUNCTION.split(text)
    lines = [
        instances(line) if line.startswith("## ") else line
        for line in header.splitlines(keepends=True)
    ]
    return "".join(lines) + "".join(instances(function) for function in functions)


def _substitute(piece: str, values: dict[str, str]) -> str:
    """`piece` with each `{NAME}` of a parameter in `values` replaced; other braces stay."""
    return _PLACEHOLDER.sub(lambda found: values.get(found[1], found[0]), piece)


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
