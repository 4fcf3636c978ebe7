"""The LLVM CPU backend: lowered tir to LLVM IR (llvmlite), optimized and emitted as IR,
assembly or objects with a plain C ABI (docs/abi.md)."""

from tirc.codegen.llvm.module import CompiledModule, compile_module
from tirc.codegen.llvm.target import CpuTarget, parse_target

__all__ = ["CompiledModule", "CpuTarget", "compile_module", "parse_target"]
