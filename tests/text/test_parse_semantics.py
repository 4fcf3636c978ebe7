"""What the text means: the IR each construct builds, mirroring TVM 0.27's parser."""

from __future__ import annotations

import numpy as np
import pytest

from tests.text.parse_helpers import FUNCTION_HEAD, expect_error, parse, parse_function
from tirc import interp
from tirc.ir import dtype as dt
from tirc.ir import expr as ir
from tirc.ir import stmt as st
from tirc.ir.structural import structural_equal
from tirc.text.expression import parse_index_map

HEAD64 = (
    '@T.prim_func\ndef main(A: T.Buffer((16,), "float32"), H: T.Buffer((16,), "float16"), '
    'B: T.Buffer((16,), "int64"), n: T.int64, m: T.int32, b: T.bool):\n'
)


def value_of(line: str, head: str = HEAD64) -> ir.PrimExpr:
    """The stored value of a one-line function body `X[0] = ...`."""
    store = parse_function("    " + line + "\n", head).body
    assert isinstance(store, st.BufferStore)
    return store.value


def test_integer_literals_are_int32_or_int64() -> None:
    assert value_of('B[0] = T.Cast("int64", 7)').value.dtype == dt.INT32  # type: ignore[attr-defined]
    big = value_of("B[0] = 3000000000")
    assert isinstance(big, ir.IntImm) and big.dtype == dt.INT64


def test_a_python_int_takes_the_type_of_the_expression_it_meets() -> None:
    added = value_of("B[0] = n + 1")
    assert isinstance(added, ir.Add) and added.b.dtype == dt.INT64 and added.b.value == 1  # type: ignore[attr-defined]


def test_mixed_integer_widths_widen() -> None:
    added = value_of("B[0] = n + m")
    assert isinstance(added, ir.Add) and isinstance(added.b, ir.Cast) and added.b.dtype == dt.INT64


def test_float_literal_promotes_float16_to_float32_then_stores_float16() -> None:
    value = value_of("H[0] = H[1] + 1.5")
    assert isinstance(value, ir.Cast) and value.dtype == dt.FLOAT16
    inner = value.value
    assert isinstance(inner, ir.Add) and inner.dtype == dt.FLOAT32
    assert isinstance(inner.a, ir.Cast) and isinstance(inner.b, ir.FloatImm)


def test_int_literal_converts_to_the_float_operand() -> None:
    value = value_of("H[0] = H[1] + 1")
    assert (
        isinstance(value, ir.Add)
        and isinstance(value.b, ir.FloatImm)
        and value.b.dtype == dt.FLOAT16
    )


def test_stored_constants_convert_to_the_buffer_type() -> None:
    value = value_of("A[0] = 1")
    assert isinstance(value, ir.FloatImm) and value.value == 1.0 and value.dtype == dt.FLOAT32


@pytest.mark.parametrize(
    ("line", "expected"),
    [("B[0] = n + 0", "n"), ("B[0] = n * 1", "n"), ("B[0] = 0 + n", "n"), ("B[0] = n // 1", "n")],
)
def test_identities_fold(line: str, expected: str) -> None:
    value = value_of(line)
    assert isinstance(value, ir.Var) and value.name == expected


def test_constants_fold_with_wrap_around() -> None:
    assert value_of("B[0] = T.int64(3) * 4 - 2").value == 10  # type: ignore[attr-defined]
    assert value_of('B[0] = T.Cast("int64", T.int32(2147483647) + 1)').value.value == -(2**31)  # type: ignore[attr-defined]
    assert value_of("B[0] = T.int64(-7) // 2 + T.int64(-7) % 3").value == -2  # type: ignore[attr-defined]


def test_float32_folding_rounds_to_float32() -> None:
    value = value_of("A[0] = T.float32(1) / T.float32(3)")
    assert isinstance(value, ir.FloatImm) and value.value == 0.3333333432674408


def test_explicit_constructors_do_not_fold() -> None:
    value = value_of("B[0] = T.Add(n, T.int64(0))")
    assert isinstance(value, ir.Add)


def test_unary_minus() -> None:
    negated = value_of("B[0] = -n")
    assert isinstance(negated, ir.Mul) and negated.b.value == -1  # type: ignore[attr-defined]
    constant = value_of("B[0] = -3")
    assert isinstance(constant, ir.IntImm) and constant.value == -3


