"""Calls of registry intrinsics: math through LLVM intrinsics (or inline float32 polynomials
for exp/tanh/log, which the loop vectorizer can widen), bit operations, branches that
evaluate one side (`if_then_else`), fixed-point multiplies (fixed_point.py), and calls of
external C functions."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tirc.codegen.llvm import types as T
from tirc.codegen.llvm import vector_math
from tirc.codegen.llvm.casts import emit_cast, reinterpret
from tirc.codegen.llvm.emitter import (
    EXPR_RULES,
    FLOAT_FLAGS,
    Emitter,
    free_all,
    llvm_intrinsic,
    unsupported,
)
from tirc.codegen.llvm.fixed_point import emit_q_multiply_shift, emit_q_multiply_shift_per_axis
from tirc.codegen.llvm.memory import emit_address_of
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.dtype import DataType
from tirc.ir.expr import Call, PrimExpr, subroutine_name

CallRule = Callable[["Emitter", Call], ir.Value]


def _args(em: Emitter, call: Call) -> list[ir.Value]:
    return [em.expr(arg) for arg in call.args]


def _in_float32(
    rule: Callable[[Emitter, list[ir.Value], DataType], ir.Value],
) -> Callable[[Emitter, list[ir.Value], DataType], ir.Value]:
    """float16 math is computed in float32 and rounded back, as the interpreter rounds a
    wider result."""

    def emit(em: Emitter, args: list[ir.Value], dtype: DataType) -> ir.Value:
        if dtype.kind == "float" and dtype.bits == 16:
            wide = dt.FLOAT32.with_lanes(dtype.lanes)
            widened = [emit_cast(em.builder, a, dtype, wide) for a in args]
            return emit_cast(em.builder, rule(em, widened, wide), wide, dtype)
        return rule(em, args, dtype)

    return emit


def _intrinsic(name: str) -> CallRule:
    rule = _in_float32(lambda em, args, dtype: llvm_intrinsic(em, name, args, dtype))
    return lambda em, call: rule(em, _args(em, call), call.dtype)


_LIBM_FLOAT32 = "f"


def _libm(name: str) -> CallRule:
    """A C math library function, called once per lane (`erff`, `erf`)."""

    def scalar(em: Emitter, args: list[ir.Value], dtype: DataType) -> ir.Value:
        typ = T.scalar_type(dtype.element)  # float for bfloat16 and float8 values too
        symbol = name + (_LIBM_FLOAT32 if isinstance(typ, ir.FloatType) else "")
        function = em.declare(symbol, typ, [typ] * len(args))
        if dtype.lanes == 1:
            return em.builder.call(function, args)
        result: ir.Value = ir.Constant(T.value_type(dtype), None)
        for lane in range(dtype.lanes):
            at = ir.Constant(T.I32, lane)
            lane_args = [em.builder.extract_element(a, at) for a in args]
            result = em.builder.insert_element(result, em.builder.call(function, lane_args), at)
        return result

    rule = _in_float32(scalar)
    return lambda em, call: rule(em, _args(em, call), call.dtype)


def _polynomial(name: str, fallback: CallRule) -> CallRule:
    """The inline float32 version where there is one; other dtypes take `fallback`."""
    inline = vector_math.FLOAT32_FUNCTIONS[name]

    def emit(em: Emitter, call: Call) -> ir.Value:
        if call.dtype.element != dt.FLOAT32:
            return fallback(em, call)
        return inline(em.builder, _args(em, call)[0], call.dtype.lanes)

    return emit


def _float_constant(dtype: DataType, value: float) -> ir.Constant:
    element = ir.Constant(T.scalar_type(dtype.element), value)
    return (
        element if dtype.lanes == 1 else ir.Constant(T.value_type(dtype), [element] * dtype.lanes)
    )


def _rsqrt(em: Emitter, call: Call) -> ir.Value:
    root = _intrinsic("llvm.sqrt")(em, call)
    return em.builder.fdiv(_float_constant(call.dtype, 1.0), root)


def _sigmoid(em: Emitter, call: Call) -> ir.Value:
    (x,) = _args(em, call)
    one = _float_constant(call.dtype, 1.0)
    negated = em.builder.fneg(x)
    if call.dtype.element == dt.FLOAT32:
        exp = vector_math.FLOAT32_FUNCTIONS["exp"](em.builder, negated, call.dtype.lanes)
    else:
        exp = llvm_intrinsic(em, "llvm.exp", [negated], call.dtype)
    return em.builder.fdiv(one, em.builder.fadd(one, exp))


def _count(name: str, extra: tuple[ir.Value, ...] = ()) -> CallRule:
    def emit(em: Emitter, call: Call) -> ir.Value:
        return llvm_intrinsic(em, name, _args(em, call), call.dtype, extra)

    return emit


def _classify(test: str) -> CallRule:
    def emit(em: Emitter, call: Call) -> ir.Value:
        (x,) = _args(em, call)
        operand = call.args[0]
        assert isinstance(operand, PrimExpr)  # _args refused anything else
        source = operand.dtype
        if not source.is_float:
            return ir.Constant(T.value_type(call.dtype), 1 if test == "isfinite" else 0)
        builder = em.builder
        if test == "isnan":
            return builder.fcmp_unordered("uno", x, x)
        magnitude = llvm_intrinsic(em, "llvm.fabs", [x], source)
        infinity = _float_constant(source, float("inf"))
        if test == "isinf":
            return builder.fcmp_ordered("==", magnitude, infinity)
        return builder.fcmp_ordered("<", magnitude, infinity)

    return emit


def _bitwise(op: str) -> CallRule:
    def emit(em: Emitter, call: Call) -> ir.Value:
        a, b = _args(em, call)
        if op == "shr":
            signed = call.dtype.is_int
            return em.builder.ashr(a, b) if signed else em.builder.lshr(a, b)
        return getattr(em.builder, op)(a, b)

    return emit


def _bitwise_not(em: Emitter, call: Call) -> ir.Value:
    return em.builder.not_(_args(em, call)[0])


def _pass_through(em: Emitter, call: Call) -> ir.Value:
    return em.expr(call.args[0])


def _if_then_else(em: Emitter, call: Call) -> ir.Value:
    """Evaluates only the chosen value, so a guarded load cannot fault; with one condition
    that holds for vector values too. A vector condition selects between both values: the
    vectorizer only produces it over pure operands."""
    condition_expr, true_expr, false_expr = call.args
    condition = em.expr(condition_expr)
    if isinstance(condition.type, ir.VectorType):
        true_value, false_value = em.expr(true_expr), em.expr(false_expr)
        return em.builder.select(condition, true_value, false_value)
    builder = em.builder
    then_block, else_block, done = em.new_block("then"), em.new_block("else"), em.new_block("endif")
    builder.cbranch(condition, then_block, else_block)
    builder.position_at_end(then_block)
    true_value = em.expr(true_expr)
    then_end = builder.block
    builder.branch(done)
    builder.position_at_end(else_block)
    false_value = em.expr(false_expr)
    else_end = builder.block
    builder.branch(done)
    builder.position_at_end(done)
    phi = builder.phi(T.value_type(call.dtype))
    phi.add_incoming(true_value, then_end)
    phi.add_incoming(false_value, else_end)
    return phi


def _reinterpret(em: Emitter, call: Call) -> ir.Value:
    value = call.args[-1]
    assert isinstance(value, PrimExpr)
    return reinterpret(em.builder, em.expr(value), value.dtype, call.dtype)


def _assume(em: Emitter, call: Call) -> ir.Value:
    condition = em.expr(call.args[0])
    if isinstance(condition.type, ir.IntType) and condition.type.width == 1:
        em.builder.call(em.declare("llvm.assume", T.VOID, [T.I1]), [condition])
    return ir.Constant(T.I1, 1)


def _extern(em: Emitter, call: Call) -> ir.Value:
    """`T.call_extern(dtype, "name", args...)`: a C function the user links."""
    name = call.args[0]
    symbol = getattr(name, "value", None)
    if not isinstance(symbol, str):
        raise unsupported(call, "extern calls whose name is not a string")
    args = [em.expr(arg) for arg in call.args[1:]]
    existing = em.module.globals.get(symbol)
    if isinstance(existing, ir.Function):
        # a function of the module (split-host-device's launch of a CPU "kernel"): its
        # integer parameters are int64_t (docs/abi.md), which the call's int32 widens to
        args = _fit_arguments(em, call, symbol, existing, args)
    result = T.VOID if call.dtype.is_void else T.value_type(call.dtype)
    function = em.declare(symbol, result, [a.type for a in args])
    value = em.builder.call(function, args)
    return value if not call.dtype.is_void else ir.Constant(T.I32, 0)


def _fit_arguments(
    em: Emitter, call: Call, symbol: str, callee: ir.Function, args: list[ir.Value]
) -> list[ir.Value]:
    """The call's arguments as `callee` declares its parameters: integers sign-extended to a
    wider integer; a located error for any other difference."""
    types = callee.function_type.args
    fitted = []
    for value, typ in zip(args, types, strict=False):
        if (
            isinstance(value.type, ir.IntType)
            and isinstance(typ, ir.IntType)
            and 1 < value.type.width < typ.width
        ):
            value = em.builder.sext(value, typ)
        fitted.append(value)
    if len(args) != len(types) or any(a.type != t for a, t in zip(fitted, types, strict=False)):
        given = ", ".join(str(a.type) for a in args)
        wanted = ", ".join(str(t) for t in types)
        raise DiagnosticError.at(
            call.span, f"the call passes ({given}) to {symbol}, which takes ({wanted})"
        )
    return fitted


# the prefixes LLVM gives target-specific intrinsics (llvm.<prefix>.name), and those each
# architecture of a triple selects
_TARGET_FAMILIES = (
    "aarch64", "amdgcn", "arm", "bpf", "dx", "hexagon", "loongarch", "mips", "nvvm", "ppc",
    "r600", "riscv", "s390", "spv", "ve", "wasm", "x86", "xcore",
)  # fmt: skip
_FAMILIES_OF_ARCH = {
    "x86_64": ("x86",),
    "i686": ("x86",),
    "aarch64": ("aarch64", "arm"),
    "arm64": ("aarch64", "arm"),
    "riscv64": ("riscv",),
    "riscv32": ("riscv",),
    "powerpc64le": ("ppc",),
    "powerpc64": ("ppc",),
}


def _target_family(symbol: str) -> str | None:
    """The target an intrinsic belongs to (`llvm.amdgcn.sdot4`: amdgcn); None for a generic
    one (`llvm.sqrt`)."""
    parts = symbol.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in _TARGET_FAMILIES else None


def _llvm_intrinsic_call(em: Emitter, call: Call) -> ir.Value:
    """`T.call_llvm_pure_intrin(dtype, "llvm.x86...", args...)`: an LLVM intrinsic by name,
    declared with the operands' types (a tensor intrinsic's implementation, VNNI's)."""
    symbol = getattr(call.args[0], "value", None)
    if not isinstance(symbol, str) or not symbol.startswith("llvm."):
        raise unsupported(call, "LLVM intrinsic calls whose name is not an 'llvm.' string")
    family = _target_family(symbol)
    arch = str(em.module.triple).split("-")[0]
    if family is not None and family not in _FAMILIES_OF_ARCH.get(arch, (arch,)):
        # LLVM aborts the process when it meets another target's intrinsic ("Cannot select")
        raise DiagnosticError.at(
            call.span, f"{symbol} is an intrinsic of {family}, which this target ({arch}) is not"
        )
    if symbol.startswith("llvm.x86.avx512.") and (
        em.registers is None or em.registers.width_bytes < 64
    ):
        # as another target's: LLVM aborts where the CPU lacks the instruction
        raise DiagnosticError.at(
            call.span, f"{symbol} needs AVX-512, which this target's CPU does not have"
        )
    args = [em.expr(arg) for arg in call.args[1:]]
    result = T.VOID if call.dtype.is_void else T.value_type(call.dtype)
    function_type = ir.FunctionType(result, [a.type for a in args])
    # An overloaded intrinsic called at two types (llvm.sqrt on float, then on <4 x float>)
    # needs a declaration for each: the other one gets a suffix, which LLVM's reader replaces
    # by the mangling of its types (llvm.sqrt.v4f32).
    name, count = symbol, 0
    while (existing := em.module.globals.get(name)) is not None and (
        not isinstance(existing, ir.Function) or existing.function_type != function_type
    ):
        count += 1
        name = f"{symbol}.tirc{count}"
    value = em.builder.call(em.declare(name, result, function_type.args), args)
    return value if not call.dtype.is_void else ir.Constant(T.I32, 0)


