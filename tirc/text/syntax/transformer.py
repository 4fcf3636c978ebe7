"""The callbacks that build the syntax tree while the LALR driver reduces.

Given to Lark as `transformer=`, which wraps them to drop punctuation; no intermediate parse
tree is built. Each method receives the children of one rule (tokens and built nodes) and
returns a node whose range runs from its first child to its last.
"""

from __future__ import annotations

from typing import Any

from tirc.text.syntax import tree as t
from tirc.text.syntax.lexer import Token

Children = list[Any]


def start_of(item: Any) -> int:
    return item.start_pos if isinstance(item, Token) else item.start


def end_of(item: Any) -> int:
    return item.end_pos if isinstance(item, Token) else item.end


def present(children: Children) -> list[Any]:
    return [child for child in children if child is not None]


def flatten_items(middle: Children) -> tuple[Any, ...]:
    """The elements between brackets: nothing, one expression, or an accumulated list."""
    if not middle:
        return ()
    item = middle[0]
    return tuple(item) if isinstance(item, Items) else (item,)


def decode_string(text: str) -> str:
    """The value of one Python string literal, prefix and quotes included."""
    prefix_length = 0
    while text[prefix_length] not in "'\"":
        prefix_length += 1
    prefix = text[:prefix_length].lower()
    quote = text[prefix_length : prefix_length + 3]
    width = 3 if quote in ('"""', "'''") else 1
    body = text[prefix_length + width : len(text) - width]
    if "r" in prefix or "\\" not in body:
        return body
    # unicode_escape reads bytes as latin-1; backslashreplace keeps other characters intact.
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _constant(value: object) -> Any:
    def build(self: SyntaxBuilder, c: Children) -> t.Constant:
        token = c[0]
        return t.Constant(token.start_pos, token.end_pos, value)

    return build


# Binding power of binary operators, as in Python: higher binds tighter.
BINARY_POWER = {
    "or": 1, "and": 2,
    "<": 4, ">": 4, "==": 4, ">=": 4, "<=": 4, "!=": 4,
    "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10, "%": 10,
    "**": 12,
}  # fmt: skip
POWER_POWER = 12  # `**` is right-associative and binds tighter than a prefix on its left
COMPARE_POWER = 4
PREFIX_POWER = {"not": 3, "-": 11, "+": 11, "~": 11}


class Items(list):
    """A list a left-recursive rule is accumulating (distinct from a node's own lists)."""


class Prefixed:
    """`-x`, `not x`: a prefix operator whose reach depends on the operators around it."""

    __slots__ = ("token", "operand")

    def __init__(self, token: Token, operand: Any):
        self.token = token
        self.operand = operand


def finish(value: Any) -> t.Expr:
    """The expression a chain of operands and operators stands for."""
    if isinstance(value, Chain):
        return value.result()
    if isinstance(value, Prefixed):
        return Chain(value).result()
    return value


def accumulate(c: Children) -> Items:
    """`items: item | items "," item`: one list, appended to."""
    first = c[0]
    if isinstance(first, Items):
        first.append(c[-1])
        return first
    return Items(c)


# What waits on a Chain's operator stack: (binding power, kind, the operator or prefix token,
# or for comparisons the list of operators of one `a < b <= c` group).
BINARY, PREFIX, COMPARE = 0, 1, 2


