"""Expressions as LLVM IR values for NVPTX, vectors as LLVM vectors.

`if_then_else` branches, so that the arm not taken (often an out-of-bounds load) never runs.
Math beyond what PTX has instructions for calls libdevice's `__nv_*` functions, which the
module links in. Calls are lowered by `calls`, which registers its rule in `RULES`.
"""

from __future__ import annotations

import llvmlite.ir as ir

from tirc.codegen.nvptx import types
from tirc.codegen.nvptx.fragment import Fragment
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.functor import Dispatch
from tirc.ir.tma import TmaLoad

# PTX instructions through LLVM intrinsics
_INTRINSIC_MATH = {
    "sqrt": "llvm.sqrt",
    "fabs": "llvm.fabs",
    "floor": "llvm.floor",
    "ceil": "llvm.ceil",
    "trunc": "llvm.trunc",
    "round": "llvm.rint",
    "nearbyint": "llvm.rint",
}
# libdevice functions: float and double spellings are __nv_<name>f and __nv_<name>
_LIBDEVICE_MATH = (
    "exp exp2 exp10 log log2 log10 log1p expm1 rsqrt sin cos tan sinh cosh tanh asin acos "
    "atan asinh acosh atanh erf atan2 pow fmod hypot copysign nextafter"
).split()