def test_chained_comparison_and_logic() -> None:
    value = value_of('B[0] = T.Cast("int64", 0 <= m < 10 and not b or b)')
    assert isinstance(value, ir.Cast)
    disjunction = value.value
    assert isinstance(disjunction, ir.Or)
    conjunction = disjunction.a
    assert isinstance(conjunction, ir.And) and isinstance(conjunction.b, ir.Not)
    chain = conjunction.a
    assert isinstance(chain, ir.And) and isinstance(chain.a, ir.LE) and isinstance(chain.b, ir.LT)


def test_floor_and_truncating_division() -> None:
    value = value_of("B[0] = n // 2 + n % 3 + T.truncdiv(n, 4) + T.truncmod(n, 5)")
    kinds = []
    while isinstance(value, ir.Add):
        kinds.append(type(value.b).__name__)
        value = value.a
    kinds.append(type(value).__name__)
    assert kinds == ["Mod", "Div", "FloorMod", "FloorDiv"]


def test_bitwise_operators_are_intrinsic_calls() -> None:
    value = value_of("B[0] = (n << 2) & 7 | ~n")
    assert isinstance(value, ir.Call) and value.op == "bitwise_or"
    assert value.args[0].op == "bitwise_and" and value.args[1].op == "bitwise_not"  # type: ignore[attr-defined]


def test_if_then_else_with_a_constant_condition_folds() -> None:
    assert isinstance(value_of("B[0] = T.if_then_else(True, n, 0)"), ir.Var)
    call = value_of("B[0] = T.if_then_else(b, n, 0)")
    assert isinstance(call, ir.Call) and call.dtype == dt.INT64


def test_limits() -> None:
    assert value_of('B[0] = T.Cast("int64", T.max_value("int32"))').value.value == 2**31 - 1  # type: ignore[attr-defined]
    assert value_of('A[0] = T.infinity("float32")').value == float("inf")  # type: ignore[attr-defined]


def test_extern_calls_keep_the_name_as_first_argument() -> None:
    value = value_of('B[0] = T.Cast("int64", T.call_extern("int32", "f", A.data, m))')
    call = value.value  # type: ignore[attr-defined]
    assert call.op == "call_extern" and call.dtype == dt.INT32
    assert isinstance(call.args[0], ir.StringImm) and call.args[0].value == "f"


def test_storage_sync_gets_its_default_arguments() -> None:
    stmt = parse_function('    T.tvm_storage_sync("shared")\n').body
    assert isinstance(stmt, st.Evaluate) and len(stmt.value.args) == 3  # type: ignore[attr-defined]


def test_local_scalars_are_one_element_local_buffers() -> None:
    body = parse_function("    x: T.float32 = A[0]\n    x = x + 1\n    A[1] = x\n").body
    alloc, first, second, use = body.stmts  # type: ignore[attr-defined]
    assert isinstance(alloc, st.AllocBuffer) and alloc.buffer.scope == "local"
    assert [e.value for e in alloc.buffer.shape] == [1]
    assert isinstance(first, st.BufferStore) and first.buffer is alloc.buffer
    assert isinstance(second, st.BufferStore) and second.buffer is alloc.buffer
    assert isinstance(use.value, ir.BufferLoad) and use.value.buffer is alloc.buffer


def test_assigning_an_expression_makes_a_local_scalar() -> None:
    body = parse_function("    y = n + 1\n    A[y] = 1.0\n").body
    assert isinstance(body.stmts[0], st.AllocBuffer)  # type: ignore[attr-defined]


def test_let_is_a_bind() -> None:
    body = parse_function("    y: T.let[T.int32] = n * 2\n    A[y] = 1.0\n").body
    bind, store = body.stmts  # type: ignore[attr-defined]
    assert isinstance(bind, st.Bind) and bind.var.dtype == dt.INT32
    assert store.indices[0] is bind.var


def test_a_python_condition_chooses_at_parse_time() -> None:
    body = parse_function("    if 2 > 1:\n        A[0] = 1.0\n    else:\n        A[0] = 2.0\n").body
    assert isinstance(body, st.BufferStore) and body.value.value == 1.0  # type: ignore[attr-defined]


def test_no_op_evaluations_are_dropped_from_sequences() -> None:
    body = parse_function("    T.evaluate(0)\n    A[0] = 1.0\n    T.evaluate(0)\n").body
    assert isinstance(body, st.BufferStore)
    assert isinstance(parse_function("    pass\n").body, st.Evaluate)


