"""TVM 0.27's spelling of tirc's CUDA intrinsics, as calls of the IR: the printer writes a call
in TVM's form (`to_tvm`), the parser turns TVM's form back into tirc's (`from_tvm`), so that what
tirc prints parses in TVM 0.27 and reads back the same. `from_tvm(to_tvm(call)) == call`.

Most are instructions of TVM's table-driven `T.ptx` namespace, one family a name:
`T.ptx.<family>(operands..., modifier tokens...)`, one string per modifier slot ("" for one
left out). tirc names a barrier by its buffer's data and an index; TVM by its address:

    T.ptx_mbarrier_init(full.data, s, 128)
    -> T.ptx.mbarrier(T.tvm_access_ptr(T.type_annotation("uint64"), full.data, s, 1, 3), 128,
                      "init", "", "shared::cta", "b64", "")

TVM wraps that address in `T.cuda.cvta_generic_to_shared` when it prints; `from_tvm` reads it
with or without. The cluster's special registers are `T.cuda.mov_sreg(32, "%clusterid.x")`.
tirc's wgmma, TMA copies and mapa, whose operands are tirc's own (buffers and layouts that tirc
turns into descriptors), have no TVM spelling and print as tirc's.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.cluster import AXES, AXIS_OPS, REGISTERS
from tirc.ir.intrinsics import FIXED_RESULTS, lookup


@dataclass(frozen=True, slots=True)
class PtxForm:
    """tirc's intrinsic `op` as the TVM instruction `T.ptx.<family>`."""

    op: str
    family: str
    # the modifier tokens; an int is the index of the tirc call's string argument that
    # fills the slot (setmaxnreg's "inc"/"dec"), which is then no operand
    tokens: tuple[str | int, ...]
    barrier: bool = False  # the call's first two arguments (data, index) are one address


UINT64 = dt.make("uint", 64)
_SHARED_B64 = ("shared::cta", "b64", "")
FORMS = (
    PtxForm("ptx_commit_group", "cp", ("async", "commit_group", "")),
    PtxForm("ptx_wait_group", "cp", ("async", "wait_group", "")),
    PtxForm("ptx_tma_store_commit", "cp", ("async", "bulk", "commit_group", "")),
    PtxForm("ptx_tma_store_wait", "cp", ("async", "bulk", "wait_group", "", "")),
    PtxForm(
        "ptx_mbarrier_arrive_cp_async",
        "cp",
        ("async", "mbarrier", "arrive", "noinc", *_SHARED_B64),
        barrier=True,
    ),
    PtxForm("ptx_wgmma_fence", "wgmma", ("fence", "sync", "aligned", "")),
    PtxForm("ptx_wgmma_commit_group", "wgmma", ("commit_group", "sync", "aligned", "")),
    PtxForm("ptx_wgmma_wait_group", "wgmma", ("wait_group", "sync", "aligned", "")),
    PtxForm("ptx_fence_proxy_async", "fence", ("proxy", "async", "shared::cta", "")),
    PtxForm("ptx_setmaxnreg", "setmaxnreg", (0, "sync", "aligned", "u32", "")),
    PtxForm("ptx_bar_sync", "bar", ("", "sync", "")),
    PtxForm("ptx_bar_arrive", "bar", ("", "arrive", "")),
    PtxForm("ptx_barrier_cluster_arrive", "barrier", ("cluster", "arrive", "", "", "")),
    PtxForm("ptx_barrier_cluster_wait", "barrier", ("cluster", "wait", "", "", "")),
    PtxForm("ptx_mbarrier_init", "mbarrier", ("init", "", *_SHARED_B64), barrier=True),
    PtxForm("ptx_mbarrier_arrive", "mbarrier", ("arrive", "", "", *_SHARED_B64), barrier=True),
    PtxForm(
        "ptx_mbarrier_arrive_expect_tx",
        "mbarrier",
        ("arrive", "expect_tx", "", "", *_SHARED_B64),
        barrier=True,
    ),
    PtxForm("ptx_mbarrier_inval", "mbarrier", ("inval", *_SHARED_B64), barrier=True),
)
FAMILIES = tuple(sorted({form.family for form in FORMS}))
_BY_OP = {form.op: form for form in FORMS}

# TVM's names of the intrinsics it took from TVM before 0.27, whose result dtype it writes as
# a keyword (`dtype="float32"`), left out where it is the default written here (None: none).
KEYWORD_DTYPE: dict[str, tuple[str, dt.DataType | None]] = {
    "ptx_mma": ("ptx_legacy.mma", dt.VOID),
    "ptx_ldmatrix": ("ptx_legacy.ldmatrix", dt.INT8),
    "mma_fill": ("cuda.mma_fill_legacy", None),
    "mma_store": ("cuda.mma_store_legacy", None),
}
# T.ptx_cp_async(dtype, dst, dst_offset, src, src_offset, bytes) as TVM's async-copy pass writes
# it; the predicated form (a seventh argument) has no TVM spelling
CP_ASYNC_RAW = "s_tir.cp_async_raw"

_AXIS_OPS = frozenset(AXIS_OPS)
MBARRIER_WAIT = "cuda.mbarrier_wait"  # T.cuda.mbarrier_wait(address, parity)
MOV_SREG = "cuda.mov_sreg"  # T.cuda.mov_sreg(32, "%cluster_ctarank")
CVTA_SHARED = "cuda.cvta_generic_to_shared"


def barrier_address(data: E.PrimExpr, index: E.PrimExpr) -> E.Call:
    """The address of barrier `index` of the uint64 array at `data`."""
    annotation = E.Call(UINT64, "type_annotation", ())
    one, read_write = E.IntImm(1, dt.INT32), E.IntImm(3, dt.INT32)
    return E.Call(dt.HANDLE, "tvm_access_ptr", (annotation, data, index, one, read_write))


