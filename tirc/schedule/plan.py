"""Plans as data: read either JSON form into Steps, and write the readable form back.

TVM's trace: `[[[kind, inputs, attrs, outputs], ...], decisions]`; the readable form:
`{"version": 1, "func": "main", "steps": [{"op": ..., <param>: ..., "out": ...}]}`. Both
become the same Steps; errors point at the step in the plan file. A bare list of readable
steps (as docs/plans.md shows each primitive) reads as the readable form, and a bare list of
TVM instructions as a trace without decisions. Names from before TVM's sblock rename
(`GetBlock`, `get_block`) read as today's.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from tirc.diagnostics import DiagnosticError, Note, Source, Span
from tirc.schedule import primitives
from tirc.schedule.signature import Kind, Signature


@dataclass(frozen=True)
class Ref:
    """A reference to an earlier step's output by name (`"l1"`)."""

    name: str


@dataclass
class Step:
    op: str
    args: dict[str, Any]
    outputs: list[str]
    span: Span | None = None
    decision: Any = None  # the value a sampling step takes

    def to_json(self) -> dict[str, Any]:
        entry = primitives.by_op(self.op)
        many = entry is None or entry.signature.outputs == "many"
        result: dict[str, Any] = {"op": self.op}
        for name, value in self.args.items():
            param = entry.signature.param(name) if entry is not None else None
            if param is not None and not param.required and value == param.default:
                continue  # an option left at its default reads as noise in a trace
            result[name] = _unref(value)
        if self.decision is not None:
            result["decision"] = self.decision
        if self.outputs or many:
            result["out"] = self.outputs if many else self.outputs[0]
        return result


@dataclass
class Plan:
    steps: list[Step]
    func: str | None = None
    source: Source | None = None

    def to_json(self) -> str:
        # One step a line: a trace diffs and reads like a list of commands.
        func = json.dumps(self.func or "main")
        lines = ["{", '  "version": 1,', f'  "func": {func},', '  "steps": [']
        rows = [f"    {json.dumps(step.to_json())}" for step in self.steps]
        lines.append(",\n".join(rows))
        lines += ["  ]", "}"]
        return "\n".join(lines) + "\n"


def _unref(value: Any) -> Any:
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, list):
        return [_unref(item) for item in value]
    if isinstance(value, dict):
        return {key: _unref(item) for key, item in value.items()}
    return value


# -- reading --------------------------------------------------------------------------------


# What a plan may be, for the message when it is none of them.
PLAN_FORMS = (
    'a plan is {"version": 1, "steps": [{"op": ...}, ...]}, a bare list of such steps, '
    "TVM's trace [[instruction, ...], decisions], or a bare list of TVM instructions "
    "[kind, inputs, attrs, outputs]"
)
# Primitives TVM renamed when blocks became sblocks: old name -> today's.
TVM_ALIASES = {"GetBlock": "GetSBlock"}
OP_ALIASES = {"get_block": "get_sblock"}
_TOP_LEVEL = r"^\s*\["  # the elements of a plan that is a bare list


