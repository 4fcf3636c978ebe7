"""The tensor intrinsic registry: a description and an implementation per name.

Built-ins are .tir files in `library/`, one module per family; intrinsic `NAME` is the pair of
functions `NAME_desc` and `NAME_impl`, and a comment line `## NAME: summary` gives its
one-line summary. A file may define families: `#% N: 64, 128, 256` (or, for parameters that
vary together, `#% ab, dtype: (f16, float16), (bf16, bfloat16)`) lists a parameter's values, and
each function and summary line that names `{N}` is written once per value, in order; each
function is parsed on the file's lines, so that spans (and a later pass's messages about an
intrinsic's code) point into the file. User intrinsics (`--intrinsics FILE.json`) win on a name
clash.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from tirc.ir.function import PrimFunc
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
    the library is immutable data). Each function is parsed at the lines the file has it on,
    so that a message about an intrinsic's code points into the file."""

    found: dict[str, TensorIntrin] = {}
    library = resources.files("tirc.schedule.intrinsics") / "library"
    for entry in sorted(library.iterdir(), key=lambda item: item.name):
        if not entry.name.endswith(".tir"):
            continue
        written = entry.read_text()
        name = f"tirc/schedule/intrinsics/library/{entry.name}"
        functions: dict[str, PrimFunc] = {}
        for text in family_texts(written, entry.name):
            functions.update(parse(text, name=name).functions)
        expanded = expand_families(written, entry.name)
        summaries = {m["name"]: m["summary"].strip() for m in _SUMMARY.finditer(expanded)}
        found.update(_pairs(functions, summaries, entry.name))
    return found


def expand_families(text: str, origin: str) -> str:
    """`text` with each function and `##` summary line that names family parameters written
    once per combination of their values, in the order the `#%` lines give them (other
    comments stay as they are)."""
    groups = _families(text, origin)
    if not groups:
        return text
    header, *functions = _FUNCTION.split(text)
    lines = [
        "".join(_instances(line, groups)) if line.startswith("## ") else line
        for line in header.splitlines(keepends=True)
    ]
    return "".join(lines) + "".join("".join(_instances(f, groups)) for f in functions)


def family_texts(text: str, origin: str) -> list[str]:
    """A text to parse for each instance of each function: the file's header, a blank line
    for each line of the functions before it, and the instance, on the lines the file has it
    on (a value never spans lines)."""
    groups = _families(text, origin)
    if not groups:
        return [text]
    header, *functions = _FUNCTION.split(text)
    texts: list[str] = []
    above = header
    for function in functions:
        texts += [above + instance for instance in _instances(function, groups)]
        above += "\n" * function.count("\n")
    return texts


_Families = list[tuple[tuple[str, ...], list[tuple[str, ...]]]]


def _families(text: str, origin: str) -> _Families:
    """The `#%` lines: each one's parameter names and rows of values."""
    groups: _Families = []
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
    return groups


def _instances(piece: str, groups: _Families) -> list[str]:
    """`piece` once per combination of the values of the families it names."""
    used = set(_PLACEHOLDER.findall(piece))
    chosen = [(names, rows) for names, rows in groups if used & set(names)]
    copies = []
    for combination in itertools.product(*(rows for _, rows in chosen)):
        values: dict[str, str] = {}
        for (names, _), row in zip(chosen, combination, strict=True):
            values.update(zip(names, row, strict=True))
        copies.append(_substitute(piece, values))
    return copies


def _substitute(piece: str, values: dict[str, str]) -> str:
    """`piece` with each `{NAME}` of a parameter in `values` replaced; other braces stay."""
    return _PLACEHOLDER.sub(lambda found: values.get(found[1], found[0]), piece)


def _pairs(
    functions: dict[str, PrimFunc], summaries: dict[str, str], origin: str
) -> dict[str, TensorIntrin]:
    pairs: dict[str, TensorIntrin] = {}
    for name, func in functions.items():
        if not name.endswith("_desc"):
            continue
        base = name[: -len("_desc")]
        impl = functions.get(f"{base}_impl")
        if impl is None:
            raise ValueError(f"{origin}: intrinsic {base} has a description but no {base}_impl")
        pairs[base] = TensorIntrin(base, func, impl, summaries.get(base, ""), origin)
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
