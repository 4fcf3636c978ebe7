"""`tirc explain NAME`: the reference entry of a schedule primitive or a lowering pass, built
from what the code itself declares (the primitive's Signature, the pass's options, and the
module docstring with its before -> after sketch), so it cannot drift from the code.

docs/plans.md and docs/pipelines.md embed the same entries (see docs/generate.py).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import json
import sys
import typing
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError, Note
from tirc.driver.exit_code import ExitCode


@dataclass(frozen=True)
class Entry:
    """One thing `explain` knows: its name, what kind of thing it is, and its text."""

    name: str
    kind: str  # "primitive" or "pass"
    summary: str
    body: str  # markdown: parameters or options, then the module's docstring


def primitive_names() -> list[str]:
    # deferred: the schedule layer, only to explain a primitive
    from tirc.schedule import primitives

    return primitives.all_ops()


def pass_names() -> list[str]:
    # deferred: the transform layer, only to explain a pass
    from tirc.transform.registry import pass_names as names

    return names()


def all_names() -> list[str]:
    return sorted({*primitive_names(), *pass_names()})


def primitive_entry(op: str) -> Entry:
    # deferred: the schedule layer, only to explain a primitive
    from tirc.schedule import primitives

    entry = primitives.by_op(op)
    assert entry is not None, op
    signature = entry.signature
    doc = _module_doc(entry.apply)
    summary = signature.doc or _first_sentence(doc, op)
    lines = [f"TVM trace name: `{signature.tvm}`; returns {_OUTPUTS[signature.outputs]}.", ""]
    if signature.params:
        lines.append("Parameters (readable form; TVM's trace lists them in this order):")
        lines.append("")
        for param in signature.params:
            kind = _KINDS.get(param.kind.value, param.kind.value)
            default = "" if param.required else f" (optional, default `{_json(param.default)}`)"
            lines.append(f"- `{param.name}`: {kind}{default}")
    else:
        lines.append("No parameters.")
    if doc:
        lines += ["", doc]
    return Entry(op, "primitive", summary, "\n".join(lines))


def pass_entry(name: str) -> Entry:
    # deferred: the transform layer, only to explain a pass
    from tirc.transform.registry import lookup_pass

    klass = lookup_pass(name)
    doc = _module_doc(klass)
    summary = _first_sentence(doc, name)
    lines = [f"Expects {klass.expects.value}; leaves {klass.leaves.value}.", ""]
    fields = dataclasses.fields(klass)
    if fields:
        hints = typing.get_type_hints(klass)
        lines.append("Options (set in a pipeline: `name{option=value}` or a [[pass]] key):")
        lines.append("")
        for field in fields:
            wanted = getattr(hints.get(field.name), "__name__", str(hints.get(field.name)))
            lines.append(f"- `{field.name}`: {wanted}, default `{_json(field.default)}`")
    else:
        lines.append("No options.")
    if doc:
        lines += ["", doc]
    return Entry(name, "pass", summary, "\n".join(lines))


def lookup(name: str) -> Entry:
    """The entry called `name` (dashes and underscores alike, or a TVM trace name such as
    `Split`); a DiagnosticError with the nearest names otherwise."""
    primitives, passes = primitive_names(), pass_names()
    for candidate in (name, name.replace("-", "_")):
        if candidate in primitives:
            return primitive_entry(candidate)
    for candidate in (name, name.replace("_", "-")):
        if candidate in passes:
            return pass_entry(candidate)
    tvm = _tvm_names()
    if name in tvm:
        return primitive_entry(tvm[name])
    close = difflib.get_close_matches(name, [*primitives, *passes, *tvm], n=3, cutoff=0.6)
    close = list({_canonical(c, tvm): None for c in close})  # `split` and `Split` once
    notes = [Note(f"did you mean {' or '.join(repr(c) for c in close)}?")] if close else []
    notes.append(Note("`tirc explain` with no name lists every primitive and pass"))
    raise DiagnosticError.at(None, f"no schedule primitive or pass is called '{name}'", *notes)


def entry_text(entry: Entry) -> str:
    """The entry as plain text for a terminal."""
    title = f"{entry.name} ({'schedule primitive' if entry.kind == 'primitive' else 'pass'})"
    return f"{title}\n{'=' * len(title)}\n{entry.summary}\n\n{entry.body}\n"


def listing() -> str:
    """Every primitive and pass with its one-line summary."""
    rows = [("Schedule primitives (plan steps):", [primitive_entry(n) for n in primitive_names()])]
    rows.append(("Passes (pipeline entries):", [pass_entry(n) for n in pass_names()]))
    width = max(len(name) for name in all_names())
    lines: list[str] = []
    for heading, entries in rows:
        lines.append(heading)
        lines += [f"  {e.name:<{width}}  {_clip(e.summary)}".rstrip() for e in entries]
        lines.append("")
    lines.append("`tirc explain NAME` shows one of them.")
    return "\n".join(lines) + "\n"


def explain(name: str | None) -> int:
    """`tirc explain [NAME]`: print the entry, or with no name the list of all of them."""
    text = listing() if name is None else entry_text(lookup(name))
    sys.stdout.write(text)
    return ExitCode.OK


# -- helpers ----------------------------------------------------------------------------------

_OUTPUTS = {"none": "nothing", "one": "one handle (`out`)", "many": "a list of handles (`out`)"}
_KINDS = {
    "block": "a block handle",
    "loop": "a loop handle",
    "block_or_loop": "a block or loop handle",
    "blocks": "a list of block handles",
    "loops": "a list of loop handles",
    "location": "a loop handle, or -1 (the root) / -2 (inline)",
    "int": "an integer (or a sampled-integer handle)",
    "ints": "a list of integers (null: inferred; sampled handles allowed)",
    "bool": "true or false",
    "str": "a string",
    "value": "any JSON value",
    "index_map": 'an index map, `"lambda i, j: (j, i)"` (TVMScript lambda text)',
}


def _tvm_names() -> dict[str, str]:
    # deferred: the schedule layer, only to explain a primitive
    from tirc.schedule import primitives

    found = {}
    for op in primitive_names():
        entry = primitives.by_op(op)
        if entry is not None:
            found[entry.signature.tvm] = op
    return found


def _canonical(name: str, tvm: dict[str, str]) -> str:
    return tvm.get(name, name)


def _module_doc(function: object) -> str:
    module = inspect.getmodule(function)
    return _strip_doc(module.__doc__ or "") if module is not None else ""


def _strip_doc(doc: str) -> str:
    return inspect.cleandoc(doc) if doc else ""


def _first_sentence(doc: str, name: str) -> str:
    """The docstring's first paragraph, less a leading `name:`, up to its first full stop."""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    for prefix in (f"{name}:", f"{name.replace('_', '-')}:"):
        if paragraph.startswith(prefix):
            paragraph = paragraph[len(prefix) :].strip()
    end = paragraph.find(". ")
    sentence = paragraph if end < 0 else paragraph[: end + 1]
    return (sentence[:1].upper() + sentence[1:]) if sentence else ""


def _clip(text: str, width: int = 72) -> str:
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def _json(value: object) -> str:

    try:
        return json.dumps(value)
    except TypeError:
        return repr(value)
