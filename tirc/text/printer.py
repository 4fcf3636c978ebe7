"""IR -> TVMScript text as TVM 0.27 prints it: `print_module` for files, `script` for any
node in a message. Functions go sorted by name with `main` last; no trailing newline."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tirc.ir.function import IRModule
from tirc.text.printing.emitter import INDENT
from tirc.text.printing.fragments import print_fragment
from tirc.text.printing.func import module_header, print_function
from tirc.text.printing.stmt import StmtPrinter
from tirc.text.printing.values import format_attrs

# Expressions nest as deeply as programs make them (long unrolled sums); the printer recurses
# once or twice per level, and Python 3.11 keeps those frames off the C stack.
_RECURSION_LIMIT = 100_000


@contextmanager
def _deep_recursion() -> Iterator[None]:
    previous = sys.getrecursionlimit()
    if previous < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def print_module(module: IRModule) -> str:
    """The module as TVMScript text."""
    with _deep_recursion():
        if module.is_bare and len(module.functions) == 1:
            return _print_bare(module)
        return _print_class(module)


def _print_class(module: IRModule) -> str:
    body: list[str] = []
    type_vars: list[str] = []
    if module.attrs.items:
        body.append(f"{INDENT}I.module_attrs({format_attrs(module.attrs, StmtPrinter().exprs)})")
    ordered = sorted(module.functions, key=lambda item: (item[0] == "main", item[0]))
    for index, (name, func) in enumerate(ordered):
        if index:
            body.append("")
        printer = StmtPrinter()
        printer.indent = INDENT
        for type_var in print_function(printer, func, name):
            if type_var not in type_vars:
                type_vars.append(type_var)
        body += printer.lines
    lines = module_header(type_vars, is_bare=False)
    lines += ["@I.ir_module", "class Module:"]
    return "\n".join(lines + (body or [f"{INDENT}pass"]))


def _print_bare(module: IRModule) -> str:
    key, func = module.functions[0]
    symbol = func.attrs.get("global_symbol")
    if isinstance(symbol, str):
        name = symbol
    else:
        name = "main" if func.is_private else key
    printer = StmtPrinter()
    type_vars = print_function(printer, func, name)
    return "\n".join(module_header(type_vars, is_bare=True) + printer.lines)


def script(node: object) -> str:
    """Any IR node as text, for messages: free variables print by name, undeclared."""
    with _deep_recursion():
        if isinstance(node, IRModule):
            return print_module(node)
        return print_fragment(node)
