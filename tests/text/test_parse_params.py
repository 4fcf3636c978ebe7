"""Module-level parameters and `-D NAME=VALUE` defines that override them."""

from __future__ import annotations

import pytest

from tests.text.parse_helpers import expect_error, parse
from tirc.ir import dtype as dt
from tirc.ir.expr import IntImm
from tirc.text.builder.params import define_value

PROGRAM = """N = 1024
dtype = "float16"
M = N * 2
alpha = 0.5

@T.prim_func
def main(A: T.Buffer((N, M), dtype), B: T.Buffer((N,), dtype)):
    for i in range(N):
        B[i] = A[i, 0] * T.Cast(dtype, alpha)
"""


def shapes(module: object) -> list[list[int]]:
    func = module.functions[0][1]  # type: ignore[attr-defined]
    return [[e.value for e in buffer.shape] for _, buffer in func.buffer_map]


def test_parameters_in_shapes_dtypes_and_expressions() -> None:
    module = parse(PROGRAM)
    assert shapes(module) == [[1024, 2048], [1024]]
    func = module.functions[0][1]
    assert func.buffer_map[0][1].dtype == dt.FLOAT16
    loop = func.body
    assert loop.extent.value == 1024


def test_defines_override_and_derived_parameters_follow() -> None:
    module = parse(PROGRAM, defines={"N": "16", "dtype": "float32"})
    assert shapes(module) == [[16, 32], [16]]
    assert module.functions[0][1].buffer_map[0][1].dtype == dt.FLOAT32


def test_defines_given_as_python_values() -> None:
    """From Python a define may be the value itself (it used to fail on `.strip()`)."""
    module = parse(PROGRAM, defines={"N": 16, "alpha": 0.25})
    assert shapes(module) == [[16, 32], [16]]
    assert module.functions[0][1].body.body.value.b.value.value == 0.25


def test_float_define() -> None:
    module = parse(PROGRAM, defines={"alpha": "0.25"})
    store = module.functions[0][1].body.body
    cast = store.value.b
    assert cast.value.value == 0.25


def test_parameters_in_a_module_class() -> None:
    module = parse(
        "@I.ir_module\nclass Module:\n    K = 8\n"
        '    @T.prim_func\n    def main(A: T.Buffer((K,), "int32")):\n        A[0] = K\n'
    )
    func = module["main"]
    assert func.buffer_map[0][1].shape[0].value == 8
    assert isinstance(func.body.value, IntImm) and func.body.value.value == 8
    assert (
        parse(
            "@I.ir_module\nclass Module:\n    K = 8\n"
            '    @T.prim_func\n    def main(A: T.Buffer((K,), "int32")):\n        A[0] = K\n',
            defines={"K": "2"},
        )["main"]
        .buffer_map[0][1]
        .shape[0]
        .value
        == 2
    )


def test_tuple_parameters() -> None:
    module = parse(
        'H, W = 4, 8\n@T.prim_func\ndef main(A: T.Buffer((H, W), "float32")):\n    pass\n'
    )
    assert shapes(module) == [[4, 8]]


def test_define_of_unknown_name_lists_the_parameters() -> None:
    error = expect_error(PROGRAM, defines={"n": "3"})
    message = error.diagnostics[0].message
    assert "no parameter named 'n'" in message
    assert "parameters: M, N, alpha, dtype" in message


def test_define_with_no_parameters_at_all() -> None:
    error = expect_error(
        '@T.prim_func\ndef main(A: T.Buffer((4,), "float32")):\n    pass\n', defines={"N": "3"}
    )
    assert "(parameters: none)" in error.diagnostics[0].message


@pytest.mark.parametrize(
    ("text", "value"),
    [("2048", 2048), ("0x10", 16), ("-3", -3), ("1.5", 1.5), ("1e-3", 0.001), ("True", True),
     ("false", False), ("float32", "float32"), ('"quoted"', "quoted")],
)  # fmt: skip
def test_define_values(text: str, value: object) -> None:
    parsed = define_value(text)
    assert parsed == value and type(parsed) is type(value)