class Chain:
    """`operand (operator operand)*`, operands possibly prefixed, combined by precedence as
    the driver reduces it, one operator at a time (shunting-yard): an operator first applies
    those waiting that bind at least as tightly, then waits itself.

    As in Python: binary operators are left-associative except `**`; a prefix operator reaches
    over every binary operator that binds tighter than itself (`-a ** b` is `-(a ** b)`, `not
    a == b` is `not (a == b)`); consecutive comparisons form one Compare. No recursion, so a
    line of ten thousand additions needs no stack.
    """

    __slots__ = ("operands", "operators")

    def __init__(self, first: Any):
        self.operands: list[t.Expr] = []
        self.operators: list[tuple[int, int, Any]] = []
        self.push_operand(first)

    def push_operand(self, item: Any) -> None:
        while isinstance(item, Prefixed):
            self.operators.append((PREFIX_POWER[item.token.value], PREFIX, item.token))
            item = item.operand
        self.operands.append(item)

    def push_operator(self, token: Token) -> None:
        op = token.value
        power = BINARY_POWER[op]
        operators = self.operators
        while operators:
            waiting, kind, what = operators[-1]
            if kind == PREFIX:
                if waiting <= power:
                    break
            elif kind == COMPARE and power == COMPARE_POWER:
                what.append(op)  # `a < b` then `< c`: one group
                return
            elif waiting < power or waiting == power == POWER_POWER:
                break
            operators.pop()
            self.apply(kind, what, waiting)
        if power == COMPARE_POWER:
            operators.append((power, COMPARE, [op]))
        else:
            operators.append((power, BINARY, op))

    def apply(self, kind: int, what: Any, power: int) -> None:
        """Replace the operands the operator takes by the node it makes of them."""
        operands = self.operands
        if kind == BINARY:
            right = operands.pop()
            left = operands[-1]
            node = t.BoolOp if power <= 2 else t.BinOp
            operands[-1] = node(left.start, right.end, what, left, right)
        elif kind == PREFIX:
            operand = operands[-1]
            operands[-1] = t.UnaryOp(what.start_pos, operand.end, what.value, operand)
        else:
            count = len(what) + 1
            group = tuple(operands[-count:])
            del operands[-count:]
            operands.append(t.Compare(group[0].start, group[-1].end, group, tuple(what)))

    def result(self) -> t.Expr:
        operators = self.operators
        while operators:
            power, kind, what = operators.pop()
            self.apply(kind, what, power)
        (expr,) = self.operands
        return expr


