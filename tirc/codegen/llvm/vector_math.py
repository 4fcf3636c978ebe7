"""float32 exp, tanh and log as inline straight-line code (no calls, no branches), for scalars
and vectors alike, so that a loop calling them vectorizes. Accuracy within a few ulp.

exp and log follow Cephes' expf/logf (range reduction, then a polynomial); tanh is Eigen's
rational approximation, exact to float precision once |x| > 7.9. Results for subnormal inputs
or outputs flush to zero.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

F32 = ir.FloatType()
I32 = ir.IntType(32)

Inline = Callable[[ir.IRBuilder, ir.Value, int], ir.Value]


class _Math:
    """Constants and operations at a lane count, with FMA contraction allowed."""

    def __init__(self, builder: ir.IRBuilder, lanes: int):
        self.b = builder
        self.lanes = lanes

    def f(self, value: float) -> ir.Constant:
        scalar = ir.Constant(F32, value)
        return (
            scalar
            if self.lanes == 1
            else ir.Constant(ir.VectorType(F32, self.lanes), [scalar] * self.lanes)
        )

    def i(self, value: int) -> ir.Constant:
        scalar = ir.Constant(I32, value)
        return (
            scalar
            if self.lanes == 1
            else ir.Constant(ir.VectorType(I32, self.lanes), [scalar] * self.lanes)
        )

    @property
    def int_type(self) -> ir.Type:
        return I32 if self.lanes == 1 else ir.VectorType(I32, self.lanes)

    @property
    def float_type(self) -> ir.Type:
        return F32 if self.lanes == 1 else ir.VectorType(F32, self.lanes)

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fadd(a, b, flags=("contract",))

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fmul(a, b, flags=("contract",))

    def horner(self, x: ir.Value, coefficients: list[float]) -> ir.Value:
        """c0 * x^n + c1 * x^(n-1) + ... + cn."""
        result: ir.Value = self.f(coefficients[0])
        for c in coefficients[1:]:
            result = self.add(self.mul(result, x), self.f(c))
        return result

    def clamp(self, x: ir.Value, low: float, high: float) -> ir.Value:
        x = self.b.select(self.b.fcmp_ordered("<", x, self.f(low)), self.f(low), x)
        return self.b.select(self.b.fcmp_ordered(">", x, self.f(high)), self.f(high), x)

    def rint(self, x: ir.Value) -> ir.Value:
        """Round to nearest via the 1.5 * 2^23 trick (exact for |x| < 2^22)."""
        magic = self.f(12582912.0)
        return self.b.fsub(self.b.fadd(x, magic), magic)


def exp_f32(builder: ir.IRBuilder, x: ir.Value, lanes: int) -> ir.Value:
    m = _Math(builder, lanes)
    b = builder
    clamped = m.clamp(x, -87.33654475, 88.72283935546875)
    n = m.rint(m.mul(clamped, m.f(1.44269504088896341)))
    r = b.fsub(clamped, m.mul(n, m.f(0.693359375)))
    r = b.fsub(r, m.mul(n, m.f(-2.12194440e-4)))
    p = m.horner(
        r,
        [
            1.9875691500e-4,
            1.3981999507e-3,
            8.3334519073e-3,
            4.1665795894e-2,
            1.6666665459e-1,
            5.0000001201e-1,
        ],
    )
    p = m.add(m.add(m.mul(m.mul(p, r), r), r), m.f(1.0))
    # 2^n as 2 * 2^(n-1): n reaches 128 at the top of the range, beyond the exponent field
    exponent = b.fptosi(n, m.int_type)
    bits = b.shl(b.add(exponent, m.i(126)), m.i(23))
    scale = b.bitcast(bits, m.float_type)
    result = m.mul(m.mul(p, m.f(2.0)), scale)
    result = b.select(b.fcmp_ordered(">", x, m.f(88.72283935546875)), m.f(float("inf")), result)
    result = b.select(b.fcmp_ordered("<", x, m.f(-87.33654475)), m.f(0.0), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


def tanh_f32(builder: ir.IRBuilder, x: ir.Value, lanes: int) -> ir.Value:
    m = _Math(builder, lanes)
    b = builder
    clamped = m.clamp(x, -7.90531110763549805, 7.90531110763549805)
    x2 = m.mul(clamped, clamped)
    p = m.horner(
        x2,
        [
            -2.76076847742355e-16,
            2.00018790482477e-13,
            -8.60467152213735e-11,
            5.12229709037114e-08,
            1.48572235717979e-05,
            6.37261928875436e-04,
            4.89352455891786e-03,
        ],
    )
    p = m.mul(clamped, p)
    q = m.horner(
        x2, [1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03]
    )
    result = b.fdiv(p, q)
    tiny = b.fcmp_ordered("<", _fabs(b, x, m), m.f(0.0004))
    result = b.select(tiny, x, result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


def _fabs(b: ir.IRBuilder, x: ir.Value, m: _Math) -> ir.Value:
    bits = b.bitcast(x, m.int_type)
    return b.bitcast(b.and_(bits, m.i(0x7FFFFFFF)), m.float_type)


def log_f32(builder: ir.IRBuilder, x: ir.Value, lanes: int) -> ir.Value:
    m = _Math(builder, lanes)
    b = builder
    bits = b.bitcast(x, m.int_type)
    exponent = b.sub(b.and_(b.lshr(bits, m.i(23)), m.i(0xFF)), m.i(126))
    mantissa = b.bitcast(b.or_(b.and_(bits, m.i(0x007FFFFF)), m.i(0x3F000000)), m.float_type)
    e = b.sitofp(exponent, m.float_type)
    # mantissa in [0.5, 1): below sqrt(1/2), use 2 * mantissa and one less in the exponent
    small = b.fcmp_ordered("<", mantissa, m.f(0.707106781186547524))
    e = b.select(small, b.fsub(e, m.f(1.0)), e)
    mantissa = b.select(small, m.add(mantissa, mantissa), mantissa)
    f = b.fsub(mantissa, m.f(1.0))
    z = m.mul(f, f)
    y = m.horner(
        f,
        [
            7.0376836292e-2,
            -1.1514610310e-1,
            1.1676998740e-1,
            -1.2420140846e-1,
            1.4249322787e-1,
            -1.6668057665e-1,
            2.0000714765e-1,
            -2.4999993993e-1,
            3.3333331174e-1,
        ],
    )
    y = m.mul(m.mul(y, f), z)
    y = m.add(y, m.mul(e, m.f(-2.12194440e-4)))
    y = b.fsub(y, m.mul(z, m.f(0.5)))
    result = m.add(m.add(f, y), m.mul(e, m.f(0.693359375)))
    result = b.select(b.fcmp_ordered("==", x, m.f(float("inf"))), x, result)
    result = b.select(b.fcmp_ordered("==", x, m.f(0.0)), m.f(float("-inf")), result)
    result = b.select(b.fcmp_ordered("<", x, m.f(0.0)), m.f(float("nan")), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


FLOAT32_FUNCTIONS: dict[str, Inline] = {"exp": exp_f32, "tanh": tanh_f32, "log": log_f32}
