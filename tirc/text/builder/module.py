"""Building the IRModule of a whole file: imports, parameters, macros, and either one
`@I.ir_module` class of functions or bare `@T.prim_func` functions.

Every function is built even after another failed, so one run reports the errors of all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tirc.diagnostics import Diagnostic, DiagnosticError, Note, Source, Span
from tirc.ir import dtype as dt
from tirc.ir.expr import SUBROUTINE_PREFIX, Call, PrimExpr
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.node import IRError
from tirc.ir.stmt import EMPTY_ATTRS, Attrs

# the modules that register rules into expr's and stmt's tables (attributes, calls of types,
# macros and lambdas, subscripts, `for` loops; namespace.py, imported below, calls of T.handle);
# this is the one place that loads them
from tirc.text.builder import attributes, loops, macro, ops, subscripts  # noqa: F401
from tirc.text.builder.args import dtype_of
from tirc.text.builder.context import CONSTRUCTION_ERRORS, BuildError, Context, SilentError
from tirc.text.builder.decorators import FunctionOptions, MacroOptions, ModuleOptions, options
from tirc.text.builder.function import build_function
from tirc.text.builder.namespace import LEGACY_MODULES, SCRIPT_MODULES, ModuleAttrs, global_names
from tirc.text.builder.ops import call_argument
from tirc.text.builder.params import Define, Parameters
from tirc.text.builder.scope import Scope
from tirc.text.builder.stmt import Builder
from tirc.text.builder.values import Builtin, Invocation, Macro, Namespace
from tirc.text.syntax import tree

SCRIPT_PACKAGE = "tvm.script"


@dataclass
class Unit:
    """What the top level of a file declares, gathered before any function is built."""

    functions: list[tuple[tree.FunctionDef, FunctionOptions, Scope]] = field(default_factory=list)
    attrs: Attrs = EMPTY_ATTRS
    is_class: bool = False
    legacy: bool = False


class ModuleBuilder:
    def __init__(self, source: Source, defines: Mapping[str, Define] | None):
        self.context = Context(source)
        self.scope = Scope(names=global_names()).child()
        self.builder = Builder(self.context, self.scope)
        self.parameters = Parameters(defines)
        self.unit = Unit()

    def collect(self, stmts: tuple[tree.Stmt, ...], scope: Scope, in_class: bool) -> None:
        for stmt in stmts:
            try:
                self.collect_one(stmt, scope, in_class)
            except BuildError as error:
                self.context.report(error)
            except CONSTRUCTION_ERRORS as problem:
                self.context.report(self.builder.error(stmt, str(problem)))
            except SilentError:
                pass

    def collect_one(self, stmt: tree.Stmt, scope: Scope, in_class: bool) -> None:
        builder = self.builder
        if isinstance(stmt, tree.Import):
            self.import_names(stmt, scope)
        elif isinstance(stmt, (tree.Assign, tree.AnnAssign)):
            self.parameters.assign(builder, stmt, scope)
        elif isinstance(stmt, tree.FunctionDef):
            self.definition(stmt, scope)
        elif isinstance(stmt, tree.ClassDef) and not in_class:
            self.module_class(stmt, scope)
        elif isinstance(stmt, tree.ExprStmt):
            self.expression(stmt, scope, in_class)
        elif not isinstance(stmt, tree.Pass):
            where = "a module class" if in_class else "the top of a file"
            raise builder.error(stmt, f"this statement cannot be at {where}")

    def import_names(self, stmt: tree.Import, scope: Scope) -> None:
        if stmt.module is None or not stmt.module.startswith(SCRIPT_PACKAGE):
            return  # `import tvm` and friends: nothing to bind
        for name, alias in stmt.names:
            namespace = SCRIPT_MODULES.get(name)
            if namespace is not None:
                scope.bind(alias or name, namespace())
                if name in LEGACY_MODULES:
                    self.unit.legacy = True

    def definition(self, stmt: tree.FunctionDef, scope: Scope) -> None:
        builder = self.builder
        saved = builder.scope
        builder.scope = scope
        try:
            decorations = options(builder, stmt.decorators)
        finally:
            builder.scope = saved
        for value, _ in decorations:
            if isinstance(value, FunctionOptions):
                self.check_unique(stmt)
                self.unit.functions.append((stmt, value, scope))
                return
            if isinstance(value, MacroOptions):
                scope.bind(stmt.name, Macro(stmt.name, stmt, scope, value.hygienic))
                return
        raise builder.error(
            Span(self.context.source, stmt.name_start, stmt.name_start + len(stmt.name)),
            f"function '{stmt.name}' needs a decorator: @T.prim_func or @T.macro",
        )

    def check_unique(self, stmt: tree.FunctionDef) -> None:
        for earlier, _, _ in self.unit.functions:
            if earlier.name == stmt.name:
                source = self.context.source
                first = Span(source, earlier.name_start, earlier.name_start + len(earlier.name))
                raise self.builder.error(
                    Span(source, stmt.name_start, stmt.name_start + len(stmt.name)),
                    f"two functions are named '{stmt.name}'",
                    Note("the first is here", first),
                )

    def module_class(self, stmt: tree.ClassDef, scope: Scope) -> None:
        saved = self.builder.scope
        self.builder.scope = scope
        try:
            decorations = options(self.builder, stmt.decorators)
        finally:
            self.builder.scope = saved
        if not any(isinstance(value, ModuleOptions) for value, _ in decorations):
            raise self.builder.error(
                Span(self.context.source, stmt.name_start, stmt.name_start + len(stmt.name)),
                f"class '{stmt.name}' needs the decorator @I.ir_module",
            )
        if self.unit.is_class:
            raise self.builder.error(stmt, "a file holds one @I.ir_module class")
        self.unit.is_class = True
        first = len(self.unit.functions)
        self.collect(stmt.body, scope.child(), in_class=True)
        # `Module.f(...)` in a function: a call of function f of the module
        members = {
            node.name: Builtin(f"{stmt.name}.{node.name}", subroutine_call(node))
            for node, _, _ in self.unit.functions[first:]
        }
        scope.bind(stmt.name, Namespace(stmt.name, members, "the module's functions"))

    def expression(self, stmt: tree.ExprStmt, scope: Scope, in_class: bool) -> None:
        if isinstance(stmt.value, tree.Constant) and isinstance(stmt.value.value, str):
            return  # a docstring
        saved = self.builder.scope
        self.builder.scope = scope
        try:
            value = self.builder.evaluate(stmt.value)
        finally:
            self.builder.scope = saved
        if in_class and isinstance(value, ModuleAttrs):
            self.unit.attrs = value.attrs
            return
        raise self.builder.error(stmt, "this expression cannot be at the top level")

    def build(self, syntax: tree.Module) -> IRModule:
        self.collect(syntax.body, self.scope, in_class=False)
        for problem in self.parameters.unused_defines():
            self.context.diagnostics.append(problem)
        functions: list[tuple[str, PrimFunc]] = []
        for node, function_options, scope in self.unit.functions:
            func = build_function(self.context, node, function_options, scope, self.unit.legacy)
            if func is not None:
                functions.append((node.name, func))
        # an @I.ir_module class may be empty (`pass`), as TVM's may; a file needs one or the other
        if not self.unit.functions and not self.unit.is_class and not self.context.diagnostics:
            source = self.context.source
            self.context.diagnostics.append(
                Diagnostic.error(
                    "no function in file: expected a @T.prim_func or an @I.ir_module class",
                    Span(source, 0, 0),
                )
            )
        if self.context.diagnostics:
            raise DiagnosticError(self.context.diagnostics)
        is_bare = not self.unit.is_class and len(functions) == 1
        if is_bare:
            functions = [named_by_symbol(*functions[0])]
        try:
            return IRModule(tuple(functions), self.unit.attrs, is_bare)
        except IRError as problem:
            raise DiagnosticError(Diagnostic.error(str(problem))) from None


def subroutine_call(node: tree.FunctionDef) -> Callable[[Any, Invocation], PrimExpr]:
    """The builder of `Module.name(args)`: a Call typed by the callee's return annotation
    (void without one), which may be defined later in the class."""

    def build(ev: Any, inv: Invocation) -> PrimExpr:
        if inv.kwargs:
            key = next(iter(inv.kwargs))
            raise ev.error(inv.kwargs[key].span, f"{inv.name} takes no keyword arguments")
        dtype = dt.VOID
        if node.returns is not None:
            dtype = dtype_of(ev, ev.evaluate(node.returns), inv.span)
        values = tuple(call_argument(ev, arg, inv.name) for arg in inv.args)
        return Call(dtype, f"{SUBROUTINE_PREFIX}{node.name}", values, span=inv.span)

    return build


def named_by_symbol(name: str, func: PrimFunc) -> tuple[str, PrimFunc]:
    """A bare function is named by its global symbol, as TVM names it and the printer
    writes it (`def m` with T.func_attr({"global_symbol": "d"}) prints as `def d`)."""
    symbol = func.attrs.get("global_symbol")
    if not isinstance(symbol, str) or symbol == name or not symbol.isidentifier():
        return name, func
    return symbol, dataclasses.replace(func, attrs=func.attrs.remove("global_symbol"))


def build_module(
    syntax: tree.Module, source: Source, defines: Mapping[str, Define] | None = None
) -> IRModule:
    return ModuleBuilder(source, defines).build(syntax)


__all__ = ["build_module", "Any"]
