"""inject-permuted-layout beyond its golden pairs (tests/transform/golden/inject_permuted_layout,
from TVM 0.27): the layouts it refuses, at the offending line; an mma.sync matmul whose shared
A tile is permuted computes A x B in the interpreter's thread model and compiles with nvcc;
and the ldmatrix lane addresses of every permuted program are bank-conflict free where the
plain layout's are not."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import GPU_SAMPLES, nvcc_accepts
from tests.transform.helpers import run_passes
from tirc.analysis.bank_conflicts import bank_conflicts
from tirc.codegen.cuda import emit_cuda
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import Visitor, walk
from tirc.ir.node import Node
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse
from tirc.transform import default_pipeline, run_pipeline

PASS = "inject-permuted-layout"
MARK = "# error"
ANNOTATED = '                T.sblock_attr({"permuted_layout": 1})\n'
GOLDEN = Path(__file__).parent / "golden" / "inject_permuted_layout"


def _kernel(
    shape: str = "(16, 32)",
    dtype: str = "float16",
    strides: str = "",
    copy: str = ANNOTATED,
    load: str = ANNOTATED,
    offset: str = "tx % 16 * 32 + tx // 16 * 8",
    extra: str = "",
    error_at: str = "store",
) -> str:
    """One warp copies a tile of A into shared S and ldmatrix reads it; the line `error_at`
    names (store, ldmatrix, copy: the block) carries the error mark."""
    marks = {name: (MARK if name == error_at else "") for name in ("store", "ldmatrix", "copy")}
    pointer = 'T.tvm_access_ptr(T.type_annotation("float16"), S.data, 0, 512, 1)'
    return f"""@T.prim_func(s_tir=True)
