"""NVPTX through llvmlite: LLVM IR with nvvm intrinsics from lowered tir, and PTX from it."""

from tirc.codegen.nvptx.module import emit_nvvm_ir, emit_ptx
