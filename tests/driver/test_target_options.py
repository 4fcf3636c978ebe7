"""One compile path and one run path for every target: each option either works for the
target or is refused with an error that says why (exit 1, nothing written). Each pair of
option and target is listed here with what it does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tirc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
KERNEL = str(ROOT / "samples" / "elementwise.tir")
CPU_PLAN = str(ROOT / "samples" / "elementwise.cpu.plan.json")
CUDA_PLAN = str(ROOT / "samples" / "elementwise.cuda.plan.json")
PIPELINES = ROOT / "tirc" / "transform" / "pipelines"
PLANS = {"cpu": CPU_PLAN, "cuda": CUDA_PLAN}


@pytest.fixture
def invoke(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    """`tirc ARGS...`: the exit status, and stdout and stderr together."""

    def run(*args: str) -> tuple[int, str]:
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    return run


# (target, options, the error's words, or None where the option works)
COMPILE_CASES = [
    ("cpu", ["--emit", "ll"], None),
    ("cpu", ["--emit", "asm", "-O", "1"], None),
    ("cpu", ["--emit", "header", "--prefix", "k_"], None),
    ("cpu", ["--pipeline", str(PIPELINES / "cpu.toml")], None),
    ("cpu", ["--emit", "cu"], "--target cpu cannot emit 'cu'"),
    ("cpu", ["--emit", "ptx"], "--target cpu cannot emit 'ptx'"),
    ("cpu", ["--arch", "sm_80"], "--arch sm_80 is a CUDA architecture, but the target is 'cpu'"),
    ("cpu", ["--ptx-via", "llvm"], "--ptx-via llvm says how CUDA's PTX is made"),
    ("cpu", ["--pipeline", "missing.toml"], "cannot read pipeline missing.toml"),
    ("cuda", ["--emit", "cu", "--prefix", "k_"], None),
    ("cuda", ["--emit", "ll"], None),
    ("cuda", ["--emit", "ptx", "--ptx-via", "llvm", "-O", "1", "--arch", "sm_80"], None),
    ("cuda -arch=sm_80", ["--emit", "ptx", "--ptx-via", "llvm", "--arch", "sm_80"], None),
    ("cuda", ["--pipeline", str(PIPELINES / "cuda.toml")], None),
    ("cuda", ["--emit", "obj"], "--target cuda cannot emit 'obj'"),
    ("cuda", ["--emit", "header"], "--target cuda cannot emit 'header'"),
    ("cuda", ["--emit", "cu", "-O", "2"], "-O 2 is LLVM's optimization level, but --emit cu"),
    ("cuda", ["--emit", "ll", "-O", "2"], "but --emit ll writes NVVM IR before optimization"),
    ("cuda", ["--emit", "cu", "--ptx-via", "llvm"], "--emit cu makes none"),
    ("cuda", ["--arch", "sm_42"], "unknown CUDA architecture 'sm_42'"),
    ("cuda -arch=sm_80", ["--arch", "sm_90"], "--arch sm_90 disagrees with the target"),
    ("cuda", ["--pipeline", "missing.toml"], "cannot read pipeline missing.toml"),
    ("cuda", ["--pipeline", str(PIPELINES / "cpu.toml")], "but the cuda backend reads"),
    ("interp", [], "--target interp runs programs in the reference interpreter"),
    ("interp", ["--emit", "obj"], "--target interp runs programs in the reference interpreter"),
]


@pytest.mark.parametrize(("target", "options", "error"), COMPILE_CASES)
def test_compile_option_on_target(
    target: str,
    options: list[str],
    error: str | None,
    tmp_path: Path,
    invoke: Callable[..., tuple[int, str]],
) -> None:
    out = tmp_path / "out"
    plan = ["--plan", PLANS[target.split()[0]]] if target.split()[0] in PLANS else []
    code, output = invoke("compile", KERNEL, "--target", target, *plan, *options, "-o", str(out))
    if error is None:
        assert code == 0, output
        assert out.stat().st_size > 0
    else:
        assert code == 1, output
        assert output.startswith("error: ") and error in output
        assert not out.exists()


def test_compile_depfile_names_the_target_pipeline(
    tmp_path: Path, invoke: Callable[..., tuple[int, str]]
) -> None:
    for target, pipeline in (("cpu", "cpu.toml"), ("cuda", "cuda.toml")):
        out, depfile = tmp_path / f"k.{target}", tmp_path / f"k.{target}.d"
        args = ["--plan", PLANS[target], "-o", str(out), "-MF", str(depfile)]
        code, output = invoke("compile", KERNEL, "--target", target, *args)
        assert code == 0, output
        assert depfile.read_text().splitlines()[0].endswith(f"pipelines/{pipeline}")


RUN_CASES = [
    ("interp", ["--bench"], None),
    ("interp", ["--gpu-model", "lockstep"], None),
    ("interp", ["--check"], "--check compares a compiled target with the interpreter"),
    ("interp", ["-O", "2"], "-O 2 is LLVM's optimization level, but --target interp"),
    ("cpu", ["--check", "-O", "1"], None),
    ("cpu", ["--check", "--gpu-model", "auto"], None),
    ("cpu", ["--gpu-model", "lockstep"], "with --target cpu the interpreter runs only for --check"),
    ("cuda", ["--gpu-model", "threads"], "with --target cuda the interpreter runs only"),
]


@pytest.mark.parametrize(("target", "options", "error"), RUN_CASES)
def test_run_option_on_target(
    target: str, options: list[str], error: str | None, invoke: Callable[..., tuple[int, str]]
) -> None:
    code, output = invoke("run", KERNEL, "--target", target, *options)
    if error is None:
        assert code == 0, output
        assert f"ran main on {target}" in output
    else:
        assert code == 1, output
        assert output.startswith("error: ") and error in output


def test_run_cuda_opt_level_follows_the_ptx_path(
    monkeypatch: pytest.MonkeyPatch, invoke: Callable[..., tuple[int, str]]
) -> None:
    """-O is LLVM's: refused where NVRTC would make the PTX, taken where LLVM makes it (the
    run then gets as far as the device, which this machine may lack)."""
    from tirc.driver import cuda_toolchain

    monkeypatch.setattr(cuda_toolchain, "has_nvrtc", lambda: True)
    code, output = invoke("run", KERNEL, "--target", "cuda", "-O", "1")
    assert code == 1 and "but NVRTC makes the PTX here" in output
    monkeypatch.setattr(cuda_toolchain, "has_nvrtc", lambda: False)
    code, output = invoke("run", KERNEL, "--target", "cuda", "-O", "1")
    assert "optimization level" not in output


def test_print_target_without_lower_is_refused(invoke: Callable[..., tuple[int, str]]) -> None:
    code, output = invoke("print", KERNEL, "--target", "cuda")
    assert code == 1
    assert "error: --target cuda chooses the pipeline that lowers, but nothing is lowered" in output
    code, output = invoke("print", KERNEL, "--lower", "--target", "interp")
    assert code == 1 and "error: target 'interp' lowers nothing" in output
    code, output = invoke("print", KERNEL, "--plan", CUDA_PLAN, "--lower", "--target", "cuda")
    assert code == 0 and "main_kernel" in output


def test_run_verifies_its_input_first(
    tmp_path: Path, invoke: Callable[..., tuple[int, str]]
) -> None:
    """As `tirc check` does: a program that provably indexes past a buffer is refused before
    anything runs (the interpreter would stop at the access, a compiled kernel would not)."""
    program = tmp_path / "overrun.tir"
    program.write_text(
        "@T.prim_func\n"
        'def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):\n'
        "    for i in range(9):\n"
        "        B[i] = A[i]\n"
    )
    for target in ("interp", "cpu"):
        code, output = invoke("run", str(program), "--target", target)
        assert code == 1, output
        assert "is indexed past its end" in output and "ran main" not in output
    check_code, check_output = invoke("check", str(program))
    assert check_code == 1 and "is indexed past its end" in check_output


def test_a_pipeline_must_leave_what_it_declares(
    tmp_path: Path, invoke: Callable[..., tuple[int, str]]
) -> None:
    """The cuda pipeline less its last two passes, still declaring tir-host-device: the
    lowered module launches threads in its host function, and compile says so (the CUDA
    backend would otherwise have had to run the passes itself)."""
    shipped = (PIPELINES / "cuda.toml").read_text()
    cut = shipped.replace('name = "split-host-device"', 'name = "simplify"')
    cut = cut.replace('name = "make-c-abi"', 'name = "simplify"')
    assert cut != shipped and 'leaves = "tir-host-device"' in cut
    pipeline = tmp_path / "cut.toml"
    pipeline.write_text(cut)
    out = tmp_path / "k.cu"
    args = ["--target", "cuda", "--plan", CUDA_PLAN, "--pipeline", str(pipeline), "-o", str(out)]
    code, output = invoke("compile", KERNEL, *args)
    assert code == 1, output
    assert f"error: pipeline {pipeline} declares it leaves tir-host-device, but" in output
    assert "launched outside a kernel (split-host-device)" in output
    assert not out.exists()
    # print --lower shows what such a pipeline makes: nothing reads it
    code, output = invoke(
        "print",
        KERNEL,
        "--plan",
        CUDA_PLAN,
        "--lower",
        "--target",
        "cuda",
        "--pipeline",
        str(pipeline),
    )
    assert code == 0 and "blockIdx.x" in output


def test_the_cuda_backend_runs_no_pass() -> None:
    from tirc.codegen.cuda import emit_cuda
    from tirc.diagnostics import DiagnosticError
    from tirc.driver.schedule import apply_plan_file
    from tirc.text import parse
    from tirc.transform import default_pipeline, run_pipeline

    module, _ = apply_plan_file(parse(Path(KERNEL).read_text(), name=KERNEL), CUDA_PLAN)
    passes = [p for p in default_pipeline("cuda").passes if p.name != "split-host-device"]
    with pytest.raises(DiagnosticError) as caught:
        emit_cuda(run_pipeline(module, passes))
    message = caught.value.diagnostics[0].message
    assert message.startswith("the CUDA backend reads a module lowered for cuda, but")
    assert "launched outside a kernel" in message
