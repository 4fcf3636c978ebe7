"""Reading decorators: `@T.prim_func(...)`, `@T.macro(...)` and `@I.ir_module`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tirc.text.builder.args import Param, Signature, expect_bool
from tirc.text.builder.values import Builtin, Invocation
from tirc.text.syntax import tree

if TYPE_CHECKING:
    from tirc.text.builder.expr import Evaluator


@dataclass(frozen=True)
class FunctionOptions:
    private: bool = False
    s_tir: bool | None = None  # None: not written


@dataclass(frozen=True)
class MacroOptions:
    hygienic: bool = True


@dataclass(frozen=True)
class ModuleOptions:
    pass


PRIM_FUNC_SIGNATURE = Signature(
    Param("private", False),
    Param("s_tir", None),
    Param("is_private", None, keyword_only=True),
    Param("check_well_formed", True, keyword_only=True),
    Param("persistent", False, keyword_only=True),
)


def _prim_func(ev: Evaluator, inv: Invocation) -> FunctionOptions:
    bound = PRIM_FUNC_SIGNATURE.bind(ev, inv)
    private = expect_bool(ev, bound["private"])
    if bound.value("is_private") is not None:
        private = expect_bool(ev, bound["is_private"])
    s_tir = None if bound.value("s_tir") is None else expect_bool(ev, bound["s_tir"])
    return FunctionOptions(private, s_tir)


def _macro(ev: Evaluator, inv: Invocation) -> MacroOptions:
    bound = Signature(Param("hygienic", True)).bind(ev, inv)
    return MacroOptions(expect_bool(ev, bound["hygienic"]))


def _ir_module(ev: Evaluator, inv: Invocation) -> ModuleOptions:
    Signature(Param("check_well_formed", True, keyword_only=True)).bind(ev, inv)
    return ModuleOptions()


PRIM_FUNC = Builtin("T.prim_func", _prim_func, "the T.prim_func decorator")
MACRO = Builtin("T.macro", _macro, "the T.macro decorator")
IR_MODULE = Builtin("I.ir_module", _ir_module, "the I.ir_module decorator")
DEFAULTS: dict[int, Any] = {
    id(PRIM_FUNC): FunctionOptions(),
    id(MACRO): MacroOptions(),
    id(IR_MODULE): ModuleOptions(),
}


def options(ev: Evaluator, decorators: tuple[tree.Expr, ...]) -> list[tuple[Any, tree.Expr]]:
    """Each decorator's options object (FunctionOptions, ...), or the value it evaluated to."""
    result = []
    for decorator in decorators:
        value = ev.evaluate(decorator)
        result.append((DEFAULTS.get(id(value), value), decorator))
    return result
