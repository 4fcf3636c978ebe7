"""NVIDIA's tools as tirc uses them: NVRTC (from cuda-python) for CUDA C -> PTX, ptxas for
PTX -> cubin. Each raises DiagnosticError naming what to install when it is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from tirc.diagnostics import DiagnosticError, Note

NVRTC_INSTALL = "pip install 'tirc[cuda]' (cuda-bindings and nvidia-cuda-nvrtc==13.0.*)"


def has_nvrtc() -> bool:
    try:
        from cuda.bindings import nvrtc  # noqa: F401
    except ImportError:
        return False
    return True


def ptx_from_cuda(source: str, arch: str, name: str = "kernel.cu") -> str:
    """PTX for `arch` (sm_90, ...) from CUDA C, through NVRTC."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise DiagnosticError.at(
            None,
            "--emit ptx through NVRTC needs cuda-python",
            Note(f"install it: {NVRTC_INSTALL}"),
            Note("or use --ptx-via llvm, which needs no CUDA packages"),
        ) from None
    error, program = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(nvrtc, error, "nvrtcCreateProgram")
    try:
        options = [f"-arch={arch.replace('sm_', 'compute_')}".encode(), b"-default-device"]
        options.append(b"--device-int128")  # tirc_q_multiply_shift computes in 128 bits
        options += [f"-I{directory}".encode() for directory in cuda_include_dirs()]
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            error, size = nvrtc.nvrtcGetProgramLogSize(program)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(program, log)
            text = log.decode(errors="replace")
            if "could not open source file" in text:
                raise DiagnosticError.at(
                    None,
                    "NVRTC cannot find the CUDA headers the kernel includes",
                    Note(text.strip()[:1000]),
                    Note("set CUDA_HOME to a CUDA toolkit, or pip install nvidia-cuda-runtime"),
                )
            raise DiagnosticError.at(
                None,
                "NVRTC rejected the generated CUDA C (a tirc bug)",
                Note(log.decode(errors="replace").strip()[:4000]),
            )
        error, size = nvrtc.nvrtcGetPTXSize(program)
        _check(nvrtc, error, "nvrtcGetPTXSize")
        ptx = b" " * size
        (error,) = nvrtc.nvrtcGetPTX(program, ptx)
        _check(nvrtc, error, "nvrtcGetPTX")
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return ptx.rstrip(b"\0").decode()


def cuda_include_dirs() -> list[str]:
    """Where cuda_fp16.h, cuda_bf16.h and mma.h are: NVRTC knows only its own built-ins."""
    candidates = [
        os.path.join(os.environ[key], "include")
        for key in ("CUDA_HOME", "CUDA_PATH")
        if key in os.environ
    ]
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        candidates.append(
            os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include")
        )
    candidates.append("/usr/local/cuda/include")
    try:
        import nvidia  # type: ignore[import-untyped]  # the pip wheels' namespace package: nvidia/<component>/include

        for root in nvidia.__path__:
            candidates += sorted(os.path.join(root, name, "include") for name in os.listdir(root))
    except ImportError:
        pass
    found: list[str] = []
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "cuda_fp16.h")) and directory not in found:
            found.append(directory)
    return found[:1]


def _check(nvrtc: object, error: object, what: str) -> None:
    if error != nvrtc.nvrtcResult.NVRTC_SUCCESS:  # type: ignore[attr-defined]
        raise DiagnosticError.at(None, f"NVRTC failed in {what}: {error}")


def cubin_from_ptx(ptx: str, arch: str) -> bytes:
    """A cubin for `arch` from PTX, through ptxas from the CUDA toolkit."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        raise DiagnosticError.at(
            None,
            "--emit cubin needs ptxas, which is not on PATH",
            Note("install the CUDA toolkit (ptxas ships with it) or emit ptx and assemble later"),
        )
    with tempfile.TemporaryDirectory(prefix="tirc-") as directory:
        source = os.path.join(directory, "kernel.ptx")
        target = os.path.join(directory, "kernel.cubin")
        with open(source, "w") as file:
            file.write(ptx)
        done = subprocess.run(
            [ptxas, f"-arch={arch}", source, "-o", target], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise DiagnosticError.at(
                None,
                "ptxas rejected the generated PTX (a tirc bug)",
                Note(done.stderr.strip()[:4000]),
            )
        with open(target, "rb") as file:
            return file.read()
