"""Regenerate the reference sections of docs/plans.md (every schedule primitive, with an example
run through tirc) and docs/pipelines.md (every pass), from the code and docs/examples/.

    python docs/generate.py           # rewrite the sections between the markers
    python docs/generate.py --check   # exit 1, naming the stale files, if they are out of date

Each entry is what `tirc explain NAME` prints; a primitive's example is the program in
docs/examples/ named by docs/examples/primitives.json, scheduled by its `setup` steps (the
"before") and then by its `steps` (the "after"), so the text shown is what tirc produces.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
EXAMPLES = DOCS / "examples"
BEGIN = "<!-- generated: {name}; edit docs/generate.py or docs/examples, not this -->"
END = "<!-- end generated: {name} -->"


def program_text(module: object) -> str:
    from tirc.text import print_module

    lines = print_module(module).splitlines()  # type: ignore[arg-type]
    while lines and (lines[0].startswith("# from tvm") or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines)


def apply_steps(module: object, steps: list[dict[str, object]], intrinsics: str | None) -> object:
    from tirc.driver.schedule import read_intrinsics
    from tirc.driver.source import read_source
    from tirc.schedule.apply import apply_plan
    from tirc.schedule.plan import read_plan

    context: dict[str, object] = {}
    if intrinsics is not None:
        context["intrinsics"] = read_intrinsics(read_source(str(EXAMPLES / intrinsics)))
    plan = read_plan(json.dumps({"version": 1, "func": "main", "steps": steps}), "<example>")
    return apply_plan(module, plan, context)[0]  # type: ignore[arg-type]


def primitive_example(op: str, example: dict[str, object]) -> list[str]:
    from tirc.ir.structural import find_difference
    from tirc.text import parse

    name = str(example["input"])
    intrinsics = example.get("intrinsics")
    setup = list(example.get("setup", []))  # type: ignore[call-overload]
    steps = list(example["steps"])  # type: ignore[call-overload]
    original = parse((EXAMPLES / name).read_text(), name=name)
    before = apply_steps(original, setup, intrinsics) if setup else original  # type: ignore[arg-type]
    after = apply_steps(original, setup + steps, intrinsics)  # type: ignore[arg-type]
    lines = [f"Example: [`examples/{name}`](examples/{name})"]
    if intrinsics:
        lines[0] += f" with the intrinsics of [`examples/{intrinsics}`](examples/{intrinsics})"
    plan = ",\n".join(f"  {json.dumps(step)}" for step in setup + steps)
    lines[0] += ", the plan"
    lines += ["", "```json", f"[\n{plan}\n]", "```", ""]
    if find_difference(before, after) is None:  # type: ignore[arg-type]
        lines += ["leaves the program as it was:", "", "```python", program_text(after), "```"]
        return lines
    shown = "after the setup steps" if setup else "before"
    lines += [f"{shown}:", "", "```python", program_text(before), "```", ""]
    lines += [f"after `{op}`:", "", "```python", program_text(after), "```"]
    return lines


def primitives_section() -> str:
    from tirc.driver.explain import primitive_entry, primitive_names

    examples = json.loads((EXAMPLES / "primitives.json").read_text())
    parts: list[str] = []
    for op in primitive_names():
        entry = primitive_entry(op)
        lines = [f"### {op}", "", entry.summary, "", entry.body, ""]
        if op in examples:
            lines += primitive_example(op, examples[op])
        else:
            lines.append("(No example yet: add one to docs/examples/primitives.json.)")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def passes_section() -> str:
    from tirc.driver.explain import pass_entry, pass_names

    parts = []
    for name in pass_names():
        entry = pass_entry(name)
        parts.append("\n".join([f"### {name}", "", entry.summary, "", entry.body]))
    return "\n\n".join(parts)


def default_pipelines_section() -> str:
    from tirc.ir.target import ALIASES, KINDS
    from tirc.transform.pipeline import SHIPPED, default_pipeline

    spellings = {**{name: name for name in KINDS}, **ALIASES}
    lines = []
    for file in SHIPPED:
        names = sorted(t for t, kind in spellings.items() if KINDS[kind].pipeline == file)
        targets = ", ".join(f"`{t}`" for t in names)
        pipeline = default_pipeline(file)
        passes = ", ".join(p.spelling() for p in pipeline.passes)
        link = f"[{file}.toml](../tirc/transform/pipelines/{file}.toml)"
        leaves = f"leaves `{pipeline.leaves.value}`"
        lines.append(f"- {link}, for {targets}, {leaves}: {passes}.")
    return "\n".join(lines)


def replace_section(text: str, name: str, body: str) -> str:
    begin, end = BEGIN.format(name=name), END.format(name=name)
    head, found, rest = text.partition(begin)
    if not found:
        raise SystemExit(f"the marker {begin!r} is missing")
    _, found, tail = rest.partition(end)
    if not found:
        raise SystemExit(f"the marker {end!r} is missing")
    return f"{head}{begin}\n\n{body}\n\n{end}{tail}"


def regenerated() -> dict[Path, str]:
    """Each generated file with its sections as the code makes them now."""
    sections = {
        DOCS / "plans.md": [("primitives", primitives_section)],
        DOCS / "pipelines.md": [
            ("default-pipelines", default_pipelines_section),
            ("passes", passes_section),
        ],
    }
    result = {}
    for path, parts in sections.items():
        text = path.read_text()
        for name, make in parts:
            text = replace_section(text, name, make())
        result[path] = text
    return result


def main(argv: list[str]) -> int:
    stale = []
    for path, text in regenerated().items():
        if path.read_text() != text:
            stale.append(path)
            if "--check" not in argv:
                path.write_text(text)
    if "--check" in argv and stale:
        names = ", ".join(str(p.relative_to(DOCS.parent)) for p in stale)
        print(f"out of date: {names}; run `python docs/generate.py`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
