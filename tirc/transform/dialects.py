"""The checks behind each Dialect: what a module must not contain at a stage of lowering.

The well-formedness verifier states what every program must satisfy; these state what a pass
promises to leave (`leaves`) on top of it, and `--verify-each` checks both.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.diagnostics import Diagnostic
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
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


Rule = Callable[[Node], "str | None"]
_RULES: dict[Dialect, Rule | None] = {
    Dialect.S_TIR: None,
    Dialect.OPAQUE_BLOCKS: _block_with_iter_vars,
    Dialect.TIR: _any_block,
    Dialect.FLAT: _multi_index,
}


def check_dialect(module: IRModule, dialect: Dialect) -> list[Diagnostic]:
    """What in `module` is not allowed in `dialect` (the first few of them)."""
    rule = _RULES[dialect]
    found: list[Diagnostic] = []
    if rule is None:
        return found

    def visit(node: Node) -> None:
        message = rule(node) if len(found) < 5 else None
        if message is not None:
            found.append(Diagnostic.error(f"{message} (not {dialect.value})", node.span))

    walk(module, visit)
    return found