def test_slice_store_is_a_vector_store() -> None:
    store = parse_function("    A[0:4] = T.Broadcast(T.float32(1), 4)\n").body
    assert isinstance(store, st.BufferStore) and isinstance(store.indices[0], ir.Ramp)
    assert store.indices[0].lanes == 4


def test_loops_and_their_types() -> None:
    body = parse_function(
        "    for i in T.serial(2, n):\n        pass\n"
        "    for i in range(m, m + 4):\n        pass\n"
        "    for i, j in T.grid(n, 4):\n        pass\n"
        '    for i in T.parallel(8, annotations={"k": 1}):\n        pass\n'
        "    for i in T.unroll(0, 10, step=2):\n        pass\n",
        HEAD64,
    ).body
    serial, shifted, grid, parallel, unrolled = body.stmts  # type: ignore[attr-defined]
    assert (
        serial.loop_var.dtype == dt.INT64
        and serial.min.value == 2
        and isinstance(serial.extent, ir.Sub)
    )
    assert shifted.extent.value == 4
    assert grid.loop_var.dtype == dt.INT64 and grid.body.loop_var.dtype == dt.INT32
    assert parallel.kind is st.ForKind.PARALLEL and parallel.annotations.get("k") == 1
    assert unrolled.kind is st.ForKind.UNROLLED and unrolled.step.value == 2


def test_thread_binding_loop() -> None:
    loop = parse_function(
        '    for i in T.thread_binding(32, thread="threadIdx.x"):\n        A[i] = 0.0\n'
    ).body
    assert loop.kind is st.ForKind.THREAD_BINDING  # type: ignore[attr-defined]
    binding = loop.thread_binding  # type: ignore[attr-defined]
    assert binding.iter_type is st.IterType.THREAD and binding.thread_tag == "threadIdx.x"


def test_launch_thread_forms() -> None:
    body = parse_function(
        '    bx = T.launch_thread("blockIdx.x", 4)\n'
        '    with T.launch_thread("threadIdx.x", 32) as tx:\n        A[tx] = 1.0\n'
        '    vt = T.env_thread("vthread")\n'
        "    with T.launch_thread(vt, 2):\n        A[bx] = 2.0\n"
    ).body
    assert isinstance(body, st.AttrStmt) and body.key == "thread_extent"
    assert body.node.thread_tag == "blockIdx.x" and body.value.value == 4  # type: ignore[attr-defined]
    with_form, virtual = body.body.stmts  # type: ignore[attr-defined]
    assert with_form.node.var is with_form.body.indices[0]
    assert virtual.key == "virtual_thread" and virtual.node.thread_tag == "vthread"


def test_attr_statement_forms() -> None:
    body = parse_function(
        '    with T.attr(A.data, "storage_alignment", 128):\n        A[0] = 1.0\n'
        '    T.attr(0, "pragma", "value")\n    A[1] = 2.0\n'
    ).body
    first, second = body.stmts  # type: ignore[attr-defined]
    assert first.key == "storage_alignment" and first.value.value == 128
    assert second.key == "pragma" and isinstance(second.value, ir.StringImm)
    assert isinstance(second.body, st.BufferStore)


def test_asserts() -> None:
    body = parse_function(
        '    assert n > 0, "positive"\n    assert n < 9, ("ValueError", ["a", "b"])\n'
    ).body
    first, second = body.stmts  # type: ignore[attr-defined]
    assert (first.kind, first.message) == ("RuntimeError", ("positive",))
    assert (second.kind, second.message) == ("ValueError", ("a", "b"))


def test_break_and_continue() -> None:
    body = parse_function(
        "    for i in range(4):\n        if i == 2:\n            break\n        continue\n"
    ).body
    assert isinstance(body.body.stmts[0].then_case, st.Break)  # type: ignore[attr-defined]
    assert isinstance(body.body.stmts[1], st.Continue)  # type: ignore[attr-defined]


def test_buffer_declarations() -> None:
    body = parse_function(
        "    S = T.alloc_shared((4,))\n"
        '    V = T.decl_buffer((2, 2), "float32", data=S.data, scope="shared")\n'
        "    W = S.view(2, 2)\n"
        '    L = T.decl_buffer((4,), "int8")\n'
    ).body
    shared, decl, view, local = body.stmts  # type: ignore[attr-defined]
    assert isinstance(shared, st.AllocBuffer) and shared.buffer.scope == "shared"
    assert isinstance(decl, st.DeclBuffer) and decl.buffer.data is shared.buffer.data
    assert isinstance(view, st.DeclBuffer) and [e.value for e in view.buffer.shape] == [2, 2]
    assert isinstance(local, st.AllocBuffer) and local.buffer.dtype == dt.INT8


