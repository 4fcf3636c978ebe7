"""Data types: a scalar kind with a bit width, and a lane count for vectors.

Spelled as in TVMScript: `float32`, `int64`, `bool`, `bfloat16`, `float8_e4m3fn`, `handle`,
`float32x8` (8 lanes), `void`; scalable vectors, `float32xvscalex4` (4 lanes for each 128 bits
of the hardware's vector length, SVE's and RVV's `T.vscale()`), which tirc reads, prints and
verifies but does not compute with; and the narrow types TVM names but tirc only stores
(`int4`, `float4_e2m1fn`, ...: `DataType.is_computed`). DataType values are interned,
so `is` and `==` agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache


class DTypeError(ValueError):
    """A string that does not name a data type."""


# kind -> the bit widths it admits
_KINDS: dict[str, tuple[int, ...]] = {
    "int": (4, 8, 16, 32, 64),
    "uint": (4, 8, 16, 32, 64),
    "float": (16, 32, 64),
    "bfloat": (16,),
}
# spelled as a whole word, with their width
_WORDS: dict[str, tuple[str, int]] = {
    "bool": ("bool", 1),
    "handle": ("handle", 64),
    "void": ("void", 0),
    "float8_e4m3fn": ("float8_e4m3fn", 8),
    "float8_e5m2": ("float8_e5m2", 8),
    # the narrow floats TVM also names (ml_dtypes' names): read and printed; what computes
    # with them refuses them (COMPUTED_KINDS)
    "float8_e4m3": ("float8_e4m3", 8),
    "float8_e3m4": ("float8_e3m4", 8),
    "float8_e4m3fnuz": ("float8_e4m3fnuz", 8),
    "float8_e5m2fnuz": ("float8_e5m2fnuz", 8),
    "float8_e4m3b11fnuz": ("float8_e4m3b11fnuz", 8),
    "float8_e8m0fnu": ("float8_e8m0fnu", 8),
    "float6_e2m3fn": ("float6_e2m3fn", 6),
    "float6_e3m2fn": ("float6_e3m2fn", 6),
    "float4_e2m1fn": ("float4_e2m1fn", 4),
    "int1": ("bool", 1),
    "uint1": ("bool", 1),
}
_FLOAT_KINDS = frozenset(
    ("float", "bfloat") + tuple(kind for kind, _ in _WORDS.values() if kind.startswith("float"))
)
_PATTERN = re.compile(r"^([a-z_0-9]*?)(?:x(vscalex)?(\d+))?$")


@dataclass(frozen=True, slots=True)
class DataType:
    kind: str  # int, uint, float, bfloat, bool, handle, void, float8_e4m3fn, float8_e5m2
    bits: int
    lanes: int = 1
    scalable: bool = False  # lanes is then a multiple of T.vscale(): `float32xvscalex4`

    @property
    def is_scalar(self) -> bool:
        return self.lanes == 1 and not self.scalable

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1 or self.scalable

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_uint(self) -> bool:
        return self.kind == "uint"

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.kind in ("int", "uint")

    @property
    def is_float(self) -> bool:
        """Any floating-point kind: float16/32/64, bfloat16, float8."""
        return self.kind in _FLOAT_KINDS

    @property
    def is_float8(self) -> bool:
        return self.kind.startswith("float8")

    @property
    def is_computed(self) -> bool:
        """Whether tirc's interpreter and backends compute with this type; the others
        (int4, uint4, the float8 variants other than e4m3fn and e5m2, float6, float4) are
        read, printed and verified, and refused, located, where a value of them is made."""
        return (self.kind, self.bits) not in _STORED_ONLY and not self.scalable

    @property
    def is_handle(self) -> bool:
        return self.kind == "handle"

    @property
    def is_void(self) -> bool:
        return self.kind == "void"

    @property
    def element(self) -> DataType:
        """The scalar type of one lane."""
        return self if self.is_scalar else make(self.kind, self.bits, 1)

    def with_lanes(self, lanes: int, scalable: bool = False) -> DataType:
        return make(self.kind, self.bits, lanes, scalable)

    @property
    def bytes(self) -> int:
        return max(1, (self.bits * self.lanes + 7) // 8)

    def __str__(self) -> str:
        if self.kind in ("int", "uint", "float"):
            base = f"{self.kind}{self.bits}"
        elif self.kind == "bfloat":
            base = "bfloat16"
        else:
            base = self.kind
        if self.scalable:
            return f"{base}xvscalex{self.lanes}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"


def make(kind: str, bits: int, lanes: int = 1, scalable: bool = False) -> DataType:
    """The interned DataType (one cache key per type, however the lanes are passed)."""
    return _interned(kind, bits, lanes, scalable)


@cache
def _interned(kind: str, bits: int, lanes: int, scalable: bool) -> DataType:
    return DataType(kind, bits, lanes, scalable)


@cache
def parse_dtype(text: str) -> DataType:
    """DataType of a TVMScript dtype string; raises DTypeError on anything else."""
    if text in _WORDS:
        kind, bits = _WORDS[text]
        return make(kind, bits)
    match = _PATTERN.match(text)
    if match is None:
        raise DTypeError(f"unknown data type '{text}'")
    base, scalable, lanes_text = match.group(1), bool(match.group(2)), match.group(3)
    lanes = int(lanes_text) if lanes_text else 1
    if lanes < 1:
        raise DTypeError(f"data type '{text}' has zero lanes")
    if base in _WORDS:
        kind, bits = _WORDS[base]
        if scalable and kind in ("handle", "void"):
            raise DTypeError(f"data type '{text}': a {kind} has no lanes")
        return make(kind, bits, lanes, scalable)
    for kind, widths in _KINDS.items():
        if base.startswith(kind) and base[len(kind) :].isdigit():
            bits = int(base[len(kind) :])
            if bits in widths:
                return make(kind, bits, lanes, scalable)
    raise DTypeError(f"unknown data type '{text}'")


def is_dtype_name(text: str) -> bool:
    try:
        parse_dtype(text)
    except DTypeError:
        return False
    return True


_STORED_ONLY = frozenset(
    [("int", 4), ("uint", 4)]
    + [(kind, bits) for kind, bits in _WORDS.values() if kind.startswith(("float6", "float4"))]
    + [
        (kind, bits)
        for kind, bits in _WORDS.values()
        if kind.startswith("float8") and kind not in ("float8_e4m3fn", "float8_e5m2")
    ]
)

BOOL = make("bool", 1)
INT8 = make("int", 8)
INT16 = make("int", 16)
INT32 = make("int", 32)
INT64 = make("int", 64)
UINT8 = make("uint", 8)
UINT32 = make("uint", 32)
FLOAT16 = make("float", 16)
FLOAT32 = make("float", 32)
FLOAT64 = make("float", 64)
BFLOAT16 = make("bfloat", 16)
HANDLE = make("handle", 64)
VOID = make("void", 0)

# every scalar spelling the text format knows, for `T.<dtype>(...)` and error suggestions
SCALAR_NAMES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "handle",
    "int4",
    "uint4",
    "float8_e4m3",
    "float8_e3m4",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float8_e8m0fnu",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float4_e2m1fn",
)