def main(A: T.Buffer({shape}, "{dtype}")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        with T.sblock(""):
            T.reads()
            T.writes()
            S = T.sblock_alloc_buffer({shape}, "{dtype}", scope="shared"{strides})
            W = T.sblock_alloc_buffer((32, 8), "float16", scope="warp")
            {marks["copy"]}
            with T.sblock("copy"):
{copy}                for i in range(8):
                    S[i, tx % 16] = A[i, tx % 16]  {marks["store"]}
            with T.sblock("load"):
                T.reads()
                T.writes()
{load}                T.ptx_ldmatrix("float16", T.bool(False), 4, ".b16", W.data, tx * 8, \
                    {pointer}, {offset})  {marks["ldmatrix"]}
{extra}"""


REJECTED = {
    "rows_of_32_bytes": (
        _kernel(shape="(16, 16)", offset="tx % 16 * 16 + tx // 16 * 8"),
        "a row must hold a multiple of 64 elements (128 bytes), or 32 elements (64 bytes) "
        "in an even number of rows",
    ),
    "odd_number_of_64_byte_rows": (
        _kernel(shape="(15, 32)"),
        "in an even number of rows",
    ),
    "float32_elements": (
        _kernel(dtype="float32", load="", offset="0"),
        "the permuted layout moves 16-byte chunks of 8 elements of 16 bits",
    ),
    "padded_rows": (
        _kernel(strides=", strides=(40, 1)"),
        "its strides are not those of a compact row-major buffer",
    ),
    "three_dimensions_of_12_rows": (
        _kernel(shape="(2, 12, 64)").replace("[i, tx % 16]", "[0, i, tx % 16]"),
        "a tile of more than two dimensions needs a multiple of 8 rows",
    ),
    "store_outside_the_annotation": (
        _kernel(copy=""),
        "a store of shared buffer S outside the blocks annotated permuted_layout would not "
        "see the permuted layout",
    ),
    "ldmatrix_outside_the_annotation": (
        _kernel(load="", error_at="ldmatrix"),
        "an ldmatrix of shared buffer S outside the blocks annotated permuted_layout",
    ),
    "lane_address_not_16_byte_aligned": (
        _kernel(offset="tx % 16 * 32 + tx // 16 * 4", error_at="ldmatrix"),
        "is not provably a multiple of 8 elements (16 bytes)",
    ),
    "pointer_passed_elsewhere": (
        _kernel(
            extra='            with T.sblock("other"):\n'
            + "                T.reads()\n                T.writes()\n"
            + ANNOTATED
            + '                T.evaluate(T.call_extern("int32", "f", S.data))  # error\n',
            error_at="",
        ),
        "shared buffer S is permuted, but its pointer in T.call_extern would not see the "
        "permuted layout",
    ),
    "annotation_of_a_float": (
        _kernel(copy='                T.sblock_attr({"permuted_layout": 1.5})\n', error_at="copy"),
        "it takes a string or an integer",
    ),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected(name: str) -> None:
    text, message = REJECTED[name]
    with pytest.raises(DiagnosticError) as caught:
        run_passes(parse(text, name=name), PASS)
    (diagnostic,) = caught.value.diagnostics
    assert message in diagnostic.message, diagnostic.message
    lines = text.splitlines()
    (marked,) = [n for n, line in enumerate(lines, 1) if line.rstrip().endswith(MARK)]
    if lines[marked - 1].strip() == MARK:  # a mark on a line of its own: the next line
        marked += 1
    assert diagnostic.span is not None and diagnostic.span.line == marked


def test_the_kernel_of_the_refusals_is_accepted() -> None:
    """The refusals above differ from this accepted program in one thing each."""
    module = run_passes(parse(_kernel()), PASS)
    assert _calls(module, "bitwise_xor") == 2


def test_transform_layout_with_an_xor_map_is_refused_with_a_location() -> None:
    """The index-map parser reads `^`, but transform_layout cannot bound (or invert) an XOR
    map and says so at the step (TVM 0.27 fails with an internal error): plans ask for the
    swizzle with the annotation."""
    program = parse(_kernel(copy="", load="", offset="0"))
    plan = {
        "version": 1,
        "func": "main",
        "steps": [
            {"op": "get_sblock", "name": "copy", "out": "b"},
            {
                "op": "transform_layout",
                "block": "b",
                "buffer_index": 0,
                "buffer_index_type": "write",
                "index_map": "lambda i, j: (i, ((j // 8) ^ (i % 8)) * 8 + j % 8)",
            },
        ],
    }
    with pytest.raises(DiagnosticError) as caught:
        apply_plan(program, read_plan(json.dumps(plan), "plan.json"), {})
    assert "is not bounded" in str(caught.value)


# --- an mma.sync matmul with a permuted A tile, end to end -------------------------------

SOURCE = GPU_SAMPLES / "matmul_fp16_mma.tir"
SAMPLE_PLAN = GPU_SAMPLES / "matmul_fp16_mma.plan.json"


def _plan(k_tiles: int, permuted: tuple[str, ...] = ("A_shared", "A_shared_warp_o")) -> str:
    """The sample's plan with k split (k0, k1, 16): the A tile in shared memory is
    16 x (16 * k_tiles) float16 (64-byte rows for 2, 128-byte for 4), and the ldmatrix
    blocks move in to k1; `permuted` blocks get the annotation."""
    plan = json.loads(SAMPLE_PLAN.read_text())
    steps = []
    for step in plan["steps"]:
        if step["op"] == "split" and step["loop"] == "k":
            step = dict(step, factors=[None, k_tiles, 16], out=["k0", "k1", "k2"])
        elif step["op"] == "reorder":
            step = dict(step, ordered_loops=["i0", "j0", "k0", "k1", "i1", "j1", "k2"])
        elif step["op"] == "compute_at" and step["block"] in ("A_warp", "B_warp"):
            step = dict(step, loop="k1")
        elif step["op"] == "get_loops" and step["block"] in ("A_warp", "B_warp"):
            step = dict(step, out=[*step["out"][:3], "warp_k1", *step["out"][3:]])
        elif step["op"] == "get_loops" and step["out"][0] == "ui0":
            step = dict(step, out=["ui0", "uj0", "uk0", "uk1", "ui1", "uj1", "uk2"])
        steps.append(step)
    for name in permuted:
        steps.append({"op": "get_sblock", "name": name, "out": f"permuted_{name}"})
        steps.append(
            {"op": "annotate", "target": f"permuted_{name}", "key": "permuted_layout", "value": 1}
        )
    return json.dumps(dict(plan, steps=steps))


def _scheduled(k_tiles: int, n: int = 64, **options: tuple[str, ...]) -> IRModule:
    module = parse(SOURCE.read_text(), name=str(SOURCE), defines={"N": str(n)})
    scheduled, _ = apply_plan(module, read_plan(_plan(k_tiles, **options), "plan.json"), {})
    return scheduled


@pytest.mark.parametrize("k_tiles", [2, 4], ids=["64_byte_rows", "128_byte_rows"])
def test_permuted_matmul_computes_the_product(k_tiles: int) -> None:
    n = 64
    lowered = lower_module(_scheduled(k_tiles, n), target="cuda")
    assert _calls(lowered, "bitwise_xor") >= 2  # the store and the ldmatrix address
    rng = np.random.default_rng(k_tiles)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float16)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float16)
    args: dict[str, np.ndarray] = {"A": a, "B": b, "C": np.full((n, n), np.nan, np.float32)}
    run(lowered["main"], args, module=lowered)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(args["C"], want, rtol=1e-5, atol=1e-5)


def test_a_permutation_of_the_stores_alone_is_refused() -> None:
    with pytest.raises(DiagnosticError) as caught:
        lower_module(_scheduled(4, permuted=("A_shared",)), target="cuda")
    assert "an ldmatrix of shared buffer A_shared outside the blocks" in str(caught.value)


def test_the_sample_b_tile_of_32_byte_rows_is_refused() -> None:
    with pytest.raises(DiagnosticError) as caught:
        lower_module(_scheduled(4, permuted=("B_shared", "B_shared_warp_o")), target="cuda")
    assert "cannot permute the layout of shared buffer B_shared (64, 16) float16" in str(
        caught.value
    )


NVCC_ARCHS = [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"]


@pytest.mark.parametrize("arch", NVCC_ARCHS)
def test_permuted_matmul_cuda_c_compiles(arch: str, tmp_path: Path) -> None:
    source = emit_cuda(lower_module(_scheduled(4), target="cuda"))
    assert "^" in source
    complaint = nvcc_accepts(source, tmp_path, arch=arch)
    assert not complaint, complaint


# --- bank conflicts of the ldmatrix lane addresses ---------------------------------------

BANKS, BANK_BYTES, ELEMENT_BYTES = 32, 4, 2


@dataclass
class _Ldmatrix:
    buffer: str  # the shared buffer's data handle
    address: E.PrimExpr  # in elements from the start of the shared buffer
    loops: tuple[tuple[E.Var, int, int], ...]  # enclosing loops: variable, min, extent


class _LdmatrixSites(Visitor):
    def __init__(self) -> None:
        self.loops: list[tuple[E.Var, int, int]] = []
        self.sites: list[_Ldmatrix] = []

    def visit_For(self, node: S.For) -> None:
        self.loops.append((node.loop_var, E.int_value(node.min), E.int_value(node.extent)))
        self.generic_visit(node)
        self.loops.pop()

    def visit_Call(self, node: E.Call) -> None:
        if node.op == "ptx_ldmatrix":
            pointer = node.args[5]
            assert isinstance(pointer, E.Call) and pointer.op == "tvm_access_ptr"
            data, base, offset = pointer.args[1], pointer.args[2], node.args[6]
            assert isinstance(data, E.Var) and isinstance(base, E.PrimExpr)
            assert isinstance(offset, E.PrimExpr)
            self.sites.append(_Ldmatrix(data.name, E.Add(base, offset), tuple(self.loops)))
        self.generic_visit(node)


def _value(expr: object, env: Mapping[E.Var, int]) -> int:
    """An integer index expression at the given values of its variables."""
    operations = {
        E.Add: lambda a, b: a + b,
        E.Sub: lambda a, b: a - b,
        E.Mul: lambda a, b: a * b,
        E.FloorDiv: lambda a, b: a // b,
        E.FloorMod: lambda a, b: a % b,
    }
    if isinstance(expr, E.IntImm):
        return expr.value
    if isinstance(expr, E.Var):
        return env[expr]
    if isinstance(expr, E.Call) and expr.op == "bitwise_xor":
        return _value(expr.args[0], env) ^ _value(expr.args[1], env)
    assert isinstance(expr, E.BinaryOp), expr
    return operations[type(expr)](_value(expr.a, env), _value(expr.b, env))


def _phase_ways(module: IRModule, buffer: str | None = None) -> Iterator[int]:
    """For every ldmatrix, every value of the loops around it and every 8-lane phase: the
    most distinct 4-byte words one bank serves (1 = conflict free). A phase reads the
    16-byte rows whose addresses lanes 8m..8m+7 give. Only ldmatrix of `buffer` if given."""
    sites = _LdmatrixSites()
    sites.visit(module["main"].body)
    chosen = [site for site in sites.sites if buffer is None or site.buffer == buffer]
    assert chosen
    for site in chosen:
        lane = next(
            var for var, _, extent in site.loops if var.name.startswith(("tx", "threadIdx_x"))
        )
        used = _variables(site.address)
        others = [loop for loop in site.loops if loop[0] is not lane and loop[0] in used]
        for values in itertools.product(*(range(low, low + extent) for _, low, extent in others)):
            env = {var: value for (var, _, _), value in zip(others, values, strict=True)}
            rows = [_value(site.address, {**env, lane: t}) * ELEMENT_BYTES for t in range(32)]
            for phase in range(4):
                words: dict[int, set[int]] = {}
                for start in rows[phase * 8 : phase * 8 + 8]:
                    assert start % 16 == 0
                    for word in range(start // BANK_BYTES, start // BANK_BYTES + 4):
                        words.setdefault(word % BANKS, set()).add(word)
                yield max(len(found) for found in words.values())


@pytest.mark.parametrize("before", sorted(GOLDEN.glob("shared_*.before.tir")), ids=lambda p: p.name)
def test_golden_ldmatrix_addresses_are_bank_conflict_free(before: Path) -> None:
    """TVM's and tirc's permuted programs (equal by the golden test) read without conflicts;
    the same program before the pass has 2- or 4-way conflicting phases."""
    plain = parse(before.read_text())
    assert max(_phase_ways(plain)) > 1
    assert set(_phase_ways(run_passes(plain, PASS))) == {1}


@pytest.mark.parametrize("k_tiles", [2, 4], ids=["64_byte_rows", "128_byte_rows"])
def test_matmul_ldmatrix_addresses_are_bank_conflict_free(k_tiles: int) -> None:
    """The matmul through the cuda pipeline up to the pass: A's ldmatrix phases conflict
    4-way (64-byte rows) or 8-way (128-byte rows) in the plain layout, not at all permuted."""
    passes = default_pipeline("cuda").passes
    upto = next(i for i, p in enumerate(passes) if p.name == PASS) + 1
    plain = run_pipeline(_scheduled(k_tiles, permuted=()), passes[:upto])
    permuted = run_pipeline(_scheduled(k_tiles), passes[:upto])
    assert max(_phase_ways(plain, "A_shared")) == {2: 4, 4: 8}[k_tiles]
    assert set(_phase_ways(permuted, "A_shared")) == {1}


@pytest.mark.parametrize("k_tiles", [2, 4], ids=["64_byte_rows", "128_byte_rows"])
def test_lowered_matmul_ldmatrix_of_a_is_conflict_free_by_the_bank_analysis(k_tiles: int) -> None:
    """The same, measured by tirc.analysis.bank_conflicts on the program lowered through the
    whole cuda pipeline (after common-subexpr-elim, flattening, warp-memory lowering)."""

    def ways(permuted: tuple[str, ...]) -> set[int]:
        lowered = lower_module(_scheduled(k_tiles, permuted=permuted), target="cuda")
        found = [
            access
            for access in bank_conflicts(lowered)
            if access.access.instruction == "ldmatrix.x4" and access.access.buffer == "A_shared"
        ]
        assert found and all(access.unknown is None for access in found)
        return {access.ways for access in found}

    assert ways(()) == {{2: 4, 4: 8}[k_tiles]}
    assert ways(("A_shared", "A_shared_warp_o")) == {1}


def _variables(expr: E.PrimExpr) -> set[E.Var]:
    found: set[E.Var] = set()

    def look(node: Node) -> None:
        if isinstance(node, E.Var):
            found.add(node)

    walk(expr, look)
    return found


def _calls(module: IRModule, op: str) -> int:
    count = 0

    def look(node: Node) -> None:
        nonlocal count
        count += isinstance(node, E.Call) and node.op == op

    walk(module, look)
    return count