def _return(em: Emitter, call: Call) -> ir.Value:
    """`T.ret(value)`: frees the function's heap allocations and returns `value`, converted
    to its return type; what follows goes in a block nothing reaches."""
    if em.in_parallel or em.result is None:
        # an outlined parallel body returns its status to GOMP's caller, not the value
        raise DiagnosticError.at(
            call.span, "T.ret returns from the function; inside a T.parallel loop it cannot"
        )
    (operand,) = call.expr_args()
    value = emit_cast(em.builder, em.expr(operand), operand.dtype, em.result)
    for pointers in reversed(em.frees):
        free_all(em, pointers)
    em.builder.ret(value)
    em.continue_in_dead_block()
    return ir.Constant(T.I32, 0)


def _fmod(em: Emitter, call: Call) -> ir.Value:
    a, b = _args(em, call)
    return em.builder.frem(a, b, flags=FLOAT_FLAGS)


def _undef(em: Emitter, call: Call) -> ir.Value:
    return ir.Constant(T.value_type(call.dtype), None)


CALL_RULES: dict[str, CallRule] = {
    "exp": _polynomial("exp", _intrinsic("llvm.exp")),
    "tanh": _polynomial("tanh", _intrinsic("llvm.tanh")),
    "log": _polynomial("log", _intrinsic("llvm.log")),
    "sigmoid": _sigmoid,
    "rsqrt": _rsqrt,
    "fmod": _fmod,
    "popcount": _count("llvm.ctpop"),
    "clz": _count("llvm.ctlz", (ir.Constant(T.I1, 0),)),
    "isnan": _classify("isnan"),
    "isinf": _classify("isinf"),
    "isfinite": _classify("isfinite"),
    "shift_left": _bitwise("shl"),
    "shift_right": _bitwise("shr"),
    "bitwise_and": _bitwise("and_"),
    "bitwise_or": _bitwise("or_"),
    "bitwise_xor": _bitwise("xor"),
    "bitwise_not": _bitwise_not,
    "if_then_else": _if_then_else,
    "likely": _pass_through,
    "ignore_loop_partition": _pass_through,  # a hint to loop-partition
    "reinterpret": _reinterpret,
    "address_of": emit_address_of,
    "assume": _assume,
    "undef": _undef,
    "ret": _return,
    "call_extern": _extern,
    "call_pure_extern": _extern,
    "call_llvm_intrin": _llvm_intrinsic_call,
    "call_llvm_pure_intrin": _llvm_intrinsic_call,
    "q_multiply_shift": emit_q_multiply_shift,
    "q_multiply_shift_per_axis": emit_q_multiply_shift_per_axis,
}
# math with an LLVM intrinsic of the same meaning (lowered to an instruction or to libm)
_LLVM_MATH = {
    "exp2": "exp2",
    "exp10": "exp10",
    "log2": "log2",
    "log10": "log10",
    "sqrt": "sqrt",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "sinh": "sinh",
    "cosh": "cosh",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "fabs": "fabs",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "round": "roundeven",
    "nearbyint": "nearbyint",
    "pow": "pow",
    "copysign": "copysign",
    "atan2": "atan2",
}
for _name, _llvm in _LLVM_MATH.items():
    CALL_RULES[_name] = _intrinsic(f"llvm.{_llvm}")
