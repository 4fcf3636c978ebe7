"""`@T.macro`: expanded at each call, hygienically, with spans into the macro body."""

from __future__ import annotations

from tests.text.parse_helpers import expect_error, parse
from tirc.ir import expr as ir
from tirc.ir import stmt as st
from tirc.ir.function import IRModule
from tirc.ir.structural import structural_equal

SIGNATURE = (
    '@T.prim_func\ndef main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):\n'
)


def body(module: IRModule) -> st.Stmt:
    return module.functions[0][1].body


def test_statement_macro_expands_like_the_written_code() -> None:
    with_macro = parse(
        "@T.macro\ndef fill(buf, value):\n    for i in range(16):\n        buf[i] = value\n"
        + SIGNATURE
        + "    fill(A, T.float32(1))\n    fill(B, T.float32(2))\n"
    )
    written = parse(
        SIGNATURE
        + "    for i in range(16):\n        A[i] = T.float32(1)\n"
        + "    for i in range(16):\n        B[i] = T.float32(2)\n"
    )
    assert structural_equal(with_macro, written)


def test_names_bound_in_a_macro_do_not_clobber_the_caller() -> None:
    module = parse(
        "@T.macro\ndef fill(buf):\n    for i in range(4):\n        buf[i] = T.float32(0)\n"
        + SIGNATURE
        + "    for i in range(16):\n        fill(A)\n        B[i] = A[i]\n"
    )
    outer = body(module)
    assert isinstance(outer, st.For)
    inner = outer.body
    assert isinstance(inner, st.SeqStmt)
    expanded, store = inner.stmts
    assert isinstance(expanded, st.For) and isinstance(store, st.BufferStore)
    assert expanded.loop_var is not outer.loop_var  # the macro's `i` is its own
    assert store.indices[0] is outer.loop_var  # the caller's `i` is still the outer loop's


def test_free_names_resolve_where_the_macro_is_defined() -> None:
    # `scale` inside the macro is the module parameter, not the caller's local of that name
    module = parse(
        "scale = 3\n@T.macro\ndef scaled(buf):\n    buf[0] = buf[0] * scale\n"
        + SIGNATURE
        + "    scale = T.float32(100)\n    scaled(A)\n"
    )
    store = body(module).stmts[-1]  # type: ignore[attr-defined]
    assert isinstance(store, st.BufferStore)
    assert isinstance(store.value, ir.Mul) and isinstance(store.value.b, ir.FloatImm)
    assert store.value.b.value == 3.0


def test_non_hygienic_macro_sees_the_caller() -> None:
    module = parse(
        "@T.macro(hygienic=False)\ndef use_local(buf):\n    buf[0] = local_value\n"
        + SIGNATURE
        + "    local_value = T.float32(5)\n    use_local(A)\n"
    )
    store = body(module).stmts[-1]  # type: ignore[attr-defined]
    assert isinstance(store, st.BufferStore) and isinstance(store.value, ir.BufferLoad)


def test_arguments_substitute_by_value() -> None:
    module = parse(
        "@T.macro\ndef store(buf, index, value):\n    buf[index] = value\n"
        + SIGNATURE
        + "    for i in range(8):\n        store(A, i * 2 + 1, B[i])\n"
    )
    loop = body(module)
    assert isinstance(loop, st.For) and isinstance(loop.body, st.BufferStore)
    index = loop.body.indices[0]
    assert isinstance(index, ir.Add) and isinstance(index.a, ir.Mul) and index.a.a is loop.loop_var


def test_macro_with_a_return_value_is_an_expression() -> None:
    module = parse(
        "@T.macro\ndef double(x):\n    return x * 2\n"
        + SIGNATURE
        + "    A[0] = double(B[0]) + double(B[1])\n"
    )
    store = body(module)
    assert isinstance(store, st.BufferStore) and isinstance(store.value, ir.Add)
    assert isinstance(store.value.a, ir.Mul)


def test_keyword_and_default_arguments() -> None:
    module = parse(
        "@T.macro\ndef put(buf, value=T.float32(7), index=0):\n    buf[index] = value\n"
        + SIGNATURE
        + "    put(A)\n    put(B, index=3)\n"
    )
    first, second = body(module).stmts  # type: ignore[attr-defined]
    assert first.value.value == 7.0 and first.indices[0].value == 0
    assert second.indices[0].value == 3


def test_macro_can_build_blocks_in_the_callers_function() -> None:
    module = parse(
        '@T.macro\ndef copy(dst, src, i):\n    with T.sblock("copy"):\n'
        "        vi = T.axis.spatial(16, i)\n        dst[vi] = src[vi]\n"
        "@T.prim_func(s_tir=True)\n"
        'def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):\n'
        "    for i in range(16):\n        copy(B, A, i)\n"
    )
    root = body(module)
    assert isinstance(root, st.SBlockRealize) and root.block.name == "root"
    loop = root.block.body
    assert isinstance(loop, st.For) and isinstance(loop.body, st.SBlockRealize)
    block = loop.body.block
    assert block.name == "copy" and len(block.reads) == 1 and len(block.writes) == 1


def test_macros_in_a_module_class_and_in_a_function() -> None:
    module = parse(
        "@I.ir_module\nclass Module:\n"
        "    @T.macro\n    def zero(buf):\n        buf[0] = T.float32(0)\n"
        '    @T.prim_func\n    def main(A: T.Buffer((4,), "float32")):\n'
        "        @T.macro\n        def one(buf):\n            buf[1] = T.float32(1)\n"
        "        zero(A)\n        one(A)\n"
    )
    assert len(body(module).stmts) == 2  # type: ignore[attr-defined]


def test_spans_of_expanded_code_point_into_the_macro_body() -> None:
    module = parse(
        "@T.macro\ndef fill(buf):\n    buf[3] = T.float32(0)\n" + SIGNATURE + "    fill(A)\n"
    )
    store = body(module)
    assert isinstance(store, st.BufferStore) and store.span is not None
    assert (store.span.line, store.span.column) == (3, 5)


def test_recursion_is_an_error_naming_the_chain() -> None:
    error = expect_error(
        "@T.macro\ndef a(x):\n    b(x)\n@T.macro\ndef b(x):\n    a(x)\n" + SIGNATURE + "    a(A)\n"
    )
    diagnostic = error.diagnostics[0]
    assert "calls itself recursively: a -> b -> a" in diagnostic.message
    assert [n.span.line for n in diagnostic.notes if n.span] == [3, 9]


def test_direct_recursion() -> None:
    error = expect_error("@T.macro\ndef a(x):\n    a(x)\n" + SIGNATURE + "    a(A)\n")
    assert "a -> a" in error.diagnostics[0].message


def test_wrong_macro_arguments() -> None:
    error = expect_error("@T.macro\ndef f(x):\n    x[0] = 1.0\n" + SIGNATURE + "    f(A, B)\n")
    assert "takes 1 arguments (2 given)" in error.diagnostics[0].message
