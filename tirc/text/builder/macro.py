"""`@T.macro` functions, expanded where they are called, and lambdas applied to arguments.

Expansion is hygienic: the body runs in a fresh child of the scope the macro was defined in
(the call site's scope for `hygienic=False`), its parameters bound to the argument values.
Statements it builds go into the caller's body and its blocks; a final `return value` is
the call's value. Errors inside carry a note pointing at the call, and a macro that calls
itself, directly or not, is an error naming the chain.
"""

from __future__ import annotations

from typing import Any

from tirc.diagnostics import Note
from tirc.text.builder.context import BuildError
from tirc.text.builder.decorators import MacroOptions, options
from tirc.text.builder.expr import CALLERS, Evaluator
from tirc.text.builder.scope import Scope, nearest
from tirc.text.builder.stmt import STATEMENTS, Builder
from tirc.text.builder.values import Invocation, Lambda, Macro
from tirc.text.syntax import tree


def macro_of(ev: Evaluator, node: tree.FunctionDef, scope: Scope) -> Macro | None:
    """The Macro a definition makes, or None when it is not decorated with T.macro."""
    for value, _ in options(ev, node.decorators):
        if isinstance(value, MacroOptions):
            return Macro(node.name, node, scope, value.hygienic)
    return None


def bind_arguments(
    ev: Evaluator, params: list[tree.Parameter], inv: Invocation, scope: Scope, owner: str
) -> None:
    names = [p.name for p in params]
    if len(inv.args) > len(params):
        raise ev.error(
            inv.args[len(params)].span,
            f"{owner} takes {len(params)} arguments ({len(inv.args)} given)",
        )
    values: dict[str, Any] = {}
    for param, arg in zip(params, inv.args, strict=False):
        values[param.name] = arg.value
    for name, arg in inv.kwargs.items():
        if name not in names:
            suggestion = nearest(name, names)
            hint = f"; did you mean '{suggestion}'?" if suggestion else ""
            raise ev.error(arg.span, f"{owner} has no parameter '{name}'{hint}")
        if name in values:
            raise ev.error(arg.span, f"{owner} got '{name}' twice")
        values[name] = arg.value
    for param in params:
        if param.name not in values:
            if param.default is None:
                raise ev.error(inv.span, f"{owner} is missing its argument '{param.name}'")
            values[param.name] = ev.evaluate(param.default)
        scope.bind(param.name, values[param.name])


def expand(builder: Builder, macro: Macro, inv: Invocation) -> Any:
    chain = [active.name for active, _ in builder.macro_calls]
    if macro.name in chain:
        loop = " -> ".join(chain[chain.index(macro.name) :] + [macro.name])
        raise builder.error(inv.span, f"macro '{macro.name}' calls itself recursively: {loop}")
    if not builder.bodies:
        raise builder.error(inv.span, f"macro '{macro.name}' can only be used inside a function")
    definition = macro.definition
    scope = (macro.scope if macro.hygienic else builder.scope).child()
    saved = builder.scope
    builder.scope = scope
    builder.macro_calls.append((macro, inv.span))
    try:
        bind_arguments(builder, list(definition.params), inv, scope, f"macro '{macro.name}'")
        body = definition.body
        for index, stmt in enumerate(body):
            if isinstance(stmt, tree.Return):
                if index != len(body) - 1:
                    raise builder.error(stmt, "return must be the last statement of a macro")
                return None if stmt.value is None else builder.evaluate(stmt.value)
            builder.visit(stmt)
        return None
    except BuildError as error:
        raise error.with_note(Note(f"in macro '{macro.name}' expanded here", inv.span)) from None
    finally:
        builder.macro_calls.pop()
        builder.scope = saved


def apply_lambda(ev: Evaluator, function: Lambda, inv: Invocation) -> Any:
    node = function.node
    if inv.kwargs or len(inv.args) != len(node.params):
        raise ev.error(
            inv.span, f"the lambda takes {len(node.params)} arguments ({len(inv.args)} given)"
        )
    scope = function.scope.child()
    for name, arg in zip(node.params, inv.args, strict=True):
        scope.bind(name, arg.value)
    saved = ev.scope
    ev.scope = scope
    try:
        return ev.evaluate(node.body)
    finally:
        ev.scope = saved


@STATEMENTS.register(tree.FunctionDef)
def _define(builder: Builder, node: tree.FunctionDef) -> None:
    """A `@T.macro` defined inside a function; any other nested definition is an error."""
    macro = macro_of(builder, node, builder.scope)
    if macro is None:
        raise builder.error(node, "only @T.macro functions can be defined inside a function")
    builder.scope.bind(node.name, macro)


@CALLERS.register(Macro)
def _call_macro(ev: Evaluator, callee: Macro, inv: Invocation, node: tree.Call | None) -> Any:
    if not isinstance(ev, Builder):  # the builder evaluates every expression of a program
        raise ev.error(inv.span, f"macro '{callee.name}' can only be used inside a function")
    return expand(ev, callee, inv)


@CALLERS.register(Lambda)
def _call_lambda(ev: Evaluator, callee: Lambda, inv: Invocation, node: tree.Call | None) -> Any:
    return apply_lambda(ev, callee, inv)
