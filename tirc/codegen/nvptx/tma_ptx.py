"""Hopper's mbarriers and TMA copies for --ptx-via llvm: the same inline PTX as the CUDA C
backend (tirc/codegen/cuda/tma.py; tirc.ir.tma says what the operands mean), with shared
addresses as 32-bit addrspace(3) integers (what `__cvta_generic_to_shared` gives).

Each tensor map is a kernel parameter after the program's own, in tirc.ir.tma.tensor_maps's
order, as in CUDA C, so that one launch (tirc/runtime/cuda_host.py) serves both paths: a
byval [128 x i8] of alignment 64 marked grid_constant (`nvvm.annotations`; CUDA's
`const __grid_constant__`), which PTX declares `.param .align 64 .b8 name[128]` and whose
generic address (`cvta.param`) the copy reads, with no copy to local memory.

    T.ptx_mbarrier_wait(bar.data, 0, p)
    -> loop: %done = call i32 asm sideeffect "{ .reg .pred p; mbarrier.try_wait.parity...
             selp.u32 $0, 1, 0, p; }", "=r,r,r,~{memory}"(i32 %bar, i32 %p)
             br (%done != 0), exit, loop
"""

from __future__ import annotations

import llvmlite.ir as ir

from tirc.codegen.nvptx import types
from tirc.codegen.nvptx.annotations import annotate
from tirc.codegen.nvptx.ptx import (
    _ZERO,
    _asm,
    _int,
    _operand_list,
    instruction,
    shared_address,
)
from tirc.codegen.nvptx.values import ValueBuilder
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.dtype import parse_dtype
from tirc.ir.tma import TmaLoad, tma_load

MAP_BYTES = 128  # sizeof(CUtensorMap)
MAP_ALIGNMENT = 64  # alignof(CUtensorMap)
# a typed pointer, because llvmlite spells byval(<type>) from the pointee
TENSOR_MAP = ir.PointerType(ir.ArrayType(types.I8, MAP_BYTES))
_BARRIER = parse_dtype("uint64")
_U32 = parse_dtype("uint32")
_I32 = parse_dtype("int32")


def bind_tensor_maps(
    function: ir.Function, maps: list[TmaLoad], first: int
) -> list[tuple[TmaLoad, ir.Argument]]:
    """Names and marks the parameters `first`.. of `function` as the tensor maps `maps`
    (byval, 64-aligned, grid_constant), and returns each map with its parameter."""
    bound = []
    for load, argument in zip(maps, function.args[first:], strict=True):
        hint = load.tensor.name if isinstance(load.tensor, E.Var) else "tensor"
        argument.name = f"{hint}_tensor_map"
        argument.add_attribute("byval")
        argument.attributes.align = MAP_ALIGNMENT
        bound.append((load, argument))
    if bound:  # the parameters counted from 1
        annotate(function, "grid_constant", [first + 1 + i for i in range(len(bound))])
    return bound


def _u32(v: ValueBuilder, expr: E.PrimExpr) -> ir.Value:
    """`(unsigned)(expr)`, as C converts it."""
    return v.cast(v(expr), expr.dtype, _U32)


def _barrier(v: ValueBuilder, call: E.Call) -> ir.Value:
    return shared_address(v, call.args[0], call.args[1], _BARRIER)


def _asm_statement(
    v: ValueBuilder, text: str, constraints: list[str], args: list[ir.Value]
) -> None:
    _asm(v, text, ",".join([*constraints, "~{memory}"]), [], args)


def lower_init(v: ValueBuilder, call: E.Call) -> ir.Value:
    count = call.args[2]
    assert isinstance(count, E.PrimExpr)
    text = "mbarrier.init.shared::cta.b64 [$0], $1;"
    _asm_statement(v, text, ["r", "r"], [_barrier(v, call), _u32(v, count)])
    return _ZERO


