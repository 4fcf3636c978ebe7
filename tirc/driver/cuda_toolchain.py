"""NVIDIA's tools as tirc uses them: NVRTC (from cuda-python) for CUDA C -> PTX, ptxas for
PTX -> cubin. Each raises DiagnosticError naming what to install when it is missing.

When a tool rejects the code, whose fault it is decides the message. A function the program
calls with `T.call_extern` that the tool cannot find (`identifier "f" is undefined`,
`Unresolved extern function 'f'`) is the program's: an error at that call, naming `f`. The
callers pass the program's extern calls (`externs`: name -> span of the first call). Anything
else is tirc's own code failing to compile, reported as a tirc bug with the tool's log.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from types import ModuleType

from tirc.diagnostics import Diagnostic, DiagnosticError, Note, Span

NVRTC_INSTALL = "pip install 'tirc[cuda]' (cuda-bindings and nvidia-cuda-nvrtc==13.0.*)"


def has_nvrtc() -> bool:
    """Whether NVRTC can be called: cuda-python installed and its libnvrtc loadable."""
    return _nvrtc_problem() is None


def _nvrtc_problem() -> str | None:
    """Why NVRTC cannot be called, or None. cuda-python loads libnvrtc on the first call,
    so a wheel without nvidia-cuda-nvrtc imports fine and fails there."""
    try:
        from cuda.bindings import nvrtc  # deferred: cuda-python is optional
    except ImportError:
        return "cuda-python is not installed"
    try:
        nvrtc.nvrtcVersion()
    except Exception as error:  # noqa: BLE001  (DynamicLibNotFoundError, RuntimeError...)
        return f"libnvrtc cannot be loaded ({type(error).__name__}: {error})"
    return None


def ptx_from_cuda(
    source: str,
    arch: str,
    name: str = "kernel.cu",
    externs: Mapping[str, Span | None] | None = None,
) -> str:
    """PTX for `arch` (sm_90, ...) from CUDA C, through NVRTC; `externs` are the functions
    the program calls (see the module's docstring)."""
    problem = _nvrtc_problem()
    if problem is not None:
        raise DiagnosticError.at(
            None,
            f"--emit ptx through NVRTC needs cuda-python and its NVRTC library: {problem}",
            Note(f"install them: {NVRTC_INSTALL}"),
            Note("or use --ptx-via llvm, which needs no CUDA packages"),
        )
    from cuda.bindings import nvrtc  # deferred: cuda-python is optional

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
            raise rejection("NVRTC", "the generated CUDA C", text, externs or {})
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
        # the pip wheels' namespace package: nvidia/<component>/include
        # deferred: an optional dependency; a namespace package without type information
        import nvidia  # type: ignore[import-not-found, unused-ignore]  # absent, or no stubs

        for root in nvidia.__path__:
            candidates += sorted(os.path.join(root, name, "include") for name in os.listdir(root))
    except ImportError:
        pass
    found: list[str] = []
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "cuda_fp16.h")) and directory not in found:
            found.append(directory)
    return found[:1]


def _check(nvrtc: ModuleType, error: object, what: str) -> None:
    if error != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise DiagnosticError.at(None, f"NVRTC failed in {what}: {error}")


def cubin_from_ptx(ptx: str, arch: str, externs: Mapping[str, Span | None] | None = None) -> bytes:
    """A cubin for `arch` from PTX, through ptxas from the CUDA toolkit; `externs` are the
    functions the program calls (see the module's docstring)."""
    cubin, _ = assemble_ptx(ptx, arch, externs)
    return cubin


def assemble_ptx(
    ptx: str,
    arch: str,
    externs: Mapping[str, Span | None] | None = None,
    *,
    verbose: bool = False,
    purpose: str = "--emit cubin",
) -> tuple[bytes, str]:
    """The cubin ptxas makes of `ptx` for `arch`, and its log (with `verbose`, `ptxas -v`:
    each kernel's registers, spills and shared memory). `purpose` names what needs ptxas
    where it is missing."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        raise DiagnosticError.at(
            None,
            f"{purpose} needs ptxas, which is not on PATH",
            Note("install the CUDA toolkit (ptxas ships with it)"),
            *([Note("or emit ptx and assemble later")] if purpose == "--emit cubin" else []),
        )
    with tempfile.TemporaryDirectory(prefix="tirc-") as directory:
        source = os.path.join(directory, "kernel.ptx")
        target = os.path.join(directory, "kernel.cubin")
        with open(source, "w") as file:
            file.write(ptx)
        flags = ["-v"] if verbose else []
        done = subprocess.run(
            [ptxas, *flags, f"-arch={arch}", source, "-o", target], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise rejection("ptxas", "the generated PTX", done.stderr, externs or {})
        with open(target, "rb") as file:
            return file.read(), done.stdout + done.stderr


# how the tools say that a function is not declared (NVRTC and nvcc) or not defined (ptxas)
_MISSING = (
    re.compile(r'identifier "([A-Za-z_]\w*)" is undefined'),
    re.compile(r"Unresolved extern function '([A-Za-z_]\w*)'"),
)

_LINK_HINT = {
    "NVRTC": "`--emit cu` writes the call as it is: compile that file with a declaration of "
    "'{name}' and link its definition (nvcc -rdc=true)",
    "ptxas": "`--emit ptx --ptx-via llvm` declares '{name}' `.extern`: link that PTX with "
    "its definition (nvcc -rdc=true, or nvJitLink)",
}


def missing_functions(log: str) -> list[str]:
    """The functions a tool's log says are undeclared or unresolved, in order, once each."""
    names: list[str] = []
    for line in log.splitlines():
        for pattern in _MISSING:
            for name in pattern.findall(line):
                if name not in names:
                    names.append(name)
    return names


def rejection(
    tool: str, what: str, log: str, externs: Mapping[str, Span | None]
) -> DiagnosticError:
    """The error for `tool` rejecting `what`: at each extern call of the program that the
    tool cannot find, or, when the log names none of them, a tirc bug."""
    text = log.strip()
    blamed = [name for name in missing_functions(text) if name in externs]
    if not blamed:
        return DiagnosticError.at(None, f"{tool} rejected {what} (a tirc bug)", Note(text[:4000]))
    return DiagnosticError(
        [
            Diagnostic.error(
                f"the program calls '{name}', which is not a CUDA built-in and is not defined "
                "in the program",
                externs[name],
                Note(_line_naming(text, name, tool)),
                Note(_LINK_HINT[tool].format(name=name)),
            )
            for name in blamed
        ]
    )


def _line_naming(log: str, name: str, tool: str) -> str:
    """The log's line about `name`, said to come from `tool`."""
    line = next(
        (
            line.strip()
            for line in log.splitlines()
            if any(name in p.findall(line) for p in _MISSING)
        ),
        log[:400],
    )
    return line if line.startswith(tool) else f"{tool}: {line}"
