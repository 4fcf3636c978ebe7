"""Warp-level tensor-core PTX as CUDA C inline asm: mma.sync, ldmatrix, cp.async, mma_store/fill.

The calls name per-thread register arrays (local buffers) and element offsets into them, as
TVM's lowered tensor-core code does:

    T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32",
              A.data, 0, B.data, 0, C.data, 0, T.bool(False))
    -> asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, ...}, ...;\\n"
                    : "+f"(((float*)(C + 0))[0]), ... : "r"(((unsigned*)(A + 0))[0]), ...)

Operand registers are the 32-bit words of those arrays in order (two f16 per word, four s8),
as PTX lays the fragments out; the accumulator is read and written in place ("+" operands).
`tirc.ir.ptx` says which matrix elements each lane's words hold.
"""

from __future__ import annotations

from tirc.codegen.cuda import types
from tirc.codegen.cuda.expr import PRIMARY, Code, ExprPrinter
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.ptx import ELEMENT_DTYPES, mma_shape


def _string(call: E.Call, index: int, what: str) -> str:
    arg = call.args[index]
    if not isinstance(arg, E.StringImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: the {what} must be a string")
    return arg.value


def _int(call: E.Call, index: int, what: str) -> int:
    arg = call.args[index]
    if not isinstance(arg, E.IntImm):
        raise DiagnosticError.at(call.span, f"T.{call.op}: the {what} must be a constant")
    return arg.value


def _words(
    p: ExprPrinter, pointer: object, offset: object, element: str, ctype: str, count: int
) -> list[str]:
    """`count` consecutive `ctype` words from `element` number `offset` of a register array."""
    base = f"(({ctype}*)(({element}*)({p(pointer)}) + ({p(offset)})))"
    return [f"{base}[{i}]" for i in range(count)]


def _element(ptx_type: str) -> str:
    return types.c_type(parse_dtype(ELEMENT_DTYPES[ptx_type]))


def _operands(names: list[str], first: int) -> str:
    return "{" + ", ".join(f"%{first + i}" for i in range(len(names))) + "}"


UINT64 = parse_dtype("uint64")
_WORD = {"f32": ("float", "f"), "f64": ("double", "d")}


def print_mma(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    """ptx_mma(shape, a_layout, b_layout, a_type, b_type, c_type, a, a_off, b, b_off, c,
    c_off, saturate[, bit_op]): D = A x B + C with D = C, one mma.sync per warp."""
    shape = mma_shape(call)
    a_layout, b_layout = _string(call, 1, "A layout"), _string(call, 2, "B layout")
    a, a_off, b, b_off, c, c_off, saturate = call.args[6:13]
    satfinite = ".satfinite" if isinstance(saturate, E.IntImm) and saturate.value else ""
    a_ctype = _WORD.get(shape.a_type, ("unsigned", "r"))
    c_ctype = _WORD.get(shape.c_type, ("unsigned", "r"))
    a_element, c_element = _element(shape.a_type), _element(shape.c_type)
    a_words = _words(p, a, a_off, a_element, a_ctype[0], shape.a_words)
    b_words = _words(p, b, b_off, a_element, a_ctype[0], shape.b_words)
    c_words = _words(p, c, c_off, c_element, c_ctype[0], shape.c_words)
    c_names = _operands(c_words, 0)
    a_names = _operands(a_words, len(c_words))
    b_names = _operands(b_words, len(c_words) + len(a_words))
    bit_op = ""
    if len(call.args) > 13 and isinstance(call.args[13], E.StringImm) and call.args[13].value:
        bit_op = f".{call.args[13].value}"
    instruction = (
        f"mma.sync.aligned.{shape.name}.{a_layout}.{b_layout}{satfinite}.{shape.c_type}."
        f"{shape.a_type}.{shape.b_type}.{shape.c_type}{bit_op}"
    )
    outputs = ", ".join(f'"+{c_ctype[1]}"({word})' for word in c_words)
    inputs = ", ".join(f'"{a_ctype[1]}"({word})' for word in a_words + b_words)
    text = (
        f'asm volatile("{instruction} {c_names}, {a_names}, {b_names}, {c_names};\\n" '
        f": {outputs} : {inputs})"
    )
    return text, PRIMARY


def shared_address(p: ExprPrinter, pointer: object, offset: object, dtype: DataType) -> str:
    """The 32-bit shared-window address of element `offset` (of `dtype`) from `pointer`, as
    the buffer's base address plus each summand of the offsets scaled to bytes, unsigned:

        T.tvm_access_ptr(T.type_annotation("float16"), A_shared, s * 4096 + x * 8, ...), 0
        -> ((unsigned)__cvta_generic_to_shared(A_shared) + (unsigned)(s * 4096) * 2u
            + (unsigned)(x * 8) * 2u)

    It equals `(unsigned)__cvta_generic_to_shared(pointer + offset)` (the window is linear
    and under 4 GiB, so the sums agree modulo 2^32), but as a 32-bit sum of terms nvcc may
    regroup: the base and the loop-invariant terms (a swizzle's XOR) are added once outside
    the loop and only the terms that vary (the pipeline stage) inside it. A generic pointer's
    64-bit sum of one int offset cannot be regrouped, and every ldmatrix and cp.async address
    was computed whole in every iteration (sass_mainloop.py: 19 of gemm_mma_async2's 85
    instructions besides the HMMAs a k tile)."""
    base, terms = shared_terms(pointer, offset, dtype)
    start = p.names(base) if isinstance(base, E.Var) else p(base)
    address = [f"(unsigned)__cvta_generic_to_shared({start})"]
    for term, size in terms:
        scaled = f" * {size}u" if size != 1 else ""
        address.append(f"(unsigned)({p(term)}){scaled}")
    return f"({' + '.join(address)})"


def shared_terms(
    pointer: object, offset: object, dtype: DataType
) -> tuple[object, list[tuple[object, int]]]:
    """A shared address as its base pointer (a buffer's data, or the pointer itself) and the
    summands of its element offsets, each with its element's size in bytes (zeros left out):
    what `shared_address` and the NVPTX backend's shared addresses add up."""
    base = pointer
    offsets: list[tuple[object, int]] = [(offset, _bytes(dtype))]
    if isinstance(pointer, E.Call) and pointer.op == "tvm_access_ptr":
        annotation, base, first = pointer.args[0], pointer.args[1], pointer.args[2]
        if isinstance(annotation, E.PrimExpr):  # T.type_annotation("float16"): the element
            offsets.insert(0, (first, _bytes(annotation.dtype)))
        else:
            base = pointer
    terms = [
        (term, size)
        for value, size in offsets
        for term in _summands(value)
        if not E.is_const_int(term, 0)
    ]
    return base, terms


def _summands(value: object) -> list[object]:
    """`a + b + c` as [a, b, c]: each scaled apart, so that nvcc can regroup them."""
    if isinstance(value, E.Add):
        return _summands(value.a) + _summands(value.b)
    return [value]


def _bytes(dtype: DataType) -> int:
    return dtype.bits * dtype.lanes // 8


def print_ldmatrix(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    """ptx_ldmatrix(trans, num, ".b16", local, local_off, shared, shared_off): `num` 8x8
    matrices of 16-bit elements from shared memory; each lane gets one word per matrix."""
    trans, num = call.args[0], _int(call, 1, "matrix count")
    kind = _string(call, 2, "element type")
    if num not in (1, 2, 4) or kind != ".b16":
        raise DiagnosticError.at(
            call.span, f"T.ptx_ldmatrix loads .x1, .x2 or .x4 of .b16, not .x{num} of {kind}"
        )
    local, local_off, shared, shared_off = call.args[3:7]
    element = types.c_type(call.dtype.element)
    words = _words(p, local, local_off, element, "unsigned", num)
    transposed = ".trans" if isinstance(trans, E.IntImm) and trans.value else ""
    outputs = ", ".join(f'"=r"({word})' for word in words)
    text = (
        f'asm volatile("ldmatrix.sync.aligned.m8n8.x{num}{transposed}.shared.b16 '
        f'{_operands(words, 0)}, [%{num}];\\n" : {outputs} : '
        f'"r"({shared_address(p, shared, shared_off, call.dtype.element)}))'
    )
    return text, PRIMARY


def print_cp_async(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    """ptx_cp_async(shared, shared_off, global, global_off, bytes[, predicate]): an
    asynchronous copy of 4, 8 or 16 bytes; with a false predicate the bytes are zeros."""
    shared, shared_off, source, source_off = call.args[:4]
    size = _int(call, 4, "byte count")
    if size not in (4, 8, 16):
        raise DiagnosticError.at(call.span, f"T.ptx_cp_async copies 4, 8 or 16 bytes, not {size}")
    cache = "cg" if size == 16 else "ca"
    element = call.dtype.element
    global_pointer = f"(({types.c_type(element)}*)({p(source)})) + ({p(source_off)})"
    destination = shared_address(p, shared, shared_off, element)
    if len(call.args) > 5:
        predicate = p(call.args[5])
        text = (
            f'asm volatile("cp.async.{cache}.shared.global [%0], [%1], {size}, %2;\\n" :: '
            f'"r"({destination}), "l"({global_pointer}), "r"(({predicate}) ? {size} : 0))'
        )
    else:
        text = (
            f'asm volatile("cp.async.{cache}.shared.global [%0], [%1], {size};\\n" :: '
            f'"r"({destination}), "l"({global_pointer}))'
        )
    return text, PRIMARY


def print_commit_group(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    return 'asm volatile("cp.async.commit_group;\\n" ::)', PRIMARY


def print_wait_group(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    count = _int(call, 0, "group count")
    return f'asm volatile("cp.async.wait_group {count};\\n" ::)', PRIMARY


def print_mbarrier_arrive_cp_async(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    """ptx_mbarrier_arrive_cp_async(bar, index): cp.async.mbarrier.arrive.noinc, an arrival
    on the mbarrier once every cp.async the thread issued before it has landed (the barrier's
    count includes it: noinc)."""
    barrier = shared_address(p, call.args[0], call.args[1], UINT64)
    return (
        f'asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\\n" :: '
        f'"r"({barrier}) : "memory")',
        PRIMARY,
    )


def print_mma_fill(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    """mma_fill(size, local, offset): zero `size` accumulator registers."""
    size = _int(call, 0, "register count")
    local, offset = call.args[1], call.args[2]
    element = types.c_type(call.dtype.element)
    return f"tirc_mma_fill(({element}*)({p(local)}) + ({p(offset)}), {size})", PRIMARY


def print_mma_store(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    """mma_store(m, n, dst, local, local_off, stride): each lane writes the accumulator
    elements it holds (the m16n8 layout, n / 8 of them side by side) to dst[row * stride + col]."""
    m, n = _int(call, 0, "row count"), _int(call, 1, "column count")
    if m != 16 or n % 8:
        raise DiagnosticError.at(
            call.span, f"T.mma_store stores 16 x 8k accumulator tiles, not {m} x {n}"
        )
    dst, local, offset, stride = call.args[2:6]
    element = types.c_type(call.dtype.element)
    return (
        f"tirc_mma_store(({element}*)({p(dst)}), ({element}*)({p(local)}) + ({p(offset)}), "
        f"{n // 8}, {p(stride)})",
        PRIMARY,
    )


HANDLERS = {
    "ptx_mma": print_mma,
    "ptx_ldmatrix": print_ldmatrix,
    "ptx_cp_async": print_cp_async,
    "ptx_commit_group": print_commit_group,
    "ptx_wait_group": print_wait_group,
    "ptx_mbarrier_arrive_cp_async": print_mbarrier_arrive_cp_async,
    "mma_fill": print_mma_fill,
    "mma_store": print_mma_store,
}
