"""Build a tirc kernel from Python and call it on PyTorch tensors (numpy arrays where torch
is not installed): the gallery's softmax, scheduled by its CPU plan, checked against the
framework's own softmax. With apache-tvm-ffi installed, it also exports the kernel as a
library that tvm_ffi.load_module loads, and calls that.

    python samples/python/softmax_torch.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import tirc

SAMPLES = Path(__file__).resolve().parents[1]


def main() -> int:
    module = tirc.build(SAMPLES / "softmax.tir", plan=SAMPLES / "softmax.cpu.plan.json")
    print(module.main)  # <tirc.Function main(A: Tensor[(4, 64), float32], B: ...)>
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        a = torch.randn(4, 64)
        b = torch.empty_like(a)
        module.main(a, b)  # torch CPU tensors, through DLPack, updated in place
        want = torch.softmax(a, dim=1)
        error = float((b - want).abs().max())
    else:
        a_np = np.random.default_rng(0).standard_normal((4, 64), dtype=np.float32)
        b_np = np.empty_like(a_np)
        module.main(a_np, b_np)
        e = np.exp(a_np - a_np.max(axis=1, keepdims=True))
        error = float(np.abs(b_np - e / e.sum(axis=1, keepdims=True)).max())
    print(f"{'torch' if torch is not None else 'numpy'}: max error {error:.2e}")
    if error > 1e-5:
        return 1
    try:
        import tvm_ffi
    except ImportError:
        print("tvm-ffi: not installed (pip install apache-tvm-ffi), skipped")
        return 0
    with tempfile.TemporaryDirectory() as directory:
        library = Path(directory) / "softmax.so"
        module.export(library)  # __tvm_ffi_main beside main
        softmax = tvm_ffi.load_module(str(library))["main"]
        # the library checks its arguments; it needs 64-byte-aligned data, as torch allocates
        x = torch.randn(4, 64) if torch is not None else aligned(4, 64)
        y = torch.empty_like(x) if torch is not None else aligned(4, 64)
        softmax(x, y)
        try:
            softmax(x, y[:2])
        except ValueError as refused:
            print(f"tvm-ffi: refused a wrong call: {refused}")
        print(f"tvm-ffi: rows sum to {float(y.sum()) / 4:.6f}")
    return 0


def aligned(*shape: int) -> np.ndarray:
    raw = np.empty(int(np.prod(shape)) * 4 + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    array = raw[start : start + int(np.prod(shape)) * 4].view(np.float32).reshape(shape)
    array[...] = np.random.default_rng(1).standard_normal(shape)
    return array


if __name__ == "__main__":
    sys.exit(main())
