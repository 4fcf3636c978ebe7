"""The dtype table: TVM's narrow types are read with their widths; only some are computed."""

from __future__ import annotations

import pytest

from tirc.ir import dtype as dt


@pytest.mark.parametrize(
    ("name", "bits", "is_float"),
    [
        ("int4", 4, False),
        ("uint4", 4, False),
        ("float8_e4m3", 8, True),
        ("float8_e3m4", 8, True),
        ("float8_e4m3fnuz", 8, True),
        ("float8_e5m2fnuz", 8, True),
        ("float8_e4m3b11fnuz", 8, True),
        ("float8_e8m0fnu", 8, True),
        ("float6_e2m3fn", 6, True),
        ("float6_e3m2fn", 6, True),
        ("float4_e2m1fn", 4, True),
    ],
)
def test_stored_only_types(name: str, bits: int, is_float: bool) -> None:
    dtype = dt.parse_dtype(name)
    assert (str(dtype), dtype.bits, dtype.is_float, dtype.is_computed) == (
        name,
        bits,
        is_float,
        False,
    )
    vector = dt.parse_dtype(f"{name}x8")
    assert vector.lanes == 8 and vector.bytes == bits and str(vector) == f"{name}x8"


@pytest.mark.parametrize("name", ["int8", "uint64", "float16", "bfloat16", "float8_e4m3fn", "bool"])
def test_computed_types(name: str) -> None:
    assert dt.parse_dtype(name).is_computed


def test_int4_is_not_int2() -> None:
    with pytest.raises(dt.DTypeError):
        dt.parse_dtype("int2")
