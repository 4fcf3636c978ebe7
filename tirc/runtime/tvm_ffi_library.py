"""Libraries in the tvm-ffi ABI, built and loaded in this process: CUDA C++ (with its
`__tvm_ffi_<name>` packed functions) compiled by nvcc into a shared library, and loaded with
`tvm_ffi.load_module`, whose functions take any DLPack tensor and launch on the caller's
current stream. Needs nvcc and apache-tvm-ffi."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any

from tirc.diagnostics import DiagnosticError, Note


def import_tvm_ffi() -> Any:
    """The tvm_ffi package, or a DiagnosticError that says how to install it."""
    try:
        import tvm_ffi  # deferred: apache-tvm-ffi is optional
    except ImportError:
        raise DiagnosticError.at(
            None,
            "calling a CUDA build needs apache-tvm-ffi, which is not installed",
            Note("pip install apache-tvm-ffi"),
        ) from None
    return tvm_ffi


def load_library(path: str) -> Any:
    """The tvm_ffi Module of the shared library at `path`."""
    return import_tvm_ffi().load_module(path)


def nvcc_library(source: str, arch: str, directory: str) -> str:
    """The CUDA C++ `source` compiled by nvcc into a shared library in `directory` (machine
    code for `arch` and its PTX, so that newer GPUs can run it); its path."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise DiagnosticError.at(
            None, "building for cuda needs nvcc (the CUDA toolkit), which is not on PATH"
        )
    cu, library = os.path.join(directory, "kernels.cu"), os.path.join(directory, "kernels.so")
    with open(cu, "w") as file:
        file.write(source)
    number = arch.removeprefix("sm_")
    command = [
        nvcc,
        "-shared",
        "-Xcompiler",
        "-fPIC",
        "-O3",
        f"-gencode=arch=compute_{number},code=[sm_{number},compute_{number}]",
        "-o",
        library,
        cu,
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise DiagnosticError.at(None, f"nvcc failed: {done.stderr.strip()[:2000]}")
    return library


def device_arch(default: str) -> str:
    """The architecture of the first GPU nvidia-smi reports, else `default`."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return default
    done = subprocess.run(
        [smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True, text=True
    )
    first = done.stdout.strip().splitlines()[:1]
    if done.returncode != 0 or not first or "." not in first[0]:
        return default
    major, minor = first[0].strip().split(".", 1)
    return f"sm_{major}{minor}"


def build_and_load(source: str, arch: str) -> tuple[bytes, Any]:
    """The CUDA C++ `source` as a shared library (its bytes), and that library loaded
    through tvm_ffi (a tvm_ffi Module)."""
    tvm_ffi = import_tvm_ffi()
    directory = tempfile.mkdtemp(prefix="tirc-cuda-")
    try:
        path = nvcc_library(source, arch, directory)
        with open(path, "rb") as file:
            library = file.read()
        return library, tvm_ffi.load_module(path)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
