"""What the golden oracles (oracle_*.py beside this file) share: reading a before half's
headers, building TVM's schedule of it, converting index maps to TVM's objects, writing the
after half, and the two regeneration loops: `regenerate` (refusals may differ from tirc's, and
are listed) and `regenerate_accepted` (TVM must accept every plan without `# error:`).

Imported by those scripts, which run under a Python that has TVM
(`/work/tvm-venv/bin/python tests/schedule/golden/oracle_<group>.py`); kept free of tirc
imports.

    befores(("split",))               -> [HERE/split/a.before.tir, ...]
    write_after(before, script)       -> HERE/split/a.after.tir (with its provenance line)
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
from collections.abc import Callable

import tvm
from tvm import s_tir
from tvm.s_tir.schedule import Trace
from tvm.script import tirx as T

HERE = pathlib.Path(__file__).resolve().parent


def header(text: str, key: str) -> str | None:
    """The value of the first `# key:` line, if there is one."""
    for line in text.splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def befores(folders: tuple[str, ...]) -> list[pathlib.Path]:
    """The before halves of the given folders, each folder's sorted by name."""
    return [path for folder in folders for path in sorted(HERE.glob(f"{folder}/*.before.tir"))]


def schedule(text: str) -> s_tir.Schedule:
    """TVM's schedule of a before half (a bare function is wrapped as `main`)."""
    mod = tvm.script.from_source(text)
    if not isinstance(mod, tvm.IRModule):
        mod = tvm.IRModule({"main": mod})
    return s_tir.Schedule(mod)


def tvm_value(value: object) -> object:
    """Index-map text (tirc's form) as the JSON of TVM's IndexMap object, which TVM's trace
    reader expects; everything else as it is."""
    if isinstance(value, list):
        return [tvm_value(item) for item in value]
    if isinstance(value, str) and value.startswith(("T.index_map", "lambda")):
        # A map may name the plan's sampled expressions (v4): TVM's trace keeps them as
        # variables of that name, which its replay binds to the sampled values.
        names = {name: tvm.tirx.Var(name, "int32") for name in re.findall(r"\bv\d+\b", value)}
        return tvm.ir.save_json(eval(value, {"T": T, **names}))  # noqa: S307 - our goldens
    return value


def tvm_plan(plan_text: str) -> list:
    """A `# plan:` header's steps with their index maps converted by tvm_value."""
    return [[i[0], tvm_value(i[1]), tvm_value(i[2]), i[3]] for i in json.loads(plan_text)]


def write_after(before: pathlib.Path, script: str) -> pathlib.Path:
    """Write TVM's printing as the after half of `before`, under a provenance line."""
    after = before.with_name(before.name.replace(".before.", ".after."))
    note = f"# {before.name} after its plan, as Apache TVM 0.27 prints it\n"
    after.write_text(note + script)
    return after


def regenerate(folders: tuple[str, ...], rewrite: Callable[[str], str] = lambda s: s) -> None:
    """For each before half of `folders` with its plan (and `# decisions:`), write TVM's result
    (through `rewrite`) where TVM accepts and tirc has no `# error:`; list the cases tirc
    refuses but TVM accepts (tirc is stricter on purpose there) and those TVM refuses."""
    for folder in folders:
        for before in sorted((HERE / folder).glob("*.before.tir")):
            text = before.read_text()
            plan = json.loads(header(text, "plan") or "[]")
            decisions = json.loads(header(text, "decisions") or "[]")
            sch = schedule(text)
            try:
                Trace.apply_json_to_schedule([plan, decisions], sch)
                accepted = True
            except Exception:  # noqa: BLE001 - any refusal counts
                accepted = False
            refused_by_tirc = header(text, "error") is not None
            if refused_by_tirc:
                if accepted:
                    print(f"{folder}/{before.name}: TVM accepts what tirc refuses")
                continue
            if not accepted:
                print(f"{folder}/{before.name}: TVM refuses the plan; no after file written")
                continue
            write_after(before, rewrite(sch.mod.script()))


def regenerate_accepted(
    folders: tuple[str, ...], rewrite: Callable[[str], str] = lambda s: s
) -> None:
    """For each before half of `folders` with a `# plan:` and no `# error:` header, write
    TVM's result (through `rewrite`); TVM must accept every such plan."""
    for before in befores(folders):
        text = before.read_text()
        plan = header(text, "plan")
        if plan is None or header(text, "error") is not None:
            continue
        sch = schedule(text)
        Trace.apply_json_to_schedule([json.loads(plan), []], sch)
        after = write_after(before, rewrite(sch.mod.script()))
        print(after.relative_to(HERE), file=sys.stderr)