def lower_arrive(v: ValueBuilder, call: E.Call) -> ir.Value:
    if call.op == "ptx_mbarrier_arrive_expect_tx":
        count = call.args[2]
        assert isinstance(count, E.PrimExpr)
        instruction = "mbarrier.arrive.expect_tx.shared::cta.b64 state, [$0], $1;"
        constraints, args = ["r", "r"], [_barrier(v, call), _u32(v, count)]
    else:
        instruction = "mbarrier.arrive.shared::cta.b64 state, [$0];"
        constraints, args = ["r"], [_barrier(v, call)]
    _asm_statement(v, f"{{ .reg .b64 state; {instruction} }}", constraints, args)
    return _ZERO


def lower_wait(v: ValueBuilder, call: E.Call) -> ir.Value:
    """try_wait.parity until the phase of that parity has completed (CUDA C's
    tirc_mbarrier_wait)."""
    parity = call.args[2]
    assert isinstance(parity, E.PrimExpr)
    barrier, phase = _barrier(v, call), _u32(v, parity)
    text = (
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
        "selp.u32 $0, 1, 0, p; }"
    )
    loop = v.b.append_basic_block("mbarrier_wait")
    done = v.b.append_basic_block("mbarrier_done")
    v.b.branch(loop)
    v.b.position_at_end(loop)
    (flag,) = _asm(v, text, "=r,r,r,~{memory}", [types.I32], [barrier, phase])
    v.b.cbranch(v.b.icmp_unsigned("!=", flag, _ZERO), done, loop)
    v.b.position_at_end(done)
    return _ZERO


def lower_inval(v: ValueBuilder, call: E.Call) -> ir.Value:
    _asm_statement(v, "mbarrier.inval.shared::cta.b64 [$0];", ["r"], [_barrier(v, call)])
    return _ZERO


def lower_tma_copy(v: ValueBuilder, call: E.Call) -> ir.Value:
    """A TMA load (completing on its mbarrier) or store (in the thread's bulk group)."""
    load = tma_load(call)
    rank = load.rank
    shared = shared_address(v, load.shared, load.shared_offset, load.dtype)
    coords = [v.cast(v(coord), coord.dtype, _I32) for coord in reversed(load.coords)]
    args = [shared, v.b.ptrtoint(_map(v, load), types.I64), *coords]
    constraints = ["r", "l", *["r"] * rank]
    box = f"[$1, {_operand_list(2, rank)}]"
    if load.barrier is None or load.barrier_index is None:
        text = f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group {box}, [$0];"
        _asm_statement(v, text, constraints, args)
        return _ZERO
    barrier = shared_address(v, load.barrier, load.barrier_index, _BARRIER)
    text = (
        f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "
        f"[$0], {box}, [${2 + rank}];"
    )
    _asm_statement(v, text, [*constraints, "r"], [*args, barrier])
    return _ZERO


def _map(v: ValueBuilder, load: TmaLoad) -> ir.Argument:
    for other, argument in v.tensor_maps:
        if other.same_map(load):
            return argument
    raise DiagnosticError.at(load.call.span, f"--ptx-via llvm: T.{load.call.op} outside a kernel")


def lower_store_wait(v: ValueBuilder, call: E.Call) -> ir.Value:
    count = _int(call, 0, "group count")
    _asm_statement(v, f"cp.async.bulk.wait_group {count};", [], [])
    return _ZERO


LOWERINGS = {
    "ptx_mbarrier_init": lower_init,
    "ptx_mbarrier_arrive": lower_arrive,
    "ptx_mbarrier_arrive_expect_tx": lower_arrive,
    "ptx_mbarrier_wait": lower_wait,
    "ptx_mbarrier_inval": lower_inval,
    "ptx_tma_load": lower_tma_copy,
    "ptx_tma_store": lower_tma_copy,
    "ptx_tma_store_commit": instruction("cp.async.bulk.commit_group;"),
    "ptx_tma_store_wait": lower_store_wait,
}
