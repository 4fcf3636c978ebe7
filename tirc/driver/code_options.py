"""What `tirc compile` hands a backend besides the module and the target."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodeOptions:
    """What a backend takes besides the module and the target: the kind to emit, LLVM's
    optimization level, the pipeline file (None: the target's), the symbols' prefix, how
    CUDA's PTX is made (None: NVRTC where it is installed), the name of the source for
    messages and comments, the ABI, and whether to report each CUDA kernel's resources
    (ptxas's registers and spills, shared-memory bank conflicts) on stderr."""

    emit: str
    opt_level: int = 3
    pipeline: str | None = None
    prefix: str = ""
    ptx_via: str | None = None
    source_name: str = ""
    abi: str = "c"
    resources: bool = False
