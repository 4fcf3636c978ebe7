"""benchmarks/sass_mainloop.py (the GEMM main loop's instructions, from SASS) on hand-written
nvdisasm text, and the shared-memory addresses the CUDA C backend gives inline asm. Where nvcc,
ptxas and nvdisasm are all present, the mma.sync GEMM's main loop is held to its counts."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tirc.codegen.cuda.expr import ExprPrinter
from tirc.codegen.cuda.names import NameTable
from tirc.codegen.cuda.ptx import shared_address
from tirc.ir import expr as E
from tirc.ir.dtype import parse_dtype

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "sass_mainloop", ROOT / "benchmarks" / "sass_mainloop.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sass_mainloop"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


TOOL = _tool()

# a k-tile loop (.L_x_1) around a two-trip k-step loop (.L_x_0) that ptxas runs on UP0, and
# an epilogue loop without copies: the shape ptxas gave a gemm_mma plan through NVPTX
SASS = """\
main_kernel:
.text.main_kernel:
        /*0000*/                   S2R R131, SR_TID.X ;
        /*0010*/                   IMAD.MOV.U32 R154, RZ, RZ, RZ ;
.L_x_1:
        /*0020*/                   VIADD R154, R154, 0x1 ;
        /*0030*/                   UPLOP3.LUT UP0, UPT, UPT, UPT, UPT, 0x80, 0x0 ;
        /*0040*/              @!PT LDS RZ, [RZ] ;
        /*0050*/                   LDGSTS.E.BYPASS.128 [R153], desc[UR10][R138.64] ;
        /*0060*/                   IMAD.WIDE R138, R135, 0x2, R132 ;
        /*0070*/                   LDGDEPBAR ;
        /*0080*/                   DEPBAR.LE SB0, 0x1 ;
        /*0090*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
.L_x_0:
        /*00a0*/                   PLOP3.LUT P0, PT, PT, PT, UP0, 0x80, 0x0 ;
        /*00b0*/                   UPLOP3.LUT UP0, UPT, UPT, UPT, UPT, 0x40, 0x0 ;
        /*00c0*/                   LEA R133, R133, UR5, 0x1 ;
        /*00d0*/                   LDSM.16.MT88.4 R132, [R133] ;
        /*00e0*/                   HMMA.16816.F32 R60, R148.reuse, R132, R60 ;
        /*00f0*/                   HMMA.16816.F32 R56, R148, R134, R56 ;
        /*0100*/               @P0 BRA `(.L_x_0) ;
        /*0110*/                   ISETP.NE.U32.AND P0, PT, R154, 0x7f, PT ;
        /*0120*/               @P0 BRA `(.L_x_1) ;
