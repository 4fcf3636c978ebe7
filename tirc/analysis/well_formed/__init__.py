"""The well-formedness verifier: the validity conditions of the language (docs/validity.md),
one module per rule. Every violation is collected, located at the offending node's span with
notes at related places, and reported in source order.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.analysis.well_formed.accesses import check_accesses
from tirc.analysis.well_formed.aliasing import check_aliasing
from tirc.analysis.well_formed.blocks import check_blocks
from tirc.analysis.well_formed.calls import check_calls, check_module_calls
from tirc.analysis.well_formed.dialect import check_dialect
from tirc.analysis.well_formed.loops import check_loops
from tirc.analysis.well_formed.scope import check_scopes
from tirc.analysis.well_formed.threads import check_threads
from tirc.analysis.well_formed.types import check_types
from tirc.diagnostics import Diagnostic
from tirc.ir.function import IRModule, PrimFunc

Rule = Callable[[PrimFunc], list[Diagnostic]]

# name -> check, in the order of docs/validity.md
RULES: dict[str, Rule] = {
    "dialect": check_dialect,
    "scope": check_scopes,
    "aliasing": check_aliasing,
    "blocks": check_blocks,
    "loops": check_loops,
    "threads": check_threads,
    "types": check_types,
    "calls": check_calls,
    "accesses": check_accesses,
}


def verify_function(func: PrimFunc) -> list[Diagnostic]:
    """Every violation of a validity rule in `func`, in source order; empty when valid."""
    found = [diagnostic for check in RULES.values() for diagnostic in check(func)]
    return sorted(found, key=source_order)


def verify_module(mod: IRModule) -> list[Diagnostic]:
    """Every violation in every function of `mod`, in source order; empty when valid."""
    found = [diagnostic for _, func in mod.functions for diagnostic in verify_function(func)]
    found += check_module_calls(mod)
    return sorted(found, key=source_order)


def source_order(diagnostic: Diagnostic) -> tuple[int, str, int]:
    span = diagnostic.span
    if span is None:
        return (1, "", 0)  # unlocated ones last, in the order they were found
    return (0, span.source.name, span.start)


__all__ = ["RULES", "verify_function", "verify_module"]