def read_plan(text: str, name: str = "<plan>") -> Plan:
    source = Source(name, text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        span = Span(source, error.pos, error.pos + 1)
        raise DiagnosticError.at(span, f"the plan is not valid JSON: {error.msg}") from None
    if isinstance(data, dict):
        return _read_readable(data, source)
    if isinstance(data, list):
        if all(isinstance(item, dict) for item in data):  # [{"op": ...}, ...]
            return _read_readable({"version": 1, "steps": data}, source, _TOP_LEVEL)
        if is_instruction(data[0]):  # [["GetSBlock", [], ["C", "main"], ["b0"]], ...]
            return _read_trace([data, []], source, _TOP_LEVEL)
        if isinstance(data[0], list) and (not data[0] or isinstance(data[0][0], list)):
            return _read_trace(data, source)  # [[instruction, ...], decisions]
    raise DiagnosticError.at(Span(source, 0, 1), f"not a plan: {PLAN_FORMS}")


def is_instruction(value: Any) -> bool:
    """Whether `value` looks like one TVM trace instruction: [kind, inputs, attrs, outputs]."""
    return isinstance(value, list) and len(value) == 4 and isinstance(value[0], str)


def _step_offsets(text: str, pattern: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each element of the array `pattern` leads to."""
    match = re.search(pattern, text)
    if match is None:
        return []
    decoder = json.JSONDecoder()
    offsets: list[tuple[int, int]] = []
    index = match.end()
    while True:
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        if index >= len(text) or text[index] == "]":
            return offsets
        start = index
        try:
            _, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            return offsets
        offsets.append((start, index))


def _span_for(source: Source, offsets: list[tuple[int, int]], index: int) -> Span | None:
    """The step's JSON element, cut at the end of its first line."""
    if index < len(offsets):
        start, end = offsets[index]
        newline = source.text.find("\n", start, end)
        return Span(source, start, newline if newline > start else end)
    return None


def _signature(op: str, span: Span | None, tvm: bool) -> Signature:
    if tvm:
        entry = primitives.by_tvm_name(TVM_ALIASES.get(op, op))
    else:
        entry = primitives.by_op(OP_ALIASES.get(op, op))
    if entry is None:
        known = primitives.all_ops()
        if tvm:
            known = [entry.signature.tvm for entry in primitives.load_all().values()]
        close = difflib.get_close_matches(op, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise DiagnosticError.at(span, f"unknown schedule primitive '{op}'{hint}")
    return entry.signature


def _read_trace(data: list[Any], source: Source, steps_at: str = r"^\s*\[\s*\[") -> Plan:
    """`data` is [instructions, decisions]; `steps_at` leads to the instructions' list."""
    instructions = data[0]
    decisions = {int(i): v for i, v in (data[1] if len(data) > 1 else [])}
    offsets = _step_offsets(source.text, steps_at)
    steps = []
    for index, instruction in enumerate(instructions):
        span = _span_for(source, offsets, index)
        if not (isinstance(instruction, list) and len(instruction) == 4):
            raise DiagnosticError.at(span, "an instruction is [kind, inputs, attrs, outputs]")
        kind, inputs, attrs, outputs = instruction
        signature = _signature(kind, span, tvm=True)
        args = _bind_trace(signature, inputs, attrs, span)
        steps.append(
            Step(signature.op, args, [str(o) for o in outputs], span, decisions.get(index))
        )
    func = None
    for step in steps:
        if step.op == "get_sblock" and step.args.get("func_name"):
            func = step.args["func_name"]
            break
    return Plan(steps, func, source)


def _trace_value(value: Any, kind: Kind, is_input: bool = True) -> Any:
    """A TVM trace input or attr as a plain value; strings naming outputs become Refs."""
    if isinstance(value, list):
        return [_trace_value(item, kind, is_input) for item in value]
    if isinstance(value, dict):
        return {key: _trace_value(item, kind, is_input) for key, item in value.items()}
    if isinstance(value, str):
        if value == "None":
            return None
        if is_input and len(value) >= 2 and value[0] == value[-1] == '"':
            # TVM quotes string inputs without escaping what is inside ("\"shared\"",
            # "\"{"a": 1}\""), and reads them back by dropping the quotes: so do we. An
            # attr is written as it is (["CacheRead", [...], [0, "shared"], ...]): quotes
            # there are part of the string.
            return value[1:-1]
        if kind in (Kind.STR, Kind.INDEX_MAP):
            return value
        if re.fullmatch(r"[blv]\d+", value):
            return Ref(value)
    return value


def _bind_trace(
    signature: Signature, inputs: list[Any], attrs: list[Any], span: Span | None
) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for values, params in ((inputs, signature.inputs), (attrs, signature.attrs)):
        is_input = params is signature.inputs
        position = 0
        for param in params:
            if param.variadic:
                args[param.name] = [
                    _trace_value(v, param.kind, is_input) for v in values[position:]
                ]
                position = len(values)
            elif position < len(values):
                args[param.name] = _trace_value(values[position], param.kind, is_input)
                position += 1
            elif param.required:
                raise DiagnosticError.at(span, f"{signature.tvm} is missing its '{param.name}'")
            else:
                args[param.name] = param.default
        if position < len(values):
            raise DiagnosticError.at(
                span, f"{signature.tvm} has {len(values) - position} arguments too many"
            )
    return args


def _read_readable(
    data: dict[str, Any], source: Source, steps_at: str = r'"steps"\s*:\s*\['
) -> Plan:
    """`data` is the readable form; `steps_at` leads to its steps' list in the text."""
    steps_data = data.get("steps")
    if not isinstance(steps_data, list):
        raise DiagnosticError.at(Span(source, 0, 1), 'a plan object needs a "steps" list')
    version = data.get("version", 1)
    if version != 1:
        raise DiagnosticError.at(
            Span(source, 0, 1), f"plan version {version} is not supported (1 is)"
        )
    offsets = _step_offsets(source.text, steps_at)
    steps = []
    defined: set[str] = set()  # outputs of the steps so far
    for index, item in enumerate(steps_data):
        span = _span_for(source, offsets, index)
        if not isinstance(item, dict) or "op" not in item:
            raise DiagnosticError.at(span, 'a step is an object with an "op"')
        signature = _signature(str(item["op"]), span, tvm=False)
        known = {p.name for p in signature.params} | {"op", "out", "decision"}
        extra = sorted(set(item) - known)
        if extra:
            close = difflib.get_close_matches(extra[0], sorted(known), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise DiagnosticError.at(
                span,
                f"step '{signature.op}' has no parameter '{extra[0]}'{hint}",
                Note(f"its parameters: {', '.join(p.name for p in signature.params)}"),
            )
        args: dict[str, Any] = {}
        for param in signature.params:
            if param.name in item:
                args[param.name] = _readable_value(item[param.name], param.kind, defined)
            elif param.required:
                raise DiagnosticError.at(span, f"step '{signature.op}' needs '{param.name}'")
            else:
                args[param.name] = param.default
        out = item.get("out", [])
        outputs = [out] if isinstance(out, str) else [str(o) for o in out]
        defined.update(outputs)
        steps.append(Step(signature.op, args, outputs, span, item.get("decision")))
    return Plan(steps, data.get("func"), source)


_HANDLE_KINDS = {
    Kind.BLOCK,
    Kind.LOOP,
    Kind.BLOCK_OR_LOOP,
    Kind.BLOCKS,
    Kind.LOOPS,
    Kind.LOCATION,
    Kind.INT,
    Kind.INTS,
}


def _readable_value(value: Any, kind: Kind, defined: set[str]) -> Any:
    """Handles are strings where a handle is expected; where any value is (an annotation,
    categorical candidates), a string is a handle only if an earlier step defined it."""
    if kind in _HANDLE_KINDS:
        if isinstance(value, str):
            return Ref(value)
        if isinstance(value, list):
            return [Ref(v) if isinstance(v, str) else v for v in value]
    if kind is Kind.VALUE:
        if isinstance(value, str) and value in defined:
            return Ref(value)
        if isinstance(value, list):
            return [_readable_value(item, kind, defined) for item in value]
    return value
