"""The LLVM CPU backend: lowered tir to LLVM IR (llvmlite), optimized and emitted as IR,
assembly or objects with a plain C ABI (docs/abi.md)."""

from tirc.codegen.llvm.module import CompiledModule, compile_module
from tirc.codegen.llvm.target import resolve_cpu

__all__ = ["CompiledModule", "compile_module", "resolve_cpu"]