def barrier_of(address: object) -> tuple[E.PrimExpr, E.PrimExpr] | None:
    """(data, index) of a barrier address `barrier_address` builds, maybe wrapped in
    `T.cuda.cvta_generic_to_shared` as TVM prints it; None for any other value."""
    if isinstance(address, E.Call) and address.op == CVTA_SHARED and len(address.args) == 1:
        address = address.args[0]
    if not (
        isinstance(address, E.Call) and address.op == "tvm_access_ptr" and len(address.args) == 5
    ):
        return None
    annotation, data, index, extent, mask = address.args
    if not (
        isinstance(annotation, E.Call)
        and annotation.op == "type_annotation"
        and annotation.dtype == UINT64
        and _is_int(extent, 1)
        and _is_int(mask, 3)
        and isinstance(data, E.PrimExpr)
        and isinstance(index, E.PrimExpr)
    ):
        return None
    return data, index


def to_tvm(call: E.Call) -> E.Call | None:
    """`call` as TVM 0.27 spells it, or None where TVM spells it as tirc does or not at all."""
    if call.dtype != FIXED_RESULTS.get(call.op, dt.INT32 if call.op in REGISTERS else None):
        return None
    args = call.args
    form = _BY_OP.get(call.op)
    if form is not None:
        return _to_ptx(form, call)
    if call.op == "ptx_mbarrier_wait" and len(args) == 3:
        data, index, parity = args
        if not (isinstance(data, E.PrimExpr) and isinstance(index, E.PrimExpr)):
            return None
        return _call(MBARRIER_WAIT, (barrier_address(data, index), parity), call)
    if call.op in REGISTERS:
        register = REGISTERS[call.op]
        if args:
            axis = args[0]
            if not (isinstance(axis, E.StringImm) and axis.value in AXES):
                return None
            register = f"{register}.{axis.value}"
        bits = E.IntImm(32, dt.INT32)
        return E.Call(dt.INT32, MOV_SREG, (bits, E.StringImm(f"%{register}")), span=call.span)
    return None


def from_tvm(call: E.Call) -> E.Call | None:
    """tirc's intrinsic for a call spelled as TVM 0.27 spells it, or None for a call of TVM's
    that is none of tirc's (an instruction tirc reads and prints back but does not compile)."""
    if call.op.startswith("ptx."):
        family = call.op.removeprefix("ptx.")
        for form in FORMS:
            if form.family == family:
                found = _from_ptx(form, call)
                if found is not None:
                    return found
        return None
    if call.op == MBARRIER_WAIT and len(call.args) == 2:
        barrier = barrier_of(call.args[0])
        if barrier is None:
            return None
        return _call("ptx_mbarrier_wait", (*barrier, call.args[1]), call)
    if call.op == MOV_SREG and len(call.args) == 2:
        bits, name = call.args
        if not (_is_int(bits, 32) and isinstance(name, E.StringImm)):
            return None
        register, _, axis = name.value.removeprefix("%").partition(".")
        for op, known in REGISTERS.items():
            if known == register and (axis in AXES if op in _AXIS_OPS else not axis):
                values = (E.StringImm(axis),) if axis else ()
                return E.Call(dt.INT32, op, values, span=call.span)
    return None


def _to_ptx(form: PtxForm, call: E.Call) -> E.Call | None:
    args = call.args
    token_args = {token for token in form.tokens if isinstance(token, int)}
    tokens: list[object] = []
    for token in form.tokens:
        if isinstance(token, int):
            if token >= len(args) or not isinstance(args[token], E.StringImm):
                return None
            tokens.append(args[token])
        else:
            tokens.append(E.StringImm(token))
    operands = [arg for position, arg in enumerate(args) if position not in token_args]
    if form.barrier:
        if len(operands) < 2:
            return None
        data, index = operands[0], operands[1]
        if not (isinstance(data, E.PrimExpr) and isinstance(index, E.PrimExpr)):
            return None
        operands = [barrier_address(data, index), *operands[2:]]
    return _call(f"ptx.{form.family}", (*operands, *tokens), call)


def _from_ptx(form: PtxForm, call: E.Call) -> E.Call | None:
    count = len(form.tokens)
    if len(call.args) < count:
        return None
    operands, tokens = list(call.args[: len(call.args) - count]), call.args[-count:]
    taken: dict[int, E.StringImm] = {}
    for want, got in zip(form.tokens, tokens, strict=True):
        if not isinstance(got, E.StringImm):
            return None
        if isinstance(want, int):
            taken[want] = got
        elif got.value != want:
            return None
    if any(isinstance(operand, E.StringImm) for operand in operands):
        return None
    if form.barrier:
        barrier = barrier_of(operands[0]) if operands else None
        if barrier is None:
            return None
        operands = [*barrier, *operands[1:]]
    args: list[object] = []
    for position in range(len(operands) + len(taken)):
        args.append(taken[position] if position in taken else operands.pop(0))
    intrinsic = lookup(form.op)
    assert intrinsic is not None, form.op
    if len(args) != intrinsic.min_args or set(taken) - set(range(len(args))):
        return None
    return _call(form.op, tuple(args), call)


def _call(op: str, args: tuple[object, ...], like: E.Call) -> E.Call:
    return E.Call(FIXED_RESULTS.get(op, dt.VOID), op, args, span=like.span)


def _is_int(value: object, wanted: int) -> bool:
    return isinstance(value, E.IntImm) and value.value == wanted
