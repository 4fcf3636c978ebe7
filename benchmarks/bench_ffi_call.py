"""Call overhead of a compiled tirc kernel: through tvm-ffi (`--abi tvm-ffi`, loaded with
tvm_ffi.load_module) against a plain ctypes call of the C ABI, on a 1-element add, so that
the time is the call's. Issue 22's goal: tvm-ffi at most 2x ctypes.

    .venv/bin/python benchmarks/bench_ffi_call.py

Each line is the best of 7 repeats of 20,000 calls, in ns a call, measured in one run:
- ctypes, pointers: the C function with argtypes set, called with the three data addresses
  (ints computed once), what a C-ABI binding that caches its pointers pays;
- ctypes, arrays: the same, reading each array's address (`a.ctypes.data`) every call;
- tvm-ffi, tensors: the packed function on tvm_ffi.Tensor arguments (made once, from the
  arrays through DLPack), checking dtype, shape, strides and alignment every call;
- tvm-ffi, arrays: the same on the numpy arrays, converted through DLPack every call.
"""

from __future__ import annotations

import ctypes
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

ADD = """
@T.prim_func
def add(A: T.Buffer((1,), "float32"), B: T.Buffer((1,), "float32"), C: T.Buffer((1,), "float32")):
    T.func_attr({"tirx.noalias": True})
    C[0] = A[0] + B[0]
"""
CALLS, REPEATS = 20_000, 7


def per_call_ns(call: object) -> float:
    times = timeit.repeat(call, number=CALLS, repeat=REPEATS)  # type: ignore[arg-type]
    return min(times) / CALLS * 1e9


def aligned(value: float) -> np.ndarray:
    raw = np.empty(128, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    array = raw[start : start + 4].view(np.float32)
    array[0] = value
    return array


def measure() -> dict[str, float]:
    import tirc

    try:
        import tvm_ffi
    except ImportError:
        sys.exit("needs apache-tvm-ffi (pip install apache-tvm-ffi)")
    module = tirc.build(ADD)
    a, b, c = aligned(1.0), aligned(2.0), aligned(0.0)
    with tempfile.TemporaryDirectory() as directory:
        c_library, ffi_library = Path(directory, "c.so"), Path(directory, "ffi.so")
        module.export(c_library, abi="c")
        module.export(ffi_library, abi="tvm-ffi")
        plain = ctypes.CDLL(str(c_library)).add
        plain.argtypes = [ctypes.c_void_p] * 3
        plain.restype = ctypes.c_int32
        packed = tvm_ffi.load_module(str(ffi_library))["add"]
    pointers = (a.ctypes.data, b.ctypes.data, c.ctypes.data)
    tensors = tuple(tvm_ffi.from_dlpack(x) for x in (a, b, c))
    packed(*tensors)
    assert c[0] == 3.0
    return {
        "ctypes, pointers": per_call_ns(lambda: plain(*pointers)),
        "ctypes, arrays": per_call_ns(lambda: plain(a.ctypes.data, b.ctypes.data, c.ctypes.data)),
        "tvm-ffi, tensors": per_call_ns(lambda: packed(*tensors)),
        "tvm-ffi, arrays": per_call_ns(lambda: packed(a, b, c)),
    }


def main() -> None:
    results = measure()
    for name, ns in results.items():
        print(f"{name:18} {ns:8.0f} ns/call")
    ratio = results["tvm-ffi, tensors"] / results["ctypes, pointers"]
    print(f"tvm-ffi (tensors) / ctypes (pointers): {ratio:.2f}x (goal: <= 2x)")


if __name__ == "__main__":
    main()
