"""inject-warp-specialization's wgmma consumers of a TMA ring (see its docstring): which
consumer stages qualify (`wgmma_issue`), and the pieces of the fast GEMMs' k loop they run
(one fenced and committed group a k tile, `wait_group`, one release a warp)."""

from __future__ import annotations

import dataclasses

from tirc.analysis.effects import reads_no_memory
from tirc.diagnostics import Span
from tirc.ir import expr as E
from tirc.ir import stmt as S

_SHARED = ("shared", "shared.dyn")


# what a tensor intrinsic's wgmma does around the wgmma: fences, barriers, its group and wait
_WGMMA_SYNC = (
    "ptx_fence_proxy_async",
    "tvm_storage_sync",
    "ptx_wgmma_fence",
    "ptx_wgmma_commit_group",
    "ptx_wgmma_wait_group",
)


def wgmma_issue(work: list[S.Stmt], tiles: set[E.Var]) -> list[S.Stmt] | None:
    """`work` without the fences, barriers, commits and waits around its wgmmas, where it is
    wgmmas of one shape reading only `tiles` in shared memory (a TMA ring's versions), with
    bindings of values that read no memory, serial loops and opaque blocks around them; None
    otherwise (then it stays as it is)."""
    shapes: set[object] = set()

    def strip(stmt: S.Stmt) -> list[S.Stmt] | None:
        if isinstance(stmt, S.SeqStmt):
            kept: list[S.Stmt] = []
            for item in stmt.stmts:
                found = strip(item)
                if found is None:
                    return None
                kept += found
            return kept
        if isinstance(stmt, S.For) and stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED):
            inner = strip(stmt.body)
            if inner is None:
                return None
            if not inner:
                return []
            # unrolled where its extent is known: each wgmma's descriptors become constants
            kind = S.ForKind.UNROLLED if isinstance(stmt.extent, E.IntImm) else stmt.kind
            return [dataclasses.replace(stmt, body=S.seq(*inner), kind=kind)]
        if isinstance(stmt, S.SBlockRealize):
            block = stmt.block
            if block.iter_vars or block.alloc_buffers or block.match_buffers:
                return None
            inner = strip(block.body)
            if inner is None:
                return None
            if not inner:
                return []
            return [dataclasses.replace(stmt, block=dataclasses.replace(block, body=S.seq(*inner)))]
        if isinstance(stmt, S.Bind):
            return [stmt] if reads_no_memory(stmt.value) else None
        if not isinstance(stmt, S.Evaluate) or not isinstance(stmt.value, E.Call):
            return None
        call = stmt.value
        if call.op in _WGMMA_SYNC:
            return []
        if call.op != "ptx_wgmma" or not _reads_only(call, tiles):
            return None
        shapes.add(call.args[0].value if isinstance(call.args[0], E.StringImm) else call)
        return [stmt]

    kept = strip(S.seq(*work))
    return kept if kept and len(shapes) == 1 else None


def _reads_only(call: E.Call, tiles: set[E.Var]) -> bool:
    """Whether a wgmma's shared operands are among `tiles` and its other arguments read no
    memory (its accumulator is registers)."""
    for arg in call.args:
        if isinstance(arg, E.Call) and arg.op == "tvm_access_ptr":
            if arg.args[1] not in tiles or not all(map(reads_no_memory, arg.args[2:])):
                return False
        elif isinstance(arg, E.Var) and arg.pointer is not None:
            if arg.pointer.scope in _SHARED:
                return False
        elif not reads_no_memory(arg):
            return False
    return True


def one_group(issued: list[S.Stmt], span: Span | None) -> list[S.Stmt]:
    """An iteration's wgmmas as one group: fenced once (the accumulators of same-shape
    wgmmas chain without a fence between them), committed once."""
    return [
        S.evaluate_call("ptx_wgmma_fence", span=span),
        *issued,
        S.evaluate_call("ptx_wgmma_commit_group", span=span),
    ]


def wgmma_wait(count: int, span: Span | None) -> S.Evaluate:
    return S.evaluate_call("ptx_wgmma_wait_group", count, span=span)


def warp_arrival(
    barrier: E.Var, index: E.PrimExpr, lane_zero: E.PrimExpr, span: Span | None
) -> list[S.Stmt]:
    """One arrival a warp: `__syncwarp` orders what every lane did (its wgmmas retired)
    before its first lane's arrival, which releases it all."""
    arrive = S.evaluate_call("ptx_mbarrier_arrive", barrier, index, span=span)
    return [S.storage_sync("warp", span), S.IfThenElse(lane_zero, arrive, span=span)]