class SyntaxBuilder:
    """One method per rule or alias of grammar/tir.lark."""

    def start(self, c: Children) -> t.Module:
        body = tuple(c[0]) if c and c[0] is not None else ()
        end = body[-1].end if body else 0
        return t.Module(0, end, body)

    def stmts(self, c: Children) -> Items:
        items = Items() if len(c) == 1 else c[0]
        last = c[-1]
        if isinstance(last, Items):
            items.extend(last)
        else:
            items.append(last)
        return items

    def simple_stmt(self, c: Children) -> Items:
        return c[0]

    small_stmts = staticmethod(accumulate)
    with_items = staticmethod(accumulate)
    parameter_list = staticmethod(accumulate)
    decorators = staticmethod(accumulate)
    test_pairs = staticmethod(accumulate)
    tests = staticmethod(accumulate)
    arguments = staticmethod(accumulate)
    subscripts = staticmethod(accumulate)
    dict_items = staticmethod(accumulate)

    def suite(self, c: Children) -> tuple[t.Stmt, ...]:
        return tuple(c[0])

    # Simple statements.

    def expr_stmt(self, c: Children) -> t.ExprStmt:
        value = c[0]
        return t.ExprStmt(value.start, value.end, value)

    def assign(self, c: Children) -> t.Assign:
        target, value = c
        return t.Assign(target.start, value.end, target, value)

    def ann_assign(self, c: Children) -> t.AnnAssign:
        target, annotation, value = c
        end = value.end if value is not None else annotation.end
        return t.AnnAssign(target.start, end, target, annotation, value)

    def aug_assign(self, c: Children) -> t.AugAssign:
        target, op, value = c
        return t.AugAssign(target.start, value.end, target, str(op)[:-1], value)

    def pass_stmt(self, c: Children) -> t.Pass:
        return t.Pass(c[0].start_pos, c[0].end_pos)

    def break_stmt(self, c: Children) -> t.Break:
        return t.Break(c[0].start_pos, c[0].end_pos)

    def continue_stmt(self, c: Children) -> t.Continue:
        return t.Continue(c[0].start_pos, c[0].end_pos)

    def return_stmt(self, c: Children) -> t.Return:
        keyword, value = c
        end = value.end if value is not None else keyword.end_pos
        return t.Return(keyword.start_pos, end, value)

    def assert_stmt(self, c: Children) -> t.Assert:
        keyword, test, message = c
        end = (message if message is not None else test).end
        return t.Assert(keyword.start_pos, end, test, message)

    def dotted_name(self, c: Children) -> Token:
        return Token("NAME", ".".join(str(n) for n in c), c[0].start_pos, c[-1].end_pos)

    def dotted_as_name(self, c: Children) -> tuple[Token, Token | None]:
        return (c[0], c[1])

    def import_names(self, c: Children) -> list[tuple[Token, Token | None]]:
        return present(c)

    def import_stmt(self, c: Children) -> t.Import:
        keyword, *names = c
        last = names[-1][1] or names[-1][0]
        pairs = tuple((str(n), str(a) if a is not None else None) for n, a in names)
        return t.Import(keyword.start_pos, last.end_pos, None, pairs)

    def from_import_stmt(self, c: Children) -> t.Import:
        keyword, module, importer, *rest = c
        names = rest[0] if rest and rest[0] is not None else []
        pairs = tuple((str(n), str(a) if a is not None else None) for n, a in names)
        return t.Import(keyword.start_pos, importer.end_pos, str(module), pairs)

    # Compound statements.

    def if_stmt(self, c: Children) -> t.If:
        keyword, test, body, *rest = c
        else_body: tuple[t.Stmt, ...] = rest[-1] if rest[-1] is not None else ()
        for clause in reversed(rest[:-2]):
            clause_keyword, clause_test, clause_body = clause
            end = else_body[-1].end if else_body else clause_body[-1].end
            else_body = (t.If(clause_keyword.start_pos, end, clause_test, clause_body, else_body),)
        end = else_body[-1].end if else_body else body[-1].end
        return t.If(keyword.start_pos, end, test, body, else_body)

    def elif_clause(self, c: Children) -> tuple[Token, t.Expr, tuple[t.Stmt, ...]]:
        return (c[0], c[1], c[2])

    def while_stmt(self, c: Children) -> t.While:
        keyword, test, body = c
        return t.While(keyword.start_pos, body[-1].end, test, body)

    def for_stmt(self, c: Children) -> t.For:
        keyword, target, iterable, body = c
        return t.For(keyword.start_pos, body[-1].end, target, iterable, body)

    def with_item(self, c: Children) -> t.WithItem:
        context, target = c
        end = (target if target is not None else context).end
        return t.WithItem(context.start, end, context, target)

    def with_stmt(self, c: Children) -> t.With:
        keyword, items, body = c
        return t.With(keyword.start_pos, body[-1].end, tuple(items), body)

    def parameter(self, c: Children) -> t.Parameter:
        name, annotation, default = c
        last = default or annotation
        end = last.end if last is not None else name.end_pos
        return t.Parameter(name.start_pos, end, str(name), annotation, default)

    def parameters(self, c: Children) -> tuple[t.Parameter, ...]:
        return tuple(c[0])

    def funcdef(self, c: Children) -> t.FunctionDef:
        keyword, name, params, returns, body = c
        return t.FunctionDef(
            keyword.start_pos, body[-1].end, str(name), name.start_pos, params or (), returns, body
        )

    def classdef(self, c: Children) -> t.ClassDef:
        keyword, name, bases, body = c
        base_items = tuple(b for b in bases or () if not isinstance(b, t.Keyword))
        return t.ClassDef(
            keyword.start_pos, body[-1].end, str(name), name.start_pos, base_items, body
        )

    def decorator(self, c: Children) -> tuple[Token, t.Expr]:
        return (c[0], c[1])

    def decorated(self, c: Children) -> t.Stmt:
        decorators, definition = c
        definition.decorators = tuple(expr for _, expr in decorators)
        definition.start = decorators[0][0].start_pos  # the first '@'
        return definition

    # Expressions.

    def tuple_bare(self, c: Children) -> t.Tuple:
        items = tuple(c[0]) if isinstance(c[0], Items) else (c[0],)
        return t.Tuple(items[0].start, items[-1].end, items)

    def expression(self, c: Children) -> t.Expr:
        return finish(c[0])

    def if_expr(self, c: Children) -> t.IfExp:
        body, _, test, orelse = c
        body, test = finish(body), finish(test)
        return t.IfExp(body.start, orelse.end, test, body, orelse)

    def lambda_params(self, c: Children) -> Items:
        return accumulate(c)

    def lambda_expr(self, c: Children) -> t.Lambda:
        keyword, params, body = c
        names = tuple(str(name) for name in params) if params is not None else ()
        return t.Lambda(keyword.start_pos, body.end, names, body)

    def operator_chain(self, c: Children) -> Chain:
        left, op, right = c
        chain = left if isinstance(left, Chain) else Chain(left)
        chain.push_operator(op)
        chain.push_operand(right)
        return chain

    def prefixed(self, c: Children) -> Prefixed:
        return Prefixed(c[0], c[1])

    def call(self, c: Children) -> t.Call:
        func, arguments, close = (c[0], None, c[1]) if len(c) == 2 else c
        args: list[t.Expr] = []
        keywords: list[t.Keyword] = []
        for argument in arguments or ():
            if isinstance(argument, t.Keyword):
                keywords.append(argument)
            else:
                args.append(argument)
        return t.Call(func.start, close.end_pos, func, tuple(args), tuple(keywords))

    def keyword(self, c: Children) -> t.Keyword:
        name, value = c
        return t.Keyword(name.start_pos, value.end, name.value, value)

    def starred(self, c: Children) -> t.Starred:
        star, value = c
        return t.Starred(star.start_pos, value.end, value)

    def subscript(self, c: Children) -> t.Subscript:
        value, items, close = c[0], c[1], c[-1]
        is_tuple = len(items) > 1 or len(c) == 4
        return t.Subscript(value.start, close.end_pos, value, tuple(items), is_tuple)

    def slice(self, c: Children) -> t.Slice:
        lower, colon, upper, step = c
        start = lower.start if lower is not None else colon.start_pos
        last = step or upper
        end = last.end if last is not None else colon.end_pos
        return t.Slice(start, end, lower, upper, step)

    def attribute(self, c: Children) -> t.Attribute:
        value, name = c
        return t.Attribute(value.start, name.end_pos, value, name.value)

    def name(self, c: Children) -> t.Name:
        token = c[0]
        return t.Name(token.start_pos, token.end_pos, token.value)

    def integer(self, c: Children) -> t.Constant:
        token = c[0]
        return t.Constant(token.start_pos, token.end_pos, int(token.value, 0))

    def float_literal(self, c: Children) -> t.Constant:
        token = c[0]
        return t.Constant(token.start_pos, token.end_pos, float(token.value))

    def string(self, c: Children) -> t.Constant:
        value = "".join(decode_string(str(token)) for token in c)
        return t.Constant(c[0].start_pos, c[-1].end_pos, value)

    none = _constant(None)
    true = _constant(True)
    false = _constant(False)

    def paren(self, c: Children) -> t.Expr:
        return c[1]

    def tuple_literal(self, c: Children) -> t.Tuple:
        return t.Tuple(c[0].start_pos, c[-1].end_pos, flatten_items(c[1:-1]))

    def list_literal(self, c: Children) -> t.List:
        return t.List(c[0].start_pos, c[-1].end_pos, flatten_items(c[1:-1]))

    def dict_literal(self, c: Children) -> t.Dict:
        items = flatten_items(c[1:-1])
        keys = tuple(key for key, _ in items)
        values = tuple(value for _, value in items)
        return t.Dict(c[0].start_pos, c[-1].end_pos, keys, values)

    def dict_item(self, c: Children) -> tuple[t.Expr, t.Expr]:
        return (c[0], c[1])
