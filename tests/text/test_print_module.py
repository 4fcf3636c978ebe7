"""Modules and functions: headers, order, decorators, attributes, signatures, `script`."""

from __future__ import annotations

from tirc.ir import dtype as dt
from tirc.ir.expr import Add, FloatImm, FloorDiv, IntImm, Mul, Var
from tirc.ir.stmt import Attrs, BufferStore, Evaluate
from tirc.text import parse
from tirc.text.printer import print_module, script

from .build import BARE_HEADER, HEADER, buffer, func, i32, i64, module

NOP = Evaluate(i32(0))


def simple(name: str = "A", **options: object):  # noqa: ANN201 - a PrimFunc
    return func([buffer(name, 128)], NOP, **options)


def test_bare_function_header_and_decorators() -> None:
    text = print_module(module(("main", simple()), bare=True))
    assert (
        text
        == BARE_HEADER
        + '@T.prim_func\ndef main(A: T.Buffer((128,), "float32")):\n    T.evaluate(0)'
    )
    assert not text.endswith("\n")
    private = print_module(module(("foo", simple(private=True, s_tir=True)), bare=True))
    # TVM names a bare function by its global symbol: a private one has none and is "main"
    assert "@T.prim_func(private=True, s_tir=True)\ndef main(" in private


def test_module_orders_functions_with_main_last() -> None:
    functions = [(name, simple()) for name in ["zeta", "main", "B", "_x", "x10", "x2"]]
    text = print_module(module(*functions))
    assert text.startswith(HEADER + "@I.ir_module\nclass Module:\n    @T.prim_func\n    def B(")
    order = [
        line.split("(")[0].strip() for line in text.splitlines() if line.strip().startswith("def ")
    ]
    assert order == ["def B", "def _x", "def x10", "def x2", "def zeta", "def main"]
    assert "        T.evaluate(0)\n\n    @T.prim_func\n" in text


def test_function_attributes_sorted_and_global_symbol_elided() -> None:
    attrs = {"zz": 1, "global_symbol": "main", "aa": "x", "tirx.noalias": True}
    text = print_module(module(("main", simple(attrs=attrs, s_tir=True))))
    assert '        T.func_attr({"aa": "x", "tirx.noalias": True, "zz": 1})' in text
    other = print_module(module(("f", simple(attrs={"global_symbol": "g"}))))
    assert '        T.func_attr({"global_symbol": "g"})' in other


def test_attribute_values() -> None:
    n = Var("n")
    A = buffer("A", 128)
    attrs = {
        "z": 1.5,
        "y": Attrs((("b", 1), ("a", (1, "x", 2.5, True)))),
        "x": n,
        "w": IntImm(3, dt.INT64),
        "v": None,
        "u": -1,
        "s": (),
        "r": (1, 2),
        "q": FloatImm(1.0, dt.FLOAT32),
        "p": False,
        "o": IntImm(1, dt.BOOL),
        "n1": A.data,
    }
    text = print_module(module(("main", func([A, n], NOP, attrs=attrs)), bare=True))
    assert text.splitlines()[5] == (
        '    T.func_attr({"n1": A.data, "o": T.bool(True), "p": False, "q": T.float32(1.0), '
        '"r": [1, 2], "s": [], "u": -1, "v": None, "w": T.int64(3), "x": n, '
        '"y": {"a": [1, "x", 2.5, True], "b": 1}, "z": 1.5})'
    )


def test_parameters_scalars_handles_and_return_type() -> None:
    A = buffer("A", 128)
    h = Var("h", dt.HANDLE)
    from tirc.ir.expr import PointerType

    typed = Var("p", dt.HANDLE, PointerType(dt.FLOAT32))
    n = Var("n", dt.INT32)
    text = print_module(module(("main", func([A, h, typed, n], NOP, ret="int32")), bare=True))
    assert text.splitlines()[4] == (
        'def main(A: T.Buffer((128,), "float32"), h: T.handle, '
        'p: T.handle("float32", "global"), n: T.int32) -> T.int32:'
    )


def test_buffer_parameter_options() -> None:
    n = Var("n")
    A = buffer("A", n, 16, dtype="float16")
    B = buffer(
        "B",
        Mul(n, i32(2)),
        strides=(i32(3),),
        elem_offset=i32(4),
        scope="shared",
        data_alignment=32,
        offset_factor=2,
    )
    store = BufferStore(B, FloatImm(0.0, dt.FLOAT32), (i32(0),))
    text = print_module(module(("main", func([A, B], store)), bare=True))
    assert text.splitlines()[4:] == [
        'def main(A: T.Buffer(("n", 16), "float16"), B: T.Buffer((n * 2,), "float32", '
        'strides=(3,), elem_offset=4, scope="shared", align=32, offset_factor=2)):',
        "    n = T.int32()",
        "    B[0] = T.float32(0.0)",
    ]


