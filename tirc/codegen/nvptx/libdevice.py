"""Finding libdevice (NVIDIA's math library as LLVM bitcode), for math PTX has no instruction for.

It ships with the CUDA toolkit (nvvm/libdevice/libdevice.10.bc) and in the nvidia-cuda-nvcc
wheel; tirc reads whichever it finds first.
"""

from __future__ import annotations

import os
import shutil

LIBDEVICE = os.path.join("nvvm", "libdevice", "libdevice.10.bc")


def find_libdevice() -> str | None:
    roots = [os.environ[key] for key in ("CUDA_HOME", "CUDA_PATH") if key in os.environ]
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    roots.append("/usr/local/cuda")
    try:
        # deferred: an optional dependency (the pip wheels: nvidia/cuda_nvcc/nvvm/libdevice)
        import nvidia

        roots += [os.path.join(root, "cuda_nvcc") for root in nvidia.__path__]
    except ImportError:
        pass
    for root in roots:
        path = os.path.join(root, LIBDEVICE)
        if os.path.isfile(path):
            return path
    return None