def test_signature_forms() -> None:
    func = parse(
        '@T.prim_func(private=True)\ndef main(a: T.handle, B: T.Buffer(("n", "m"), "int8", strides=("s0", 1)),'  # noqa: E501
        ' C: T.Buffer(("n",), offset_factor=4, align=16, scope="shared"), n: T.int32) -> T.int32:\n'
        '    T.func_attr({"tirx.noalias": True})\n'
        '    A = T.match_buffer(a, (16,), "float32")\n'
        "    T.evaluate(T.ret(n))\n"
    ).functions[0][1]
    assert func.is_private and func.ret_type == dt.INT32 and func.attrs.get("tirx.noalias") is True
    a, b, c, n = func.params
    assert [buffer.name for _, buffer in func.buffer_map] == ["B", "C", "A"]
    b_buffer = func.buffer_of(b)
    c_buffer = func.buffer_of(c)
    assert b_buffer is not None and c_buffer is not None
    assert b_buffer.shape[0] is n and c_buffer.shape[0] is n  # "n" is the scalar parameter
    assert isinstance(b_buffer.strides[0], ir.Var) and b_buffer.strides[0].name == "s0"
    assert isinstance(c_buffer.elem_offset, ir.Var) and c_buffer.offset_factor == 4
    assert c_buffer.data_alignment == 16 and c_buffer.scope == "shared"


def test_type_var_shapes_are_int64() -> None:
    func = parse(
        'n = TypeVar("n")\n@T.prim_func\ndef main(A: T.Buffer((n,), "float32"), B: T.Buffer((n, 2), "float32")):\n'  # noqa: E501
        "    pass\n"
    ).functions[0][1]
    a, b = (buffer for _, buffer in func.buffer_map)
    assert a.shape[0] is b.shape[0] and a.shape[0].dtype == dt.INT64


S_TIR = '@T.prim_func(s_tir=True)\ndef main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):\n'  # noqa: E501


def test_s_tir_root_block() -> None:
    root = parse_function(
        '    X = T.sblock_alloc_buffer((4,))\n    for i in range(4):\n        with T.sblock("b"):\n'
        "            vi = T.axis.spatial(4, i)\n            X[vi] = 1.0\n",
        S_TIR,
    ).body
    assert isinstance(root, st.SBlockRealize) and root.block.name == "root"
    assert len(root.block.alloc_buffers) == 1 and root.block.reads == ()


def test_s_tir_without_blocks_has_no_root() -> None:
    assert isinstance(
        parse_function("    for i in range(4):\n        B[i] = 0.0\n", S_TIR).body, st.For
    )


def test_a_lone_block_without_axes_is_the_root() -> None:
    realize = parse_function('    with T.sblock("only"):\n        B[0] = 1.0\n', S_TIR).body
    assert isinstance(realize, st.SBlockRealize) and realize.block.name == "only"
    assert realize.block.writes == ()  # the root's regions are not inferred


def test_block_pieces() -> None:
    block = parse_function(
        "    for i, k in T.grid(16, 16):\n"
        '        with T.sblock("sum"):\n'
        '            vi, vk = T.axis.remap("SR", [i, k])\n'
        "            T.where(i < 12)\n"
        '            T.sblock_attr({"tag": "x"})\n'
        "            with T.init():\n                B[vi] = 0.0\n"
        "            B[vi] = B[vi] + A[vi, vk]\n",
        S_TIR,
    ).body.block.body.body.body
    assert isinstance(block, st.SBlockRealize) and isinstance(block.predicate, ir.LT)
    inner = block.block
    assert [iv.iter_type for iv in inner.iter_vars] == [st.IterType.SPATIAL, st.IterType.REDUCE]
    assert inner.annotations.get("tag") == "x" and isinstance(inner.init, st.BufferStore)
    # inferred: the init's buffer is not a read of a reduction
    assert [r.buffer.name for r in inner.reads] == ["A"] and [
        w.buffer.name for w in inner.writes
    ] == ["B"]


