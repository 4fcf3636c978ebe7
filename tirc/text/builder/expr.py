"""Evaluating expressions: a syntax tree becomes a value, as TVMScript's Python host would do.

Values are IR expressions and buffers, Python data (numbers, strings, lists, dicts), and the
special values of `values.py`. Operators on Python numbers compute in Python; once an IR
expression is involved they follow `arith.py`. Dispatch is a table keyed by syntax class.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from tirc.diagnostics import Note, Span
from tirc.ir import arith
from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr
from tirc.ir.functor import Dispatch
from tirc.ir.stmt import IterVar
from tirc.text.builder.context import CONSTRUCTION_ERRORS, BuildError, Context, SilentError
from tirc.text.builder.scope import Scope, nearest
from tirc.text.builder.values import (
    Arg,
    BoundMethod,
    Builtin,
    Invocation,
    Lambda,
    LetAnnotation,
    LocalArray,
    Namespace,
    Poison,
)
from tirc.text.syntax import tree

PYTHON_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}
PYTHON_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
PYTHON_UNARY: dict[str, Callable[[Any], Any]] = {
    "-": operator.neg,
    "+": operator.pos,
    "~": operator.invert,
}
ARITH_OPERATOR = {"+": "+", "-": "-", "*": "*", "//": "floordiv", "%": "floormod"}
PYTHON_DATA = (int, float, str, bool, list, tuple, dict, type(None))


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, PrimExpr)


class Evaluator:
    """The expression half of the builder; `stmt.Builder` adds statements on top of it."""

    def __init__(self, context: Context, scope: Scope):
        self.context = context
        self.scope = scope

    # Helpers shared with builtins.

    def span(self, node: tree.Syntax) -> Span:
        offset = self.context.offset  # Context.span, one call less
        return Span(self.context.source, node.start + offset, node.end + offset)

    def error(self, where: tree.Syntax | Span | None, message: str, *notes: Note) -> BuildError:
        return self.context.error(where, message, *notes)

    def check_value(self, value: Any) -> Any:
        if isinstance(value, Poison):
            raise SilentError()
        return value

    # Entry points.

    def evaluate(self, node: tree.Expr, targets: tuple[str, ...] = ()) -> Any:
        """The value of an expression; `targets` names what it is assigned to, if anything."""
        # Names and literals are most operands; neither builds a node, so neither can break
        # an IR invariant: they skip the table and the handler below.
        if isinstance(node, tree.Name):
            return self.eval_name(node)
        if isinstance(node, tree.Constant):
            return node.value
        try:
            if targets and isinstance(node, tree.Call):
                return self.eval_call(node, targets)
            return EVALUATORS(self, node)
        except CONSTRUCTION_ERRORS as problem:
            # The innermost expression whose building broke an invariant is the place.
            raise self.error(node, str(problem)) from None

    def evaluate_expr(self, node: tree.Expr) -> PrimExpr:
        """The value of an expression that must be an IR expression (numbers convert)."""
        return self.as_expr(self.evaluate(node), node)

    def as_expr(self, value: Any, where: tree.Syntax | Span) -> PrimExpr:
        value = self.check_value(value)
        if isinstance(value, PrimExpr):
            return value
        if isinstance(value, IterVar):  # a thread from T.env_thread stands for its variable
            return value.var
        if isinstance(value, (bool, int, float)):
            try:
                return arith.literal(value, where if isinstance(where, Span) else self.span(where))
            except arith.ArithError as problem:
                raise self.error(where, str(problem)) from None
        raise self.error(where, f"expected an expression, got {arith.describe(value)}")

    # One method per syntax class.

    def eval_name(self, node: tree.Name) -> Any:
        try:
            return self.check_value(self.scope.lookup(node.id))
        except KeyError:
            pass
        suggestion = self.scope.suggest(node.id)
        hint = f"; did you mean '{suggestion}'?" if suggestion else ""
        raise self.error(node, f"undefined name '{node.id}'{hint}") from None

    def eval_constant(self, node: tree.Constant) -> Any:
        return node.value

    def eval_attribute(self, node: tree.Attribute) -> Any:
        value = self.evaluate(node.value)
        if isinstance(value, Namespace):
            try:
                return value.members[node.attr]
            except KeyError:
                suggestion = nearest(node.attr, list(value.members))
                hint = f"; did you mean {value.name}.{suggestion}?" if suggestion else ""
                message = f"unknown name {value.name}.{node.attr}{hint}"
                raise self.error(node, message) from None
        value = self.check_value(value)
        rule = ATTRIBUTES.get(type(value))
        if rule is None:
            raise self.error(node, f"{arith.describe(value)} has no attribute '{node.attr}'")
        return rule(self, value, node)

    def eval_call(self, node: tree.Call, targets: tuple[str, ...] = ()) -> Any:
        callee = self.evaluate(node.func)
        args: list[Arg] = []
        for item in node.args:
            if isinstance(item, tree.Starred):
                spread = self.evaluate(item.value)
                if not isinstance(spread, (list, tuple)):
                    raise self.error(item, f"cannot unpack {arith.describe(spread)}")
                args.extend(Arg(value, self.span(item)) for value in spread)
            else:
                args.append(Arg(self.evaluate(item), self.span(item)))
        kwargs = {
            kw.name: Arg(self.evaluate(kw.value), self.span(kw.value)) for kw in node.keywords
        }
        name = callable_name(node.func)
        invocation = Invocation(name, args, kwargs, self.span(node), targets)
        return self.call(callee, invocation, node)

    def call(self, callee: Any, invocation: Invocation, node: tree.Call | None = None) -> Any:
        rule = CALLERS.get(type(callee))
        if rule is None:
            description = arith.describe(callee)
            raise self.error(invocation.span, f"{invocation.name} is {description}, not a function")
        return rule(self, callee, invocation, node)

    def eval_subscript(self, node: tree.Subscript) -> Any:
        return SUBSCRIPTS(self, self.evaluate(node.value), node)

    def eval_binop(self, node: tree.BinOp) -> Any:
        # Walk a left-leaning chain (`a + b + c + ...`) iteratively: long sums need no stack.
        spine: list[tree.BinOp] = []
        current: tree.Expr = node
        while isinstance(current, tree.BinOp):
            spine.append(current)
            current = current.left
        value = self.evaluate(current)
        for binop in reversed(spine):
            value = self.binary(binop, binop.op, value, self.evaluate(binop.right))
        return value

    def binary(self, node: tree.Syntax, op: str, left: Any, right: Any) -> Any:
        # The common case first: + - * // % of an expression and an expression or an int,
        # with one span for the node and the literal (the general path below makes the same
        # nodes, with two equal spans).
        arith_op = ARITH_OPERATOR.get(op)
        if arith_op is not None and (isinstance(left, PrimExpr) or isinstance(right, PrimExpr)):
            left_type, right_type = left.__class__, right.__class__
            if (left_type is int or isinstance(left, PrimExpr)) and (
                right_type is int or isinstance(right, PrimExpr)
            ):
                span = self.span(node)
                try:
                    if left_type is int:
                        left = arith.literal(left, span)
                    if right_type is int:
                        right = arith.literal(right, span)
                except arith.ArithError as problem:
                    raise self.error(node, str(problem)) from None
                try:
                    return arith.arithmetic(arith_op, left, right, span)
                except arith.ArithError as problem:
                    raise self.error(node, f"in '{op}': {problem}") from None
        left, right = operand_value(self.check_value(left)), operand_value(self.check_value(right))
        if not isinstance(left, PrimExpr) and not isinstance(right, PrimExpr):
            if isinstance(left, PYTHON_DATA) and isinstance(right, PYTHON_DATA):
                try:
                    return PYTHON_BINARY[op](left, right)
                except (TypeError, ValueError, ZeroDivisionError, OverflowError) as problem:
                    raise self.error(node, f"cannot compute {op}: {problem}") from None
        span = self.span(node)
        try:
            if op in ARITH_OPERATOR:
                return arith.arithmetic(
                    ARITH_OPERATOR[op], self.operand(left, node), self.operand(right, node), span
                )
            if op == "/":
                a, b = arith.match_types(self.operand(left, node), self.operand(right, node))
                if not a.dtype.is_float:
                    raise self.error(
                        node,
                        f"'/' between integers ({a.dtype}) is ambiguous: use '//' for floor "
                        "division, or T.truncdiv",
                    )
                return arith.arithmetic("div", a, b, span)
            if op in arith.BITWISE:
                return arith.bitwise(op, self.operand(left, node), self.operand(right, node), span)
        except arith.ArithError as problem:
            raise self.error(node, f"in '{op}': {problem}") from None
        raise self.error(node, f"'{op}' is not supported on expressions; use T.pow for powers")

    def operand(self, value: Any, node: tree.Syntax) -> PrimExpr:
        if isinstance(value, PrimExpr):
            return value
        if isinstance(value, (bool, int, float)):
            return self.as_expr(value, node)
        raise self.error(node, f"expected an expression, got {arith.describe(value)}")

    def eval_unaryop(self, node: tree.UnaryOp) -> Any:
        value = operand_value(self.check_value(self.evaluate(node.operand)))
        op = node.op
        if not isinstance(value, PrimExpr):
            if op == "not":
                return not value
            if is_number(value):
                try:
                    return PYTHON_UNARY[op](value)
                except TypeError:  # `~1.5`
                    raise self.error(
                        node, f"cannot apply '{op}' to {arith.describe(value)}"
                    ) from None
            raise self.error(node, f"cannot apply '{op}' to {arith.describe(value)}")
        span = self.span(node)
        try:
            if op == "-":
                return arith.negate(value, span)
            if op == "~":
                return arith.invert(value, span)
            if op == "not":
                return arith.logical_not(value, span)
        except arith.ArithError as problem:
            raise self.error(node, str(problem)) from None
        return value

    def eval_boolop(self, node: tree.BoolOp) -> Any:
        left = operand_value(self.check_value(self.evaluate(node.left)))
        right = operand_value(self.check_value(self.evaluate(node.right)))
        if not isinstance(left, PrimExpr) and not isinstance(right, PrimExpr):
            return (left and right) if node.op == "and" else (left or right)
        try:
            return arith.logical(node.op, left, right, self.span(node))
        except arith.ArithError as problem:
            raise self.error(node, str(problem)) from None

    def eval_compare(self, node: tree.Compare) -> Any:
        values = [
            operand_value(self.check_value(self.evaluate(operand))) for operand in node.operands
        ]
        results: list[Any] = []
        for index, op in enumerate(node.ops):
            left, right = values[index], values[index + 1]
            if not isinstance(left, PrimExpr) and not isinstance(right, PrimExpr):
                try:
                    results.append(PYTHON_COMPARE[op](left, right))
                except TypeError:
                    a, b = arith.describe(left), arith.describe(right)
                    raise self.error(node, f"cannot compare {a} {op} {b}") from None
                continue
            try:
                offset = self.context.offset
                start, end = node.operands[index].start, node.operands[index + 1].end
                pair = Span(self.context.source, start + offset, end + offset)
                results.append(
                    arith.arithmetic(op, self.operand(left, node), self.operand(right, node), pair)
                )
            except arith.ArithError as problem:
                raise self.error(node, str(problem)) from None
        result = results[0]
        for item in results[1:]:
            if isinstance(result, PrimExpr) or isinstance(item, PrimExpr):
                result = arith.logical("and", result, item, self.span(node))
            else:
                result = result and item
        return result

    def eval_ifexp(self, node: tree.IfExp) -> Any:
        test = self.check_value(self.evaluate(node.test))
        if isinstance(test, PrimExpr):
            raise self.error(
                node.test, "a conditional expression needs a constant condition; use T.Select"
            )
        return self.evaluate(node.body if test else node.orelse)

    def eval_tuple(self, node: tree.Tuple) -> tuple[Any, ...]:
        return tuple(self.evaluate(item) for item in node.items)

    def eval_list(self, node: tree.List) -> list[Any]:
        return [self.evaluate(item) for item in node.items]

    def eval_dict(self, node: tree.Dict) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            result[self.check_value(self.evaluate(key))] = self.evaluate(value)
        return result

    def eval_lambda(self, node: tree.Lambda) -> Lambda:
        return Lambda(node, self.scope)

    def eval_misplaced(self, node: tree.Expr) -> Any:
        what = "a slice" if isinstance(node, tree.Slice) else "'*'"
        raise self.error(node, f"{what} is not allowed here")


def operand_value(value: Any) -> Any:
    """An operand of an operator: a thread (T.env_thread) stands for its variable."""
    return value.var if isinstance(value, IterVar) else value


def callable_name(node: tree.Expr) -> str:
    """How the callee is spelled (`T.grid`, `my_macro`), for messages."""
    if isinstance(node, tree.Name):
        return node.id
    if isinstance(node, tree.Attribute):
        return f"{callable_name(node.value)}.{node.attr}"
    return "the callee"


# What each syntax node evaluates to: an Evaluator method per class of the tree.
EVALUATORS: Dispatch[Evaluator, [], Any] = Dispatch("expression")
EVALUATORS.register(tree.Name)(Evaluator.eval_name)
EVALUATORS.register(tree.Constant)(Evaluator.eval_constant)
EVALUATORS.register(tree.Attribute)(Evaluator.eval_attribute)
EVALUATORS.register(tree.Call)(Evaluator.eval_call)
EVALUATORS.register(tree.Subscript)(Evaluator.eval_subscript)
EVALUATORS.register(tree.BinOp)(Evaluator.eval_binop)
EVALUATORS.register(tree.UnaryOp)(Evaluator.eval_unaryop)
EVALUATORS.register(tree.BoolOp)(Evaluator.eval_boolop)
EVALUATORS.register(tree.Compare)(Evaluator.eval_compare)
EVALUATORS.register(tree.IfExp)(Evaluator.eval_ifexp)
EVALUATORS.register(tree.Tuple)(Evaluator.eval_tuple)
EVALUATORS.register(tree.List)(Evaluator.eval_list)
EVALUATORS.register(tree.Dict)(Evaluator.eval_dict)
EVALUATORS.register(tree.Lambda)(Evaluator.eval_lambda)
EVALUATORS.register(tree.Slice)(Evaluator.eval_misplaced)
EVALUATORS.register(tree.Starred)(Evaluator.eval_misplaced)


# The rules that the other modules of the builder register, by the class of the value: what
# `value.name` reads (attributes.py), what `value[...]` is (subscripts.py), and what calling a
# value does (here for builtins, methods and poison; ops.py for types, macro.py for macros and
# lambdas, namespace.py for T.handle). module.py loads them all.
ATTRIBUTES: Dispatch[Evaluator, [tree.Attribute], Any] = Dispatch("attribute")
SUBSCRIPTS: Dispatch[Evaluator, [tree.Subscript], Any] = Dispatch("subscript")
CALLERS: Dispatch[Evaluator, [Invocation, tree.Call | None], Any] = Dispatch("call")


@CALLERS.register(Builtin)
def _call_builtin(ev: Evaluator, callee: Builtin, inv: Invocation, node: tree.Call | None) -> Any:
    return callee.call(ev, inv)


@CALLERS.register(BoundMethod)
def _call_method(
    ev: Evaluator, callee: BoundMethod, inv: Invocation, node: tree.Call | None
) -> Any:
    return callee.call(ev, callee.receiver, inv)


@CALLERS.register(Poison)
def _call_poison(ev: Evaluator, callee: Poison, inv: Invocation, node: tree.Call | None) -> Any:
    raise SilentError()


def is_buffer(value: object) -> bool:
    return isinstance(value, Buffer)


__all__ = ["Evaluator", "LetAnnotation", "LocalArray", "is_buffer"]
