"""`tirc schedule`: apply a plan to a program and write the scheduled program (and the plan
as applied, with --trace); on any error nothing is written.

Tensor intrinsics (--intrinsics) are read and parsed here, then handed to the plan's steps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tirc.diagnostics import DiagnosticError, Source, Span
from tirc.driver.defines import parse_defines
from tirc.driver.exit_code import ExitCode
from tirc.driver.output import write_output
from tirc.driver.program import module_text, parse_source
from tirc.driver.source import check_stdin_once, read_source
from tirc.text import parse

if TYPE_CHECKING:
    from tirc.ir.function import IRModule
    from tirc.schedule.plan import Plan


def schedule_file(
    path: str,
    plan_path: str,
    output: str,
    *,
    trace: str | None = None,
    intrinsics: str | None = None,
    defines: Sequence[str] = (),
) -> int:
    check_stdin_once([p for p in (path, plan_path, intrinsics) if p is not None])
    module = parse_source(read_source(path), parse_defines(defines))
    scheduled, applied = apply_plan_file(module, plan_path, intrinsics)
    text = module_text(scheduled)
    # The trace first: if stdout is the output, a failure writing the trace file still
    # leaves nothing written.
    if trace is not None:
        write_output(trace, applied.to_json(), keep_identical=True)
    write_output(output, text, keep_identical=True)
    return ExitCode.OK


def apply_plan_file(
    module: IRModule, plan_path: str, intrinsics: str | None = None
) -> tuple[IRModule, Plan]:
    """`module` scheduled by the plan in `plan_path`, and the plan as applied."""
    return apply_plan_source(module, read_source(plan_path), intrinsics)


def apply_plan_source(
    module: IRModule, plan_source: Source, intrinsics: str | None = None
) -> tuple[IRModule, Plan]:
    """`module` scheduled by the plan text in `plan_source` (a file's, or the Python API's
    JSON value written out), with the tensor intrinsics in the file `intrinsics`, and the plan
    as applied: the one way both the command line and the API apply a plan."""
    from tirc.schedule.apply import apply_plan  # deferred: the schedule layer, only with a plan
    from tirc.schedule.plan import read_plan  # deferred: the schedule layer, only with a plan

    plan = read_plan(plan_source.text, plan_source.name)
    context: dict[str, Any] = {}
    if intrinsics is not None:
        context["intrinsics"] = read_intrinsics(read_source(intrinsics))
    return apply_plan(module, plan, context)


def read_intrinsics(source: Source) -> dict[str, dict[str, Any]]:
    """`{name: {"desc": <tir>, "impl": <tir>}}` as `{name: {"desc": PrimFunc, "impl": ...}}`.

    A parse error in an embedded program is located in that program, named after the file
    and the entry (`intrinsics.json[dp4a.desc]:3:5`).
    """
    try:
        data = json.loads(source.text)
    except json.JSONDecodeError as error:
        span = Span(source, error.pos, min(error.pos + 1, len(source.text)))
        raise DiagnosticError.at(span, f"the intrinsics are not valid JSON: {error.msg}") from None
    whole = Span(source, 0, min(1, len(source.text)))
    if not isinstance(data, dict):
        raise DiagnosticError.at(
            whole, 'intrinsics are a JSON object: {name: {"desc": <tir>, "impl": <tir>}}'
        )

    result: dict[str, dict[str, Any]] = {}
    for name, entry in data.items():
        at = _key_span(source, name) or whole
        if not isinstance(entry, dict) or set(entry) != {"desc", "impl"}:
            raise DiagnosticError.at(at, f'intrinsic "{name}" needs exactly "desc" and "impl"')
        functions: dict[str, Any] = {}
        for part in ("desc", "impl"):
            text = entry[part]
            if not isinstance(text, str):
                raise DiagnosticError.at(at, f'the "{part}" of intrinsic "{name}" is not text')
            module = parse(text, name=f"{source.name}[{name}.{part}]")
            if len(module.functions) != 1:
                raise DiagnosticError.at(
                    at, f'the "{part}" of intrinsic "{name}" must hold exactly one function'
                )
            functions[part] = module.functions[0][1]
        result[name] = functions
    return result


def _key_span(source: Source, name: str) -> Span | None:
    needle = json.dumps(name)
    at = source.text.find(needle)
    return Span(source, at, at + len(needle)) if at >= 0 else None