.L_x_2:
        /*0130*/                   HMMA.16816.F32 R60, R148, R132, R60 ;
        /*0140*/                   ISETP.NE.U32.AND P0, PT, R154, 0x7f, PT ;
        /*0150*/               @P0 BRA `(.L_x_2) ;
        /*0160*/                   EXIT ;
"""


def test_the_main_loop_is_the_one_that_copies_and_counts_its_nested_loop_twice() -> None:
    report = TOOL.analyze_sass("sample", SASS, [])
    assert report.kernel == "main_kernel"
    assert report.static == 17  # .L_x_1 up to its branch
    assert report.unknown_trips == 0
    counts = report.counts
    assert counts["HMMA"] == 4 and counts["LDSM"] == 2 and counts["LEA"] == 2
    assert counts["PLOP3"] == 2 and counts["UPLOP3"] == 3 and counts["BRA"] == 3
    assert counts["LDGSTS"] == 1 and counts["LDS@!PT"] == 1 and counts["IMAD.WIDE"] == 1
    assert counts["VIADD"] == 1 and counts["ISETP"] == 1 and "S2R" not in counts
    assert counts["BAR"] == counts["DEPBAR"] == counts["LDGDEPBAR"] == 1
    assert report.total == 10 + 2 * 7  # the k-step loop's 7 instructions twice
    assert report.per_hmma() == pytest.approx(20 / 4)
    assert "LDGSTS" in TOOL.format_report(report)


def test_the_order_shows_ldmatrix_no_hmma_is_ahead_of() -> None:
    """The sample's loop: a copy, the wait and barrier, then an ldmatrix before the next HMMA
    (exposed); a prefetching loop's ldmatrix come between HMMAs."""
    report = TOOL.analyze_sass("sample", SASS, [])
    assert report.order == "G C W | L H2"  # the nested loop's text once
    assert report.exposed_ldsm == 1
    kinds = ["HMMA", "LDSM", "HMMA", "DEPBAR", "BAR", "HMMA", "LDGSTS", "LDSM", "HMMA"]
    assert TOOL.placement(kinds) == ("H L H W | H G L H", 0)


def test_a_nested_loop_of_unknown_trips_is_counted_once_and_said() -> None:
    # without the flip of UP0 before the loop, the two trips are not known
    text = SASS.replace(
        "VIADD R154, R154, 0x1 ;\n        /*0030*/                   UPLOP3.LUT UP0", "VIADD R9, R9"
    )
    report = TOOL.analyze_sass("sample", text, [])
    assert report.unknown_trips == 1
    assert report.counts["HMMA"] == 2
    assert "unknown trip count" in TOOL.format_report(report)


def test_without_an_hmma_loop_the_report_says_so() -> None:
    report = TOOL.analyze_sass("sample", SASS.replace("HMMA.16816.F32", "FFMA"), [])
    assert report.problem == "no loop with HMMA instructions in the SASS"


def test_a_missing_nvdisasm_is_said_with_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("NVDISASM", raising=False)
    monkeypatch.setitem(sys.modules, "nvidia", None)  # no pip wheels either
    with pytest.raises(TOOL.ToolMissing, match="pip install nvidia-cuda-nvdisasm"):
        TOOL.find_nvdisasm(None)
    with pytest.raises(TOOL.ToolMissing, match="--nvdisasm /no/such/tool: no such executable"):
        TOOL.find_nvdisasm("/no/such/tool")


def _printer() -> tuple[ExprPrinter, E.Var, E.Var]:
    names = NameTable()
    shared = E.Var("A_shared", parse_dtype("handle"))
    i = E.Var("i", parse_dtype("int32"))
    names(shared)
    names(i)
    return ExprPrinter(names), shared, i


def test_a_shared_address_is_the_base_plus_unsigned_byte_offsets() -> None:
    p, shared, i = _printer()
    half, uint64 = parse_dtype("float16"), parse_dtype("uint64")
    text = shared_address(p, shared, E.Mul(i, E.IntImm(8)), half)
    assert text == "((unsigned)__cvta_generic_to_shared(A_shared) + (unsigned)(i * 8) * 2u)"
    assert shared_address(p, shared, E.IntImm(0), uint64) == (
        "((unsigned)__cvta_generic_to_shared(A_shared))"
    )
    # an access pointer's offset counts in its annotation's elements, the call's in its own;
    # each summand is scaled apart
    annotation = E.Call(half, "type_annotation", ())
    pointer = E.Call(
        parse_dtype("handle"),
        "tvm_access_ptr",
        (annotation, shared, E.Add(i, E.IntImm(512)), E.IntImm(256), E.IntImm(1)),
    )
    assert shared_address(p, pointer, E.IntImm(3), uint64) == (
        "((unsigned)__cvta_generic_to_shared(A_shared) + (unsigned)(i) * 2u"
        " + (unsigned)(512) * 2u + (unsigned)(3) * 8u)"
    )


def _nvdisasm() -> str | None:
    try:
        return str(TOOL.find_nvdisasm(None))
    except TOOL.ToolMissing:
        return None


# (plan, PTX from CUDA C or tirc's NVPTX path, the most instructions besides the 64 HMMA, 16
# LDSM and 8 LDGSTS a k tile may take, the ldmatrix the k tile issues with no HMMA ahead of
# them): with CUDA 13.0, 42, 45 and 49 (async3_prefetch, benchmarks/plans: the next tile's
# first fragments loaded before the last k step's products), and 11, 11, 0; before shared
# addresses were 32-bit sums of scaled terms and a 3-stage pipeline's stage a counter, 61 and
# 60. Through LLVM, async2 42 and 12 (85, a k step's loop left rolled, with 64-bit generic
# shared addresses converted whole)
MAIN_LOOP_BARS = [
    ("async2", "cuda", 46, 11),
    ("async3", "cuda", 48, 11),
    ("async3_prefetch", "cuda", 52, 0),
    ("async2", "llvm", 46, 12),
]


@pytest.mark.skipif(
    _nvdisasm() is None or shutil.which("ptxas") is None or shutil.which("nvcc") is None,
    reason="needs nvcc, ptxas and nvdisasm",
)
@pytest.mark.parametrize(("plan", "via", "most", "exposed"), MAIN_LOOP_BARS)
def test_the_gemm_main_loop_keeps_its_instruction_counts(
    plan: str, via: str, most: int, exposed: int
) -> None:
    """gemm_mma at 4096^3 for sm_90: a k tile is 64 HMMA, 16 ldmatrix x4 and 8 cp.async a
    warp, and a bounded number of other instructions (index math, the loop's own), one
    barrier, with no spills; a prefetching plan's ldmatrix all have HMMAs ahead of them."""
    defines = [f"{name}=4096" for name in "MNK"]
    emit = "ptx" if via == "llvm" else "cu"
    source = TOOL.cuda_source(
        TOOL.GPU_SAMPLES / "gemm_mma.tir", TOOL.resolve_plan(plan), "sm_90", defines, emit
    )
    ptx = source if via == "llvm" else TOOL.ptx_of(source, "sm_90")[0]
    cubin, resources = TOOL.cubin_of(ptx, "sm_90")
    report = TOOL.analyze_sass(plan, TOOL.disassemble(cubin, _nvdisasm()), resources)
    counts = report.counts
    assert (counts["HMMA"], counts["LDSM"], counts["LDGSTS"]) == (64, 16, 8)
    assert report.unknown_trips == 0
    assert report.total - 64 - 16 - 8 <= most, TOOL.format_report(report)
    assert counts["BAR"] == 1
    assert report.exposed_ldsm == exposed, TOOL.format_report(report)
    assert [kernel.spills for kernel in resources] == [False]
