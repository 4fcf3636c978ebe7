"""Lowering samples for cuda and running NVIDIA's tools on what the backends emit; tests skip
with a reason where a tool is missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.ir.function import IRModule
from tirc.text import parse

ROOT = Path(__file__).parents[2]
GPU_SAMPLES = ROOT / "samples" / "gpu"
SAMPLE_NAMES = ("elementwise", "matmul", "softmax")


def sample(name: str) -> tuple[IRModule, IRModule]:
    """(the sample as written, scheduled by its plan and lowered for cuda)."""
    path = GPU_SAMPLES / f"{name}.tir"
    module = parse(path.read_text(), name=str(path))
    scheduled, _ = apply_plan_file(module, str(GPU_SAMPLES / f"{name}.plan.json"))
    return module, lower_module(scheduled, target="cuda")


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def nvcc_accepts(source: str, directory: Path, arch: str = "sm_90") -> str:
    """nvcc's complaint about a .cu file, or '' when it compiles."""
    nvcc = require_tool("nvcc")
    cu = directory / "kernel.cu"
    cu.write_text(source)
    done = subprocess.run(
        [nvcc, f"-arch={arch}", "-c", str(cu), "-o", str(directory / "kernel.o")],
        capture_output=True,
        text=True,
    )
    return "" if done.returncode == 0 else done.stderr


def ptxas_accepts(ptx: str, directory: Path, arch: str = "sm_90") -> str:
    """ptxas's complaint about PTX, or '' when it assembles."""
    ptxas = require_tool("ptxas")
    path = directory / "kernel.ptx"
    path.write_text(ptx)
    done = subprocess.run(
        [ptxas, f"-arch={arch}", str(path), "-o", str(directory / "kernel.cubin")],
        capture_output=True,
        text=True,
    )
    return "" if done.returncode == 0 else done.stderr
