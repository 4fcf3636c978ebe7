"""What the arguments of the warp-level PTX intrinsics mean: mma shapes, types and fragments.

Shared by the backends (register counts, PTX type names) and the interpreter (which lane
holds which matrix element). A fragment is a lane's registers in order, packed into 32-bit
words as PTX defines for mma.sync (g = lane // 4, c = lane % 4, p elements per word):

    A (m16 x k), word r, element i:  row g + 8 * (r % 2),  column p * c + i + 4p * (r // 2)
    B (k x n8),  word r, element i:  row p * c + i + 4p * r,  column g
    C (m16 x n8), element e:         row g + 8 * (e // 2),  column 2 * c + e % 2

    ptx_mma(.., "m16n8k16", "row", "col", "fp16", "fp16", "fp32", ..)
    -> MmaShape(m=16, n=8, k=16, a_type="f16", c_type="f32", a_words=4, b_words=2, c_words=4)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E

# TVM's operand type names -> (PTX type, bits)
PTX_TYPES: dict[str, tuple[str, int]] = {
    "fp16": ("f16", 16),
    "float16": ("f16", 16),
    "bf16": ("bf16", 16),
    "bfloat16": ("bf16", 16),
    "fp32": ("f32", 32),
    "float32": ("f32", 32),
    "tf32": ("tf32", 32),
    "fp64": ("f64", 64),
    "float64": ("f64", 64),
    "int8": ("s8", 8),
    "uint8": ("u8", 8),
    "int4": ("s4", 4),
    "uint4": ("u4", 4),
    "int32": ("s32", 32),
}

# the element dtype of each PTX type, as the interpreter reads registers
ELEMENT_DTYPES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "s8": "int8",
    "u8": "uint8",
    "s32": "int32",
}

# shapes whose fragments the layout above describes, by (A type bits) -> allowed k
_SUPPORTED = {16: (8, 16), 8: (16, 32)}


@dataclass(frozen=True, slots=True)
class MmaShape:
    name: str  # "m16n8k16"
    m: int
    n: int
    k: int
    a_type: str  # PTX type names: f16, bf16, s8, u8, f32, s32
    b_type: str
    c_type: str
    a_bits: int
    c_bits: int

    @property
    def per_word(self) -> int:
        """Elements of A (and B) per 32-bit register."""
        return 32 // self.a_bits

    @property
    def a_words(self) -> int:
        return self.m * self.k * self.a_bits // (32 * 32)

    @property
    def b_words(self) -> int:
        return self.k * self.n * self.a_bits // (32 * 32)

    @property
    def c_words(self) -> int:
        """Registers of the accumulator: f16 pairs share one, f64 takes a 64-bit one each."""
        return max(1, self.m * self.n * self.c_bits // (32 * 32)) if self.c_bits < 64 else 4

    @property
    def c_elements(self) -> int:
        return self.m * self.n // 32


def mma_shape(call: E.Call) -> MmaShape:
    """The shape and types of a `T.ptx_mma` call, or a located error for what tirc cannot do."""
    args = call.args
    if len(args) < 13:
        raise DiagnosticError.at(call.span, "T.ptx_mma takes at least 13 arguments after its dtype")
    texts = []
    for index, what in ((0, "shape"), (3, "A type"), (4, "B type"), (5, "C type")):
        arg = args[index]
        if not isinstance(arg, E.StringImm):
            raise DiagnosticError.at(call.span, f"T.ptx_mma: the {what} must be a string")
        texts.append(arg.value)
    name, a_name, b_name, c_name = texts
    match = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", name)
    if match is None:
        raise DiagnosticError.at(call.span, f"T.ptx_mma: '{name}' is not an mma shape (mMnNkK)")
    m, n, k = (int(g) for g in match.groups())
    types = []
    for text in (a_name, b_name, c_name):
        if text not in PTX_TYPES:
            raise DiagnosticError.at(call.span, f"T.ptx_mma: unknown operand type '{text}'")
        types.append(PTX_TYPES[text])
    (a_type, a_bits), (b_type, _), (c_type, c_bits) = types
    if (m, n) != (16, 8) or k not in _SUPPORTED.get(a_bits, ()) or c_bits not in (16, 32):
        raise DiagnosticError.at(
            call.span,
            f"T.ptx_mma {name} with {a_name} x {b_name} -> {c_name} is not supported "
            "(tirc does m16n8k8/m16n8k16 on 16-bit types and m16n8k16/m16n8k32 on 8-bit "
            "integers, accumulating in 16 or 32 bits)",
        )
    layouts = tuple(x.value if isinstance(x, E.StringImm) else None for x in (args[1], args[2]))
    if layouts != ("row", "col"):
        raise DiagnosticError.at(
            call.span, f"T.ptx_mma {name}: A must be 'row' and B 'col' (PTX allows only .row.col)"
        )
    return MmaShape(name, m, n, k, a_type, b_type, c_type, a_bits, c_bits)


def a_element(shape: MmaShape, lane: int, index: int) -> tuple[int, int]:
    """(row, column) of A held as element `index` of the lane's A fragment."""
    p = shape.per_word
    word, i = divmod(index, p)
    g, c = divmod(lane, 4)
    return g + 8 * (word % 2), p * c + i + 4 * p * (word // 2)


def b_element(shape: MmaShape, lane: int, index: int) -> tuple[int, int]:
    """(row k, column n) of B held as element `index` of the lane's B fragment."""
    p = shape.per_word
    word, i = divmod(index, p)
    g, c = divmod(lane, 4)
    return p * c + i + 4 * p * word, g


def c_element(lane: int, index: int) -> tuple[int, int]:
    """(row, column) of C and D held as element `index` of the lane's accumulator."""
    g, c = divmod(lane, 4)
    return g + 8 * (index // 2), 2 * c + index % 2
