"""Where a message about a tensor intrinsic's code points: into its library file, at the line
the file has it on (tirc/schedule/intrinsics/library), also for an instance of a family
(`{N}` written out) and after tensorize copied the implementation into the program.

- a pass that refuses a wgmma tensorize put in (inject-permuted-layout: a 128-byte-swizzled
  read of a tile whose stores are not permuted) is located at the `T.ptx_wgmma` line of
  cuda_wgmma.tir's swizzled implementation, and shows that line with the family's values;
- each built-in intrinsic's functions start at the line of their template in the file.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from tests.codegen_cuda.gpu_plans import GPU_SAMPLES
from tirc.cli.main import main
from tirc.schedule.intrinsics import builtin_intrinsics
from tirc.schedule.intrinsics.registry import family_texts

LIBRARY = Path(__file__).parents[2] / "tirc/schedule/intrinsics/library"


def _line(path: Path, start: str, then: str) -> int:
    """The number of the first line containing `then` after the first containing `start`."""
    lines = path.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if start in line)
    return next(i for i in range(first, len(lines)) if then in lines[i]) + 1


def test_a_refusal_inside_the_intrinsic_points_into_the_library(tmp_path: Path) -> None:
    plan = json.loads((GPU_SAMPLES / "gemm_wgmma_tensorize.swizzle128_tma.plan.json").read_text())
    plan["steps"] = [
        step
        for step in plan["steps"]
        if not (step.get("key") == "permuted_layout" and step["target"] == "A_shared")
    ]
    (tmp_path / "p.json").write_text(json.dumps(plan))
    output = io.StringIO()
    args = [str(GPU_SAMPLES / "gemm_wgmma_tensorize.tir"), "--plan", str(tmp_path / "p.json")]
    args += ["--target", "cuda -arch=sm_90a", "--emit", "cu", "-o", str(tmp_path / "k.cu")]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = main(["compile", *args])
    text = output.getvalue()
    assert code == 1
    assert "its stores are not permuted" in text
    line = _line(LIBRARY / "cuda_wgmma.tir", "f32_swizzle{W}_impl(", "T.ptx_wgmma(")
    assert f"--> tirc/schedule/intrinsics/library/cuda_wgmma.tir:{line}:17" in text
    assert f'{line} |                 T.ptx_wgmma("m64n64k16", "float16"' in text
    assert "<string>" not in text
    assert not (tmp_path / "k.cu").exists()


def test_each_function_of_a_family_is_parsed_at_its_lines() -> None:
    library = builtin_intrinsics()
    for name, template in [
        ("wgmma_m64n128k16_bf16f32_swizzle64", "wgmma_m64n{N}k16_{ab}f32_swizzle{W}"),
        ("wgmma_fill_m64n256_f32", "wgmma_fill_m64n{N}_f32"),
        ("wgmma_store_m64n64_f32_global", "wgmma_store_m64n{N}_f32_global"),
    ]:
        for part in ("desc", "impl"):
            func = getattr(library[name], part)
            span = func.body.span
            assert span is not None
            assert span.source.name == "tirc/schedule/intrinsics/library/cuda_wgmma.tir"
            want = _line(LIBRARY / "cuda_wgmma.tir", f"def {template}_{part}(", "T.sblock")
            assert span.line == want, (name, part)


def test_family_texts_keep_the_lines_of_the_file() -> None:
    text = (
        "#% N: 8, 16\n"
        "class Module:\n"
        "    @T.prim_func\n"
        "    def f_{N}():\n"
        "        pass\n"
        "    @T.prim_func\n"
        "    def g():\n"
        "        pass\n"
    )
    texts = family_texts(text, "t.tir")
    assert [t.splitlines().index(next(x for x in t.splitlines() if "def" in x)) for t in texts] == [
        3,
        3,
        6,
    ]
    assert ["def f_8" in texts[0], "def f_16" in texts[1], "def g" in texts[2]] == [True] * 3
    assert family_texts("class Module:\n", "t.tir") == ["class Module:\n"]  # no family
