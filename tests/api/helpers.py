"""What the API tests share: the gallery, compiling through the command line in-process, and
the interpreter's results for the same inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.samples.helpers import SAMPLES, gallery_kernels
from tirc.cli.main import main
from tirc.driver.run_cpu import compare
from tirc.interp import random_inputs, run
from tirc.runtime.jit import aligned_copy
from tirc.text import parse

ROOT = SAMPLES.parent
SCALE = ROOT / "docs" / "examples" / "scale.tir"  # B = 2 * A over a symbolic length n

__all__ = ["SAMPLES", "SCALE", "gallery_kernels"]


def compile_sample(kernel: str, output: Path, *options: str) -> Path:
    """samples/K.tir scheduled by its cpu plan (or the plan of `options`) and compiled."""
    plan = ["--plan", str(SAMPLES / f"{kernel}.cpu.plan.json")] if "--target" not in options else []
    status = main(["compile", str(SAMPLES / f"{kernel}.tir"), *plan, *options, "-o", str(output)])
    assert status == 0
    return output


def inputs(path: Path, sizes: dict[str, int] | None = None, seed: int = 0) -> dict[str, object]:
    """Random arguments of the file's `main`, by C parameter name, arrays 64-byte aligned."""
    func = parse(path.read_text(), name=str(path))["main"]
    drawn = random_inputs(func, seed, sizes=sizes)
    return {k: aligned_copy(v) if isinstance(v, np.ndarray) else v for k, v in drawn.items()}


def expect(path: Path, args: dict[str, object], got: dict[str, object]) -> None:
    """Asserts `got` holds what the interpreter computes from `args`."""
    module = parse(path.read_text(), name=str(path))
    reference = {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in args.items()
    }
    run(module["main"], reference, module=module)
    problems = compare(module["main"], got, reference)
    assert not problems, problems


def copies(args: dict[str, object]) -> dict[str, object]:
    return {k: aligned_copy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}


# A buffer with a declared stride variable, and an extent that is an expression.
STRIDED = """
@T.prim_func
def main(a: T.handle, b: T.handle, n: T.int32, s: T.int32):
    A = T.match_buffer(a, (n, 4), "float32", strides=(s, 1))
    B = T.match_buffer(b, (n * 4,), "float32")
    for i, j in T.grid(n, 4):
        B[i * 4 + j] = A[i, j]
"""
