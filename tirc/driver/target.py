"""The one place a target's spelling is read: the command line's `--target` (through
tirc.cli's TargetType) and the driver's Python entry points, which also take the spelling
for convenience, both come here; every layer below is handed the Target value."""

from __future__ import annotations

from tirc.ir.target import Target, read_target


def parse_target(target: Target | str) -> Target:
    """The Target a spelling names, its CPU facts resolved by LLVM (`-mcpu=native`, the
    host's features, the triple); a Target is returned as it is. DiagnosticError, located
    in the spelling, for a target tirc does not know."""
    if isinstance(target, Target):
        return target
    value = read_target(target)
    if value.backend == "llvm":
        # deferred: llvmlite (about a second), only for the CPU backend
        from tirc.codegen.llvm.target import resolve_cpu

        value = resolve_cpu(value)
    return value
