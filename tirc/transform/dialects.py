"""The checks behind each Dialect: what a module must not contain at a stage of lowering.

The well-formedness verifier states what every program must satisfy; these state what a pass
promises to leave (`leaves`) on top of it, and `--verify-each` checks both.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.abi import is_kernel
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.transform.pass_base import Dialect


def _block_with_iter_vars(node: Node) -> str | None:
    if isinstance(node, S.SBlock) and (node.iter_vars or node.init is not None):
        return f"block '{node.name}' still has iteration variables or an init"
    return None


def _any_block(node: Node) -> str | None:
    if isinstance(node, (S.SBlock, S.SBlockRealize)):
        name = node.name if isinstance(node, S.SBlock) else node.block.name
        return f"block '{name}' is left"
    return None


def _multi_index(node: Node) -> str | None:
    if isinstance(node, (E.BufferLoad, S.BufferStore)) and len(node.indices) > 1:
        return f"access to {node.buffer.name} has {len(node.indices)} indices"
    return _any_block(node)


def _buffer_map(func: PrimFunc) -> str | None:
    if func.buffer_map and not is_kernel(func):
        return "has a buffer_map, not its C signature (make-c-abi)"
    return None


def _host_thread(node: Node) -> str | None:
    if isinstance(node, S.AttrStmt) and node.key == "thread_extent":
        tag = node.node.thread_tag if isinstance(node.node, S.IterVar) else ""
        if tag.startswith(("blockIdx", "threadIdx")):
            return f"{tag} is launched outside a kernel (split-host-device)"
    return None


Rule = Callable[[Node], "str | None"]
FunctionRule = Callable[[PrimFunc], "str | None"]
_RULES: dict[Dialect, Rule | None] = {
    Dialect.S_TIR: None,
    Dialect.OPAQUE_BLOCKS: _block_with_iter_vars,
    Dialect.TIR: _any_block,
    Dialect.FLAT: _multi_index,
    Dialect.C_ABI: _multi_index,
    Dialect.HOST_DEVICE: _multi_index,
}
# rules of a whole function, and of the statements of a function that is not a kernel
_FUNCTION_RULES: dict[Dialect, tuple[FunctionRule, ...]] = {
    Dialect.C_ABI: (_buffer_map,),
    Dialect.HOST_DEVICE: (_buffer_map,),
}
_HOST_RULES: dict[Dialect, Rule] = {Dialect.HOST_DEVICE: _host_thread}


def check_dialect(module: IRModule, dialect: Dialect) -> list[Diagnostic]:
    """What in `module` is not allowed in `dialect` (the first few of them)."""

    found: list[Diagnostic] = []

    def report(message: str, node: Node) -> None:
        if len(found) < 5:
            found.append(Diagnostic.error(f"{message} (not {dialect.value})", node.span))

    def check(rule: Rule) -> Callable[[Node], None]:
        def visit(node: Node) -> None:
            message = rule(node) if len(found) < 5 else None
            if message is not None:
                report(message, node)

        return visit

    rule = _RULES[dialect]
    if rule is not None:
        walk(module, check(rule))
    for name, func in module.functions:
        for function_rule in _FUNCTION_RULES.get(dialect, ()):
            message = function_rule(func)
            if message is not None:
                report(f"function {name} {message}", func)
        host_rule = _HOST_RULES.get(dialect)
        if host_rule is not None and not is_kernel(func):
            walk(func.body, check(host_rule))
    return found


def require_dialect(module: IRModule, dialect: Dialect, what: str, *notes: Note) -> None:
    """A DiagnosticError, "`what`, but ...", at the first thing in `module` that `dialect`
    does not allow (the next few as notes), followed by `notes`."""
    found = check_dialect(module, dialect)
    if found:
        first, *rest = found
        raise DiagnosticError.at(
            first.span,
            f"{what}, but {first.message}",
            *(Note(d.message, d.span) for d in rest),
            *notes,
        )