def test_region_inference_relaxes_inner_loops() -> None:
    block = parse_function(
        "    for i in range(4):\n"
        '        with T.sblock("rows"):\n'
        "            vi = T.axis.spatial(4, i)\n"
        "            for j in range(16):\n"
        "                if j < 8:\n"
        "                    B[vi * 4 + j // 4] = A[vi * 4, j]\n",
        S_TIR,
    ).body.block.body.body.block
    (read,) = block.reads
    assert isinstance(read.region[0].extent, ir.IntImm) and read.region[0].extent.value == 1
    assert (read.region[1].min.value, read.region[1].extent.value) == (0, 8)  # narrowed by j < 8
    (write,) = block.writes
    assert write.region[0].extent.value == 2


def test_region_inference_needs_regions_for_opaque_access() -> None:
    error = expect_error(
        S_TIR + "    for i in range(4):\n"
        '        with T.sblock("opaque"):\n'
        "            vi = T.axis.spatial(4, i)\n"
        '            T.evaluate(T.call_extern("int32", "f", B.data))\n'
    )
    assert "write T.reads and T.writes" in error.diagnostics[0].message


def test_match_buffer_of_a_region() -> None:
    block = parse_function(
        "    for i in range(4):\n"
        '        with T.sblock("m"):\n'
        "            vi = T.axis.spatial(4, i)\n"
        "            T.reads(A[vi * 4 : vi * 4 + 4, 0:16])\n"
        "            T.writes()\n"
        "            Sub = T.match_buffer(A[vi * 4 : vi * 4 + 4, 0:16], (4, 16), offset_factor=1)\n"
        "            B[vi] = Sub[0, 0]\n",
        S_TIR,
    ).body.block.body.body.block
    (match,) = block.match_buffers
    assert match.buffer.name == "Sub" and isinstance(match.buffer.elem_offset, ir.Var)
    assert match.source.region[0].extent.value == 4  # (vi*4+4) - vi*4, simplified


def test_module_with_functions_and_attributes() -> None:
    module = parse(
        '@I.ir_module\nclass Module:\n    I.module_attrs({"target": "llvm"})\n'
        '    @T.prim_func\n    def f(A: T.Buffer((4,), "float32")):\n        A[0] = 1.0\n'
        '    @T.prim_func(private=True)\n    def g(A: T.Buffer((4,), "float32")):\n        A[1] = 1.0\n'  # noqa: E501
    )
    assert module.names() == ["f", "g"] and not module.is_bare
    assert module.attrs.get("target") == "llvm" and module["g"].is_private


def test_bare_function_module() -> None:
    module = parse(FUNCTION_HEAD + "    pass\n")
    assert module.is_bare and module.names() == ["main"]


def test_index_map() -> None:
    index_map = parse_index_map("T.index_map(lambda i, j: (j, i // 4, i % 4))")
    i, j = index_map.params
    assert index_map.results[0] is j and isinstance(index_map.results[1], ir.FloorDiv)
    assert structural_equal(
        parse_index_map("lambda a, b: (b, a // 4, a % 4)").results[1], index_map.results[1]
    )


def test_if_on_an_integer_is_true_when_non_zero() -> None:
    # TVM reads `if b:` with b an int32; tirc states the comparison Python's truth makes
    func = parse_function("    if m:\n        B[0] = n\n", HEAD64)
    branch = func.body
    assert isinstance(branch, st.IfThenElse) and isinstance(branch.condition, ir.NE)
    assert isinstance(branch.condition.b, ir.IntImm) and branch.condition.b.value == 0


def test_truncmod_of_floats_is_a_remainder_that_never_folds() -> None:
    """TVM's T.truncmod takes floats (C's fmod), with no folding, even of two constants."""
    value = value_of("A[0] = T.truncmod(T.float32(7.5), T.float32(2.0))")
    assert isinstance(value, ir.Mod) and value.dtype == dt.FLOAT32
    value = value_of("A[0] = T.truncmod(A[1], 2)")
    assert isinstance(value, ir.Mod) and isinstance(value.b, ir.FloatImm)


def test_truncmod_of_floats_runs_as_fmod() -> None:
    func = parse(
        '@T.prim_func\ndef main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):\n'
        "    for i in range(8):\n"
        "        B[i] = T.truncmod(A[i], T.float32(0.75))\n"
    )["main"]
    a = np.array([-2.0, -1.5, -0.5, 0.0, 0.5, 1.0, 1.6, 7.25], dtype=np.float32)
    b = np.zeros(8, dtype=np.float32)
    interp.run(func, {"A": a, "B": b})
    np.testing.assert_allclose(b, np.fmod(a, np.float32(0.75)), rtol=1e-6)