class ValueBuilder:
    """Lowers expressions at the builder's position; `values` binds variables and data
    handles, `pointees` the element type of each handle where a buffer says it, `fragments`
    the wmma fragment buffers' data, `tensor_maps` the kernel's tensor-map parameters
    (tirc.ir.tma.tensor_maps)."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder) -> None:
        self.module = module
        self.b = builder
        self.values: dict[E.Var, ir.Value] = {}
        self.pointees: dict[E.Var, DataType] = {}
        self.fragments: dict[E.Var, Fragment] = {}
        self.tensor_maps: list[tuple[TmaLoad, ir.Argument]] = []
        self.uses_libdevice = False

    def __call__(self, expr: object) -> ir.Value:
        rule = RULES.get(type(expr))
        if rule is None:
            raise DiagnosticError.at(
                getattr(expr, "span", None), f"--ptx-via llvm: cannot lower {type(expr).__name__}"
            )
        return rule(self, expr)

    def function(self, name: str, result: ir.Type, args: list[ir.Type]) -> ir.Function:
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        return ir.Function(self.module, ir.FunctionType(result, args), name)

    def intrinsic(self, name: str, dtype: DataType, args: list[ir.Value]) -> ir.Value:
        llvm_type = types.value_type(dtype)
        suffix = types.scalar_type(dtype).intrinsic_name  # f16, bf16, f32, f64
        if dtype.is_vector:
            suffix = f"v{dtype.lanes}{suffix}"
        return self.b.call(
            self.function(f"{name}.{suffix}", llvm_type, [a.type for a in args]), args
        )

    def element_pointer(self, buffer: Buffer, index: ir.Value) -> ir.Value:
        base = self.values.get(buffer.data)
        if base is None:
            raise DiagnosticError.at(buffer.span, f"--ptx-via llvm: no memory for {buffer.name}")
        return self.b.gep(base, [index], source_etype=types.memory_type(buffer.dtype))

    def cast(self, value: ir.Value, source: DataType, target: DataType) -> ir.Value:
        return _convert(self.b, value, source, target)

    def broadcast(self, value: ir.Value, lanes: int) -> ir.Value:
        vector: ir.Value = ir.Constant(ir.VectorType(value.type, lanes), ir.Undefined)
        for lane in range(lanes):
            vector = self.b.insert_element(vector, value, ir.Constant(types.I32, lane))
        return vector


def _convert(b: ir.IRBuilder, value: ir.Value, source: DataType, target: DataType) -> ir.Value:
    if source.element == target.element:
        return value
    to = types.value_type(target)
    if target.element.is_bool:
        zero = ir.Constant(value.type, None)
        if source.is_float:
            return b.fcmp_unordered("!=", value, zero)
        return b.icmp_unsigned("!=", value, zero)
    if source.is_float and target.is_float:
        if target.bits == source.bits:  # half <-> bfloat: through float, as C converts
            value = b.fpext(value, ir.FloatType())
            return b.fptrunc(value, to)
        return b.fpext(value, to) if target.bits > source.bits else b.fptrunc(value, to)
    if source.is_float:
        return b.fptoui(value, to) if target.is_uint else b.fptosi(value, to)
    if target.is_float:
        signed = source.is_int
        return b.sitofp(value, to) if signed else b.uitofp(value, to)
    if target.bits < source.bits:
        return b.trunc(value, to)
    if target.bits == source.bits:
        return value
    return b.sext(value, to) if source.is_int else b.zext(value, to)


RULES: Dispatch[ValueBuilder, [], ir.Value] = Dispatch("--ptx-via llvm")


@RULES.register(E.Var)
def _var(v: ValueBuilder, node: E.Var) -> ir.Value:
    value = v.values.get(node)
    if value is None:
        raise DiagnosticError.at(node.span, f"--ptx-via llvm: '{node.name}' has no value here")
    return value


@RULES.register(E.IntImm)
def _int(v: ValueBuilder, node: E.IntImm) -> ir.Value:
    return ir.Constant(types.scalar_type(node.dtype), node.value)


@RULES.register(E.FloatImm)
def _float(v: ValueBuilder, node: E.FloatImm) -> ir.Value:
    return ir.Constant(types.scalar_type(node.dtype), node.value)


@RULES.register(E.Cast)
def _cast(v: ValueBuilder, node: E.Cast) -> ir.Value:
    return v.cast(v(node.value), node.value.dtype, node.dtype)


_ARITHMETIC = {  # class -> (int signed, int unsigned, float)
    E.Add: ("add", "add", "fadd"),
    E.Sub: ("sub", "sub", "fsub"),
    E.Mul: ("mul", "mul", "fmul"),
    E.Div: ("sdiv", "udiv", "fdiv"),
    E.Mod: ("srem", "urem", "frem"),
}
_COMPARE = {E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">="}


@RULES.register(E.Add, E.Sub, E.Mul, E.Div, E.Mod)  # the classes in _ARITHMETIC
def _arithmetic(v: ValueBuilder, node: E.BinaryOp) -> ir.Value:
    a, b = v(node.a), v(node.b)
    signed, unsigned, floating = _ARITHMETIC[type(node)]
    dtype = node.dtype
    name = floating if dtype.is_float else (unsigned if dtype.is_uint or dtype.is_bool else signed)
    return getattr(v.b, name)(a, b)


@RULES.register(E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE)  # the classes in _COMPARE
def _compare(v: ValueBuilder, node: E.CompareOp) -> ir.Value:
    a, b = v(node.a), v(node.b)
    operand: DataType = node.a.dtype
    symbol = _COMPARE[type(node)]
    if operand.is_float:
        if symbol == "!=":
            return v.b.fcmp_unordered(symbol, a, b)
        return v.b.fcmp_ordered(symbol, a, b)
    if operand.is_int:
        return v.b.icmp_signed(symbol, a, b)
    return v.b.icmp_unsigned(symbol, a, b)


@RULES.register(E.FloorDiv, E.FloorMod)
def _floor_div_mod(v: ValueBuilder, node: E.FloorDiv | E.FloorMod) -> ir.Value:
    a, b = v(node.a), v(node.b)
    dtype = node.dtype
    is_div = isinstance(node, E.FloorDiv)
    if dtype.is_float:
        quotient = v.intrinsic("llvm.floor", dtype, [v.b.fdiv(a, b)])
        return quotient if is_div else v.b.fsub(a, v.b.fmul(quotient, b))
    if dtype.is_uint:
        return v.b.udiv(a, b) if is_div else v.b.urem(a, b)
    quotient, remainder = v.b.sdiv(a, b), v.b.srem(a, b)
    zero = ir.Constant(a.type, None)
    # the truncated result is one too high where the remainder and divisor differ in sign
    adjust = v.b.and_(
        v.b.icmp_signed("!=", remainder, zero),
        v.b.xor(v.b.icmp_signed("<", remainder, zero), v.b.icmp_signed("<", b, zero)),
    )
    if is_div:
        return v.b.sub(quotient, v.b.zext(adjust, a.type))
    return v.b.add(remainder, v.b.select(adjust, b, zero))


@RULES.register(E.Min, E.Max)
def _min_max(v: ValueBuilder, node: E.Min | E.Max) -> ir.Value:
    a, b = v(node.a), v(node.b)
    dtype = node.dtype
    is_min = isinstance(node, E.Min)
    if dtype.is_float:
        return v.intrinsic("llvm.minnum" if is_min else "llvm.maxnum", dtype, [a, b])
    symbol = "<" if is_min else ">"
    if dtype.is_int:
        return v.b.select(v.b.icmp_signed(symbol, a, b), a, b)
    return v.b.select(v.b.icmp_unsigned(symbol, a, b), a, b)


@RULES.register(E.And, E.Or)
def _logic(v: ValueBuilder, node: E.LogicalOp) -> ir.Value:
    a, b = v(node.a), v(node.b)
    return v.b.and_(a, b) if isinstance(node, E.And) else v.b.or_(a, b)


@RULES.register(E.Not)
def _not(v: ValueBuilder, node: E.Not) -> ir.Value:
    return v.b.not_(v(node.a))


@RULES.register(E.Select)
def _select(v: ValueBuilder, node: E.Select) -> ir.Value:
    return v.b.select(v(node.condition), v(node.true_value), v(node.false_value))


@RULES.register(E.Ramp)
def _ramp(v: ValueBuilder, node: E.Ramp) -> ir.Value:
    base, stride = v(node.base), v(node.stride)
    vector: ir.Value = ir.Constant(ir.VectorType(base.type, node.lanes), ir.Undefined)
    for lane in range(node.lanes):
        offset = v.b.mul(stride, ir.Constant(base.type, lane))
        vector = v.b.insert_element(vector, v.b.add(base, offset), ir.Constant(types.I32, lane))
    return vector


@RULES.register(E.Broadcast)
def _broadcast(v: ValueBuilder, node: E.Broadcast) -> ir.Value:
    return v.broadcast(v(node.value), node.lanes)


@RULES.register(E.Shuffle)
def _shuffle(v: ValueBuilder, node: E.Shuffle) -> ir.Value:
    lanes = []
    for vector in node.vectors:
        value = v(vector)
        count = vector.dtype.lanes
        lanes += (
            [value]
            if count == 1
            else [v.b.extract_element(value, ir.Constant(types.I32, i)) for i in range(count)]
        )
    result: ir.Value = ir.Constant(types.value_type(node.dtype), ir.Undefined)
    for lane, index in enumerate(node.indices):
        if not isinstance(index, E.IntImm):
            raise DiagnosticError.at(node.span, "--ptx-via llvm: shuffle indices must be constant")
        result = v.b.insert_element(result, lanes[index.value], ir.Constant(types.I32, lane))
    return result


@RULES.register(E.Let)
def _let(v: ValueBuilder, node: E.Let) -> ir.Value:
    v.values[node.var] = v(node.value)
    return v(node.body)


@RULES.register(E.BufferLoad)
def _load(v: ValueBuilder, node: E.BufferLoad) -> ir.Value:
    if node.predicate is not None or len(node.indices) != 1:
        raise DiagnosticError.at(node.span, "--ptx-via llvm: only flat, unmasked loads")
    index = node.indices[0]
    buffer = node.buffer
    element = types.memory_type(buffer.dtype)
    alignment = types.element_bytes(buffer.dtype)
    if isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1):
        pointer = v.element_pointer(buffer, v(index.base))
        vector_type = ir.VectorType(element, index.lanes)
        value = v.b.load(pointer, typ=vector_type, align=alignment)
    elif index.dtype.is_vector:
        indices = v(index)
        value = ir.Constant(ir.VectorType(element, index.dtype.lanes), ir.Undefined)
        for lane in range(index.dtype.lanes):
            lane_index = v.b.extract_element(indices, ir.Constant(types.I32, lane))
            loaded = v.b.load(v.element_pointer(buffer, lane_index), typ=element, align=alignment)
            value = v.b.insert_element(value, loaded, ir.Constant(types.I32, lane))
    else:
        value = v.b.load(v.element_pointer(buffer, v(index)), typ=element, align=alignment)
    if buffer.dtype.element.is_bool:
        return v.b.trunc(value, types.value_type(node.dtype))
    return value