def test_signature_strings_define_variables() -> None:
    n = Var("n")
    padded = Mul(FloorDiv(Add(n, i32(31)), i32(32)), i32(32))
    A, B = buffer("A", padded, 4), buffer("B", 4, padded)
    text = print_module(module(("main", func([A, B, n], NOP))))
    assert (
        '    def main(A: T.Buffer(("(n + 31) // 32 * 32", 4), "float32"), '
        'B: T.Buffer((4, (n + 31) // 32 * 32), "float32"), n: T.int32):'
    ) in text
    m, k = Var("m"), Var("k")
    C, D = buffer("C", n, m), buffer("D", k, Mul(k, i32(2)))
    grouped = print_module(module(("main", func([C, D], NOP)), bare=True)).splitlines()[4:7]
    assert grouped == [
        'def main(C: T.Buffer(("n", "m"), "float32"), D: T.Buffer(("k", k * 2), "float32")):',
        "    n, m = T.int32(), T.int32()",
        "    k = T.int32()",
    ]
    E = buffer("E", n, Mul(m, i32(2)), k)
    apart = print_module(module(("main", func([E], NOP)), bare=True)).splitlines()[4:7]
    assert apart == [
        'def main(E: T.Buffer(("n", "m * 2", "k"), "float32")):',
        "    m = T.int32()",
        "    n, k = T.int32(), T.int32()",
    ]


def test_int64_shape_variables_become_type_vars() -> None:
    n = Var("n", dt.INT64)
    A = buffer("A", i64(1), n, i64(2560))
    B = buffer("B", Mul(n, i64(2)))
    main = func([A, B], NOP, s_tir=True)
    q = Var("q", dt.INT64)
    other = func([buffer("A", q)], NOP)
    text = print_module(module(("main", main), ("f", other)))
    assert text.startswith(
        "# from typing import TypeVar\n"
        + HEADER
        + 'q = TypeVar("q")\nn = TypeVar("n")\n@I.ir_module\n'
    )
    assert (
        'def main(A: T.Buffer((T.int64(1), n, T.int64(2560)), "float32"), '
        'B: T.Buffer(("n * T.int64(2)",), "float32")):'
    ) in text


def test_module_attributes() -> None:
    from tirc.ir.function import IRModule

    mod = IRModule((("main", simple()),), Attrs((("b", 1), ("a", "x"))))
    assert (
        '\nclass Module:\n    I.module_attrs({"a": "x", "b": 1})\n    @T.prim_func\n'
        in print_module(mod)
    )


def test_script_of_nodes() -> None:
    A = buffer("A", 128, 4)
    i = Var("i")
    assert script(A) == 'A = T.Buffer((128, 4), "float32")'
    store = BufferStore(A, FloatImm(1.0, dt.FLOAT32), (i, i32(0)))
    assert script(store) == "A[i, 0] = T.float32(1.0)"
    from tirc.ir.buffer import BufferRegion, Range

    region = BufferRegion(A, (Range(i, i32(1)), Range(i32(0), i32(4))))
    assert script(region) == "A[i, 0:4]"
    assert script(simple()).startswith('@T.prim_func\ndef main(A: T.Buffer((128,), "float32")):')


def test_script_of_reducers() -> None:
    from tirc.ir.expr import GE, CommReducer, Select

    x, y = Var("x", dt.FLOAT32), Var("y", dt.FLOAT32)
    zero = FloatImm(0.0, dt.FLOAT32)
    assert script(CommReducer((x,), (y,), (Add(x, y),), (zero,))) == (
        "T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)])"
    )
    x0, x1, y0, y1 = (Var(name, dt.FLOAT32) for name in ("x0", "x1", "y0", "y1"))
    pick = GE(x1, y1)
    reducer = CommReducer(
        (x0, x1),
        (y0, y1),
        (Select(pick, x0, y0), Select(pick, x1, y1)),
        (FloatImm(-1.0, dt.FLOAT32), zero),
    )
    assert script(reducer) == (
        "T.comm_reducer(lambda x0, x1, y0, y1: (T.Select(x1 >= y1, x0, y0), "
        "T.Select(x1 >= y1, x1, y1)), [T.float32(-1.0), T.float32(0.0)])"
    )


def test_empty_module_prints_pass_and_reads_back() -> None:
    """TVM's `@I.ir_module class Module: pass` (its test_ir_base) is a module of no functions."""
    text = print_module(parse("@I.ir_module\nclass Module:\n    pass\n"))
    assert text == HEADER + "@I.ir_module\nclass Module:\n    pass"
    assert print_module(parse(text)) == text and not parse(text).functions
