"""`tirc compile --target cuda` honours --pipeline, --intrinsics and -O as the CPU target does:
a missing or broken pipeline is an error, a custom one lowers, the plan's tensorize finds the
user's intrinsics, the depfile names both files, and -O sets LLVM's level on the NVPTX path."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from tests.codegen_cuda.helpers import GPU_SAMPLES
from tirc.cli.main import main

Capture = pytest.CaptureFixture[str]
KERNELS = Path(__file__).parent / "kernels"
SOURCE = str(GPU_SAMPLES / "softmax.tir")
PLAN = str(GPU_SAMPLES / "softmax.plan.json")
DENSE = str(KERNELS / "dp4a_dense.tir")
DENSE_PLAN = str(KERNELS / "dp4a_dense.plan.json")
INTRINSICS = str(KERNELS / "dp4a_global.intrinsics.json")


def cuda_pipeline() -> str:
    return resources.files("tirc.transform.pipelines").joinpath("cuda.toml").read_text()


@pytest.mark.parametrize(("target", "emit"), [("cpu", "obj"), ("cuda", "cu")])
def test_missing_pipeline_is_an_error_on_both_targets(
    target: str, emit: str, tmp_path: Path, capsys: Capture
) -> None:
    out = tmp_path / "k.out"
    missing = tmp_path / "missing.toml"
    argv = ["compile", SOURCE, "--target", target, "--emit", emit, "--pipeline", str(missing)]
    assert main([*argv, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"error: cannot read pipeline {missing}" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_broken_pipeline_is_located_in_its_file(tmp_path: Path, capsys: Capture) -> None:
    pipeline = tmp_path / "broken.toml"
    pipeline.write_text('[[pass]]\nname = "simplify"\n\n[[pass]]\nname = "no-such-pass"\n')
    out = tmp_path / "k.cu"
    argv = ["compile", SOURCE, "--target", "cuda", "--pipeline", str(pipeline), "-o", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "no-such-pass" in err and f"--> {pipeline}:5:" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_custom_pipeline_lowers(tmp_path: Path, capsys: Capture) -> None:
    """The shipped pipeline less common-subexpr-elim: no cse_v bindings in the CUDA C."""
    cse = '[[pass]]\nname = "common-subexpr-elim"\n'
    assert cse in cuda_pipeline()
    pipeline = tmp_path / "no_cse.toml"
    pipeline.write_text(cuda_pipeline().replace(cse, ""))
    default, custom = tmp_path / "default.cu", tmp_path / "custom.cu"
    argv = ["compile", SOURCE, "--plan", PLAN, "--target", "cuda", "--emit", "cu"]
    assert main([*argv, "-o", str(default)]) == 0
    assert main([*argv, "--pipeline", str(pipeline), "-o", str(custom)]) == 0
    assert "cse_v" in default.read_text()
    assert "cse_v" not in custom.read_text()
    assert "__global__" in custom.read_text()


def test_plan_tensorizes_with_the_intrinsics_file(tmp_path: Path, capsys: Capture) -> None:
    out = tmp_path / "dense.cu"
    argv = ["compile", DENSE, "--plan", DENSE_PLAN, "--target", "cuda", "-o", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "no tensor intrinsic is named 'dp4a_u8s8_global'" in err
    assert not out.exists()
    depfile = tmp_path / "dense.d"
    assert main([*argv, "--intrinsics", INTRINSICS, "-MF", str(depfile)]) == 0
    assert "tirc_dp4a_u32_s32(" in out.read_text()
    rule = depfile.read_text().splitlines()[0]
    assert rule.startswith(f"{out}: ")
    assert INTRINSICS in rule and DENSE_PLAN in rule and rule.endswith("cuda.toml")


def test_depfile_names_a_custom_pipeline(tmp_path: Path, capsys: Capture) -> None:
    pipeline = tmp_path / "mine.toml"
    pipeline.write_text(cuda_pipeline())
    out, depfile = tmp_path / "k.cu", tmp_path / "k.d"
    argv = ["compile", SOURCE, "--plan", PLAN, "--target", "cuda", "--pipeline", str(pipeline)]
    assert main([*argv, "-o", str(out), "-MF", str(depfile)]) == 0
    rule = depfile.read_text().splitlines()[0]
    assert str(pipeline) in rule and "cuda.toml" not in rule


def test_opt_level_reaches_the_nvptx_path(tmp_path: Path, capsys: Capture) -> None:
    argv = ["compile", SOURCE, "--plan", PLAN, "--target", "cuda", "--emit", "ptx"]
    argv += ["--ptx-via", "llvm"]
    outputs = {}
    for level in ("", "-O3", "-O0"):
        out = tmp_path / f"k{level}.ptx"
        assert main([*argv, *([level] if level else []), "-o", str(out)]) == 0
        outputs[level] = out.read_text()
    assert outputs[""] == outputs["-O3"]
    assert outputs["-O0"] != outputs["-O3"]
    assert ".entry" in outputs["-O0"]
