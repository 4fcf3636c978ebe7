"""The names a TVMScript file starts with: the `T` namespace (tirx, and its legacy name tir),
the `I` namespace (ir), and Python's `range`.

`T` gathers the builtins of every builder module, the dtype constructors (`T.float32`,
`T.int32x4`, ...) and the annotations `T.handle` and `T.let`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from tirc.ir import arith
from tirc.ir import dtype as dt
from tirc.ir.stmt import Attrs, TargetAttr
from tirc.text.builder import buffers, loops, ops, sblocks, threads
from tirc.text.builder.args import (
    Param,
    Signature,
    expect_attrs,
    expect_attrs_value,
    expect_dtype,
    expect_str,
)
from tirc.text.builder.decorators import IR_MODULE, MACRO, PRIM_FUNC
from tirc.text.builder.expr import CALLERS, Evaluator
from tirc.text.builder.values import (
    Builtin,
    DTypeValue,
    HandleType,
    Invocation,
    LetAnnotation,
    Namespace,
)
from tirc.text.syntax import tree

VECTOR_LANES = (2, 3, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class SymbolicShape:
    """`n = TypeVar("n")` before a module: each function whose signature mentions `n` gets
    its own int64 shape variable `n`, as TVM prints dynamic shapes."""

    name: str
    description: str = "a symbolic shape (TypeVar)"


def _type_var(ev: Evaluator, inv: Invocation) -> SymbolicShape:
    bound = Signature("name").bind(ev, inv)
    name = expect_str(ev, bound["name"])
    if inv.targets and inv.targets[0] != name:
        raise ev.error(inv.span, f"TypeVar {name!r} must be assigned to a name {name!r}")
    return SymbolicShape(name)


@dataclass(frozen=True)
class ModuleAttrs:
    """`I.module_attrs({...})` in a module class: attributes of the IRModule."""

    attrs: Attrs
    description: str = "module attributes"


def _module_attrs(ev: Evaluator, inv: Invocation) -> ModuleAttrs:
    bound = Signature("attrs").bind(ev, inv)
    return ModuleAttrs(expect_attrs(ev, bound["attrs"]))


def _index_map(ev: Evaluator, inv: Invocation) -> Any:
    bound = Signature(Param("mapping"), Param("inverse_index_map", None, keyword_only=True)).bind(
        ev, inv
    )
    return bound.value("mapping")


def _target(ev: Evaluator, inv: Invocation) -> TargetAttr:
    """`T.target({"kind": "cuda", ...})` (or `T.target("llvm")`): a target as an attribute
    value, as TVM prints the `target` of a function."""
    bound = Signature("config").bind(ev, inv)
    config = ev.check_value(bound.value("config"))
    if isinstance(config, dict):
        return TargetAttr(expect_attrs_value(ev, config, bound["config"].span), span=inv.span)
    if isinstance(config, str):
        return TargetAttr(config, span=inv.span)
    what = arith.describe(config)
    raise ev.error(bound["config"].span, f"T.target takes a dict or a string, not {what}")


def construct_handle(ev: Evaluator, inv: Invocation) -> HandleType:
    """`T.handle("float32", "shared")`: a pointer type."""
    bound = Signature(Param("dtype", None), Param("storage_scope", "global")).bind(ev, inv)
    element = None if bound.value("dtype") is None else expect_dtype(ev, bound["dtype"])
    return HandleType(element, expect_str(ev, bound["storage_scope"]))


def dtype_members() -> dict[str, Any]:
    members: dict[str, Any] = {}
    for name in dt.SCALAR_NAMES:
        if name == "handle":
            continue
        members[name] = DTypeValue(dt.parse_dtype(name), name)
        if name != "bool":
            for lanes in VECTOR_LANES:
                vector = f"{name}x{lanes}"
                members[vector] = DTypeValue(dt.parse_dtype(vector), vector)
    return members


@cache
def tir_namespace() -> Namespace:
    members: dict[str, Any] = {}
    members.update(ops.builtins())
    members.update(dtype_members())
    for table in (buffers.BUILTINS, loops.BUILTINS, sblocks.BUILTINS, threads.BUILTINS):
        members.update(table)
    members.update(
        {
            "handle": HandleType(),
            "let": LetAnnotation(),
            "prim_func": PRIM_FUNC,
            "macro": MACRO,
            "index_map": Builtin("T.index_map", _index_map),
            "target": Builtin("T.target", _target),
        }
    )
    return Namespace("T", members, "the T namespace")


@cache
def ir_namespace() -> Namespace:
    return Namespace(
        "I",
        {"ir_module": IR_MODULE, "module_attrs": Builtin("I.module_attrs", _module_attrs)},
        "the I namespace",
    )


def global_names() -> dict[str, Any]:
    """What every file can use without importing it (the printed header imports are comments)."""
    return {
        "T": tir_namespace(),
        "I": ir_namespace(),
        "range": loops.RANGE_BUILTIN,
        "TypeVar": Builtin("TypeVar", _type_var),
    }


# `from tvm.script import <module> as <alias>`: which namespace each module is.
SCRIPT_MODULES = {"tirx": tir_namespace, "tir": tir_namespace, "ir": ir_namespace}
LEGACY_MODULES = frozenset({"tir"})


@CALLERS.register(HandleType)
def _call_handle(ev: Evaluator, callee: HandleType, inv: Invocation, node: tree.Call | None) -> Any:
    return construct_handle(ev, inv)
