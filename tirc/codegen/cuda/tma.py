"""Hopper's mbarriers and TMA loads as CUDA C: inline PTX in the kernels, and the tensor maps
the kernels read through, one `const __grid_constant__ tirc_tensor_map` parameter per map
(tirc.ir.tma.tensor_maps), built by the launcher with cuTensorMapEncodeTiled.

    T.ptx_mbarrier_wait(bar.data, 0, p)  ->  tirc_mbarrier_wait(<shared address>, p)
    T.ptx_tma_load("float16", A, 2, 128, M, N, 64, 64, S.data, 0, bar.data, 0, y, x)
      -> asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx"
                      "::bytes [%0], [%1, {%2, %3}], [%4];" :: "r"(S), "l"(&A_tensor_map),
                      "r"(x), "r"(y), "r"(bar) : "memory")

`tirc_tensor_map` is CUtensorMap's size and alignment (128 bytes, 64-aligned), declared here
so that NVRTC, which has no cuda.h, compiles the kernels.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.codegen.cuda import types
from tirc.codegen.cuda.expr import PRIMARY, Code, ExprPrinter
from tirc.codegen.cuda.writer import Writer
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.function import IRModule
from tirc.ir.node import Node
from tirc.ir.tma import TmaLoad, check_hopper_arch, tensor_maps, tma_load

TENSOR_MAP_TYPE = "tirc_tensor_map"
# tirc dtypes -> CUtensorMapDataType names (CU_TENSOR_MAP_DATA_TYPE_...); the copy moves bits,
# so signed and 8-bit float elements travel as unsigned ones of their size
TENSOR_MAP_DTYPES = {
    "uint8": "UINT8",
    "int8": "UINT8",
    "float8_e4m3fn": "UINT8",
    "float8_e5m2": "UINT8",
    "uint16": "UINT16",
    "int16": "UINT16",
    "uint32": "UINT32",
    "int32": "INT32",
    "uint64": "UINT64",
    "int64": "INT64",
    "float16": "FLOAT16",
    "float32": "FLOAT32",
    "float64": "FLOAT64",
    "bfloat16": "BFLOAT16",
}


def tensor_map_params(p: ExprPrinter, body: Node) -> list[str]:
    """The kernel parameters of the tensor maps `body` reads through, named in `p`."""
    params = []
    for load in tensor_maps(body):
        hint = load.tensor.name if isinstance(load.tensor, E.Var) else "tensor"
        name = p.names.fresh(f"{hint}_tensor_map")
        p.tensor_maps.append((load, name))
        params.append(f"const __grid_constant__ {TENSOR_MAP_TYPE} {name}")
    return params


def _shared(p: ExprPrinter, pointer: object, offset: object, element: str) -> str:
    return f"(unsigned)__cvta_generic_to_shared((({element}*)({p(pointer)})) + ({p(offset)}))"


def _barrier(p: ExprPrinter, call: E.Call) -> str:
    return _shared(p, call.args[0], call.args[1], "unsigned long long")


def _asm(instruction: str, operands: str) -> Code:
    end = "" if instruction.endswith("}") else ";"
    return f'asm volatile("{instruction}{end}\\n" :: {operands} : "memory")', PRIMARY


def print_init(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    count = f'"r"((unsigned)({p(call.args[2])}))'
    return _asm("mbarrier.init.shared::cta.b64 [%0], %1", f'"r"({_barrier(p, call)}), {count}')


def print_arrive(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    if call.op == "ptx_mbarrier_arrive_expect_tx":
        instruction = "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1"
        operands = f'"r"({_barrier(p, call)}), "r"((unsigned)({p(call.args[2])}))'
    else:
        instruction = "mbarrier.arrive.shared::cta.b64 state, [%0]"
        operands = f'"r"({_barrier(p, call)})'
    return _asm(f"{{\\n.reg .b64 state;\\n{instruction};\\n}}", operands)


def print_wait(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return f"tirc_mbarrier_wait({_barrier(p, call)}, (unsigned)({p(call.args[2])}))", PRIMARY


def print_inval(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return _asm("mbarrier.inval.shared::cta.b64 [%0]", f'"r"({_barrier(p, call)})')


def print_tma_copy(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    """A TMA load (completing on its mbarrier) or store (in the thread's bulk group)."""
    load = tma_load(call)
    name = _map_name(p, load)
    rank = load.rank
    coords = "{" + ", ".join(f"%{2 + i}" for i in range(rank)) + "}"
    operands = [
        f'"r"({_shared(p, load.shared, load.shared_offset, types.c_type(load.dtype))})',
        f'"l"((unsigned long long)&{name})',
        *(f'"r"((int)({p(coord)}))' for coord in reversed(load.coords)),
    ]
    if load.barrier is None or load.barrier_index is None:
        instruction = (
            f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [%1, {coords}], [%0]"
        )
        return _asm(instruction, ", ".join(operands))
    instruction = (
        f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes"
        f"{'.multicast::cluster' if load.multicast is not None else ''} "
        f"[%0], [%1, {coords}], [%{2 + rank}]"
    )
    operands.append(f'"r"({_shared(p, load.barrier, load.barrier_index, "unsigned long long")})')
    if load.multicast is not None:  # a 16-bit mask of the cluster's blocks
        instruction += f", %{3 + rank}"
        operands.append(f'"h"((unsigned short)({p(load.multicast)}))')
    return _asm(instruction, ", ".join(operands))


def print_store_commit(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return _asm("cp.async.bulk.commit_group", "")


def print_store_wait(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    count = call.args[0]
    if not isinstance(count, E.IntImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: the group count must be a constant")
    return _asm(f"cp.async.bulk.wait_group {count.value}", "")


def _map_name(p: ExprPrinter, load: TmaLoad) -> str:
    for other, name in p.tensor_maps:
        if other.same_map(load):
            return name
    raise DiagnosticError.at(load.call.span, f"CUDA codegen: T.{load.call.op} outside a kernel")


HANDLERS = {
    "ptx_mbarrier_init": print_init,
    "ptx_mbarrier_arrive": print_arrive,
    "ptx_mbarrier_arrive_expect_tx": print_arrive,
    "ptx_mbarrier_wait": print_wait,
    "ptx_mbarrier_inval": print_inval,
    "ptx_tma_load": print_tma_copy,
    "ptx_tma_load_multicast": print_tma_copy,
    "ptx_tma_store": print_tma_copy,
    "ptx_tma_store_commit": print_store_commit,
    "ptx_tma_store_wait": print_store_wait,
}


def encode_tensor_maps(
    out: Writer,
    p: ExprPrinter,
    maps: list[TmaLoad],
    at_launch: Callable[[E.PrimExpr], E.PrimExpr],
    names: list[str],
) -> None:
    """Launcher lines that build each map (over the host's values: `at_launch` maps a kernel
    expression to the host's) into the variables `names`, returning the error if one fails."""
    for load, name in zip(maps, names, strict=True):
        dtype = TENSOR_MAP_DTYPES.get(str(load.dtype))
        if dtype is None:
            raise DiagnosticError.at(
                load.call.span, f"T.{load.call.op}: a tensor map cannot hold {load.dtype}"
            )
        shape = [p(at_launch(extent)) for extent in reversed(load.shape)]
        strides = []
        for index in range(1, load.rank):
            step = " * ".join(f"(cuuint64_t)({extent})" for extent in shape[:index])
            strides.append(f"{step} * {load.element_bytes}")
        out.line(f"{TENSOR_MAP_TYPE} {name};")
        with out.block("do", "} while (0);"):
            dims = ", ".join(f"(cuuint64_t)({extent})" for extent in shape)
            out.line(f"const cuuint64_t tirc_dims[{load.rank}] = {{{dims}}};")
            out.line(
                f"const cuuint64_t tirc_strides[{max(1, load.rank - 1)}] = "
                f"{{{', '.join(strides) or '0'}}};"
            )
            box = ", ".join(str(extent) for extent in reversed(load.box))
            out.line(f"const cuuint32_t tirc_box[{load.rank}] = {{{box}}};")
            tensor = p(at_launch(load.tensor))
            out.line(
                f"int tirc_status = tirc_encode_tensor_map(&{name}, "
                f"CU_TENSOR_MAP_DATA_TYPE_{dtype}, {load.rank}, (void*)({tensor}), tirc_dims, "
                f"tirc_strides, tirc_box, {load.swizzle});"
            )
            out.line("if (tirc_status != 0) return tirc_status;")


def check_tma_arch(module: IRModule, arch: str) -> None:
    """A located error at the first mbarrier or TMA call when `arch` predates them."""
    for _, func in module.functions:
        check_hopper_arch(func.body, arch)
