"""CUDA C from lowered tir: `extern "C" __global__` kernels and C-ABI host launchers."""

from tirc.codegen.cuda.module import emit_cuda, require_split