# math that only the C library has
_LIBM_MATH = ("log1p", "expm1", "asinh", "acosh", "atanh", "erf", "hypot", "nextafter")
for _name in _LIBM_MATH:
    CALL_RULES[_name] = _libm(_name)
# math on floats only: LLVM has no llvm.exp.i32 (T.exp10(0), an int32, is TVM's test program)
FLOAT_MATH = frozenset({"exp", "tanh", "log", "sigmoid", "rsqrt", "fmod", *_LLVM_MATH, *_LIBM_MATH})


def _subroutine_call(em: Emitter, call: Call, name: str) -> ir.Value:
    """`Module.f(args...)`: a call of the module's function `f` through its C ABI (pointers
    and scalars); a status other than 0 (a failed assertion, a misaligned pointer) fails the
    caller too. The call of a function that returns a value (`T.ret`) is that value."""
    symbol = em.symbols.get(name)
    callee = em.module.globals.get(symbol) if symbol is not None else None
    if not isinstance(callee, ir.Function):
        raise unsupported(call, f"a call of {name}, which calls back into its caller")
    result = em.results.get(name)
    if not call.dtype.is_void and result != call.dtype:
        returns = f"returns {result}" if result is not None else "returns no value"
        raise DiagnosticError.at(
            call.span, f"the call takes a {call.dtype} from {name}, which {returns}"
        )
    types = callee.function_type.args
    if len(call.args) != len(types):
        raise DiagnosticError.at(
            call.span, f"{name} takes {len(types)} arguments, but the call gives {len(call.args)}"
        )
    args = []
    for arg, typ in zip(call.expr_args(), types, strict=True):
        value = em.expr(arg)
        if arg.dtype.is_handle:
            args.append(value)
        else:
            wanted = dt.INT64 if isinstance(typ, ir.IntType) else arg.dtype
            args.append(emit_cast(em.builder, value, arg.dtype, wanted))
    status = em.builder.call(callee, args)
    if result is not None:  # no status to check: a failure is a value too (docs/abi.md)
        return status if not call.dtype.is_void else ir.Constant(T.I32, 0)
    failed = em.builder.icmp_signed("!=", status, ir.Constant(T.I32, 0))
    fail = em.builder.append_basic_block(f"{name}.failed")
    done = em.builder.append_basic_block(f"{name}.done")
    em.builder.cbranch(failed, fail, done)
    em.builder.position_at_end(fail)
    em.fail(em)
    em.builder.position_at_end(done)
    return ir.Constant(T.I32, 0)


@EXPR_RULES.register(Call)
def emit_call(em: Emitter, call: Call) -> ir.Value:
    callee = subroutine_name(call)
    if callee is not None:
        return _subroutine_call(em, call, callee)
    rule = CALL_RULES.get(call.op)
    if rule is None:
        raise unsupported(call, f"the intrinsic T.{call.op}")
    if call.op in FLOAT_MATH and (call.dtype.is_integer or call.dtype.is_bool):
        raise unsupported(call, f"T.{call.op} of {call.dtype} values (it is float math)")
    return rule(em, call)
