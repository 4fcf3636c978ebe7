"""Applying a plan: resolve each step's handles, run its primitive, name its outputs.

A step that cannot apply stops the run with a diagnostic naming the step (its number and
place in the plan file), the primitive, the failed precondition and the loops and blocks it
concerns. Nothing is written by a failed run: the caller gets an exception, not a module.
"""

from __future__ import annotations

import re
from typing import Any

from tirc.diagnostics import Diagnostic, DiagnosticError, Note, Source
from tirc.ir.expr import PrimExpr, const
from tirc.ir.function import IRModule
from tirc.schedule import primitives
from tirc.schedule.errors import ScheduleError
from tirc.schedule.index_map import IndexMap, parse_index_map
from tirc.schedule.locate import parsed_span, printed_span
from tirc.schedule.location import LocationMark
from tirc.schedule.plan import Plan, Ref, Step
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Signature
from tirc.schedule.sref import SRef
from tirc.text import print_module

_HANDLE_CHECK = {
    Kind.BLOCK: lambda v: isinstance(v, SRef) and v.is_block,
    Kind.LOOP: lambda v: isinstance(v, SRef) and v.is_loop,
    Kind.BLOCK_OR_LOOP: lambda v: isinstance(v, SRef),
    Kind.LOCATION: lambda v: isinstance(v, LocationMark) or (isinstance(v, SRef) and v.is_loop),
}


class _Failure(Exception):
    def __init__(self, message: str, notes: tuple[Note, ...] = ()):
        super().__init__(message)
        self.message, self.notes = message, notes


def apply_plan(
    module: IRModule, plan: Plan, context: dict[str, Any] | None = None
) -> tuple[IRModule, Plan]:
    """The scheduled module and the plan as applied (the readable trace)."""
    sch = Schedule(module, plan.func)
    sch.context = dict(context or {})
    env: dict[str, Any] = {}
    applied: list[Step] = []
    for number, step in enumerate(plan.steps, start=1):
        entry = primitives.by_op(step.op)
        assert entry is not None, step.op
        try:
            args = {
                name: _resolve(value, env, name, _kind_of(entry.signature, name))
                for name, value in step.args.items()
            }
            if step.decision is not None:
                args["decision"] = step.decision
            result = entry.apply(sch, **args)
            _bind(step, result, env)
        except ScheduleError as error:
            labels = _plan_labels(env)
            notes = _subject_notes(sch, error.subjects, number, labels)
            notes += [Note(_with_plan_names(text, labels)) for text in error.notes]
            message = _with_plan_names(error.message, labels)
            raise DiagnosticError(
                Diagnostic.error(
                    f"step {number} ({step.op}) cannot apply: {message}", step.span, *notes
                )
            ) from None
        except _Failure as failure:
            raise DiagnosticError(
                Diagnostic.error(
                    f"step {number} ({step.op}): {failure.message}", step.span, *failure.notes
                )
            ) from None
        applied.append(step)
    return sch.module, Plan(applied, sch.default_func, plan.source)


def _plan_labels(env: dict[str, Any]) -> dict[str, str]:
    """How the program calls each loop the plan has named (`loop j`), mapped to that
    description with the plan's name added (`loop j (plan: mj)`); the latest name a step
    gave wins, and a name the program already uses adds nothing. (Blocks go by the names the
    program gives them, which plans look them up by.)"""
    named: dict[int, tuple[SRef, str]] = {}
    for name, value in env.items():
        if isinstance(value, SRef) and value.is_valid and value.is_loop:
            named[id(value)] = (value, name)
    texts = [describe(sref) for sref, _ in named.values()]
    labels: dict[str, str] = {}
    for text, (sref, name) in zip(texts, named.values(), strict=True):
        if name != sref.loop.loop_var.name and texts.count(text) == 1:  # two alike: neither
            labels[text] = f"{text} (plan: {name})"
    return labels


def _with_plan_names(text: str, labels: dict[str, str]) -> str:
    """`text` with each loop the plan named described with that name too."""
    if not labels:
        return text
    # longest first, and never inside a longer name: `loop j` is not in `loop j_1`
    spelled = sorted(labels, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(item) + r"(?![\w.])" for item in spelled))
    return pattern.sub(lambda match: labels[match.group(0)], text)


def _subject_notes(
    sch: Schedule, subjects: tuple[SRef, ...], number: int, labels: dict[str, str]
) -> list[Note]:
    """A note per loop or block the error concerns, pointing at it in the input file, or
    where the input no longer shows it (an earlier step built it), in the program as it was
    printed before this step."""
    notes: list[Note] = []
    printed: Source | None = None
    for sref in subjects:
        span = parsed_span(sref) if sref.is_valid else None
        if span is None and sref.is_valid:
            try:
                state = sch.state_owning(sref)
            except ScheduleError:
                state = None
            if state is not None:
                if printed is None:
                    name = f"<the program before step {number}>"
                    printed = Source(name, print_module(sch.module))
                span = printed_span(sref, state, printed)
        where = "is here" if span is not None else "(no location in the program text)"
        notes.append(Note(f"{_with_plan_names(describe(sref), labels)} {where}", span))
    return notes


def _kind_of(signature: Signature, name: str) -> Kind:
    param = signature.param(name)
    assert param is not None, f"{signature.op} has no parameter {name}"  # the reader checked
    return param.kind


def _resolve(value: Any, env: dict[str, Any], name: str, kind: Kind) -> Any:
    if isinstance(value, Ref):
        if value.name not in env:
            raise _Failure(f"'{value.name}' (for {name}) is not the output of an earlier step")
        resolved = env[value.name]
        if isinstance(resolved, SRef) and not resolved.is_valid:
            raise _Failure(
                f"'{value.name}' (for {name}) names a loop or block an earlier step removed"
            )
        check = _HANDLE_CHECK.get(kind)
        if check is not None and not check(resolved):
            raise _Failure(f"'{value.name}' (for {name}) is not a {kind.value.replace('_', ' ')}")
        return resolved
    if isinstance(value, list):
        return [_resolve(item, env, name, _element_kind(kind)) for item in value]
    if isinstance(value, dict):
        return {key: _resolve(item, env, name, kind) for key, item in value.items()}
    if kind is Kind.INDEX_MAP and isinstance(value, str):
        return _index_map_with_values(value, env)
    return value


def _index_map_with_values(text: str, env: dict[str, Any]) -> str | IndexMap:
    """An index map that names earlier expression outputs (`j // (v4 * v5)`, as TVM's trace
    writes a map built from sampled factors) read here with their values; any other map stays
    text for its primitive to read (with the dtype its operand suggests)."""
    values: dict[str, PrimExpr] = {}
    for used in dict.fromkeys(re.findall(r"\bv\d+\b", text)):
        value = env.get(used)
        if isinstance(value, int) and not isinstance(value, bool):
            values[used] = const(value)
        elif isinstance(value, PrimExpr):
            values[used] = value
    return parse_index_map(text, names=values) if values else text


def _element_kind(kind: Kind) -> Kind:
    return {Kind.BLOCKS: Kind.BLOCK, Kind.LOOPS: Kind.LOOP, Kind.INTS: Kind.INT}.get(kind, kind)


def _bind(step: Step, result: Any, env: dict[str, Any]) -> None:
    if not step.outputs:
        return
    values = result if isinstance(result, (list, tuple)) else [result]
    if len(values) != len(step.outputs):
        raise _Failure(f"gives {len(values)} results but the plan names {len(step.outputs)}")
    for name, value in zip(step.outputs, values, strict=True):
        env[name] = value
