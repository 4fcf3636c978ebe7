"""A lowered module as NVVM IR and PTX through llvmlite's NVPTX target, no CUDA packages needed.

Target triple nvptx64-nvidia-cuda, cpu sm_XX with the PTX ISA version that architecture needs
(+ptx80 for sm_90); kernels use the ptx_kernel calling convention. Where the code calls
libdevice, libdevice is linked in and what is unused is dropped again.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import llvmlite.ir as ir

from tirc.codegen.cuda.cluster import check_cluster_module
from tirc.codegen.cuda.kernels import module_kernels, require_split
from tirc.codegen.cuda.tma import check_tma_arch
from tirc.codegen.cuda.wgmma_ptx import check_arch as check_wgmma_arch
from tirc.codegen.nvptx.fragment import check_wmma_arch
from tirc.codegen.nvptx.kernel import KernelBuilder
from tirc.codegen.nvptx.libdevice import find_libdevice
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir.function import IRModule

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
# the lowest PTX ISA version each architecture accepts (and ptxas 13.0 reads)
PTX_VERSIONS = {
    "sm_70": "ptx60",
    "sm_75": "ptx63",
    "sm_80": "ptx70",
    "sm_86": "ptx71",
    "sm_89": "ptx78",
    "sm_90": "ptx80",
    "sm_90a": "ptx80",
    "sm_100": "ptx86",
    "sm_120": "ptx87",
}


def build_module(module: IRModule) -> tuple[ir.Module, bool]:
    """The LLVM module of every kernel of `module`, and whether it calls libdevice."""
    llvm_module = ir.Module(name="tirc")
    llvm_module.triple = TRIPLE
    llvm_module.data_layout = DATA_LAYOUT
    uses_libdevice = False
    module = require_split(module)
    for kernel in module_kernels(module):
        noalias = bool(module[kernel.name].attrs.get("tirx.noalias", False))
        builder = KernelBuilder(llvm_module, kernel, noalias=noalias)
        builder.build()
        uses_libdevice |= builder.v.uses_libdevice
    return llvm_module, uses_libdevice


def emit_nvvm_ir(module: IRModule, *, arch: str = "sm_90") -> str:
    """The LLVM IR (before optimization) of a module lowered for cuda."""
    check_arch(module, arch)
    llvm_module, _ = build_module(module)
    return str(llvm_module)


def check_arch(module: IRModule, arch: str) -> None:
    """The CUDA C backend's located error at the first Hopper instruction `arch` lacks
    (wgmma and setmaxnreg: sm_90a; mbarrier transaction counts, TMA, fence.proxy.async,
    clusters: sm_90), and at each wmma fragment the architecture lacks."""
    check_wgmma_arch(module, arch)
    check_tma_arch(module, arch)
    check_cluster_module(module, arch)
    for kernel in module_kernels(require_split(module)):
        check_wmma_arch(kernel.body, arch, int(PTX_VERSIONS.get(arch, "ptx0")[3:]))


def emit_ptx(module: IRModule, *, arch: str = "sm_90", opt_level: int = 3) -> str:
    """PTX for `arch` of a module lowered for cuda, optimized at `opt_level` (0-3; 0 runs no
    LLVM passes, 2 and 3 its O2 pipeline)."""
    check_arch(module, arch)
    llvm_module, uses_libdevice = build_module(module)
    _initialize()
    level = min(max(opt_level, 0), 3)
    machine = llvm.Target.from_triple(TRIPLE).create_target_machine(
        cpu=arch, features=f"+{PTX_VERSIONS[arch]}", opt=level, reloc="pic", codemodel="default"
    )
    parsed = llvm.parse_assembly(str(llvm_module))
    if uses_libdevice:
        _link_libdevice(parsed)
    parsed.verify()
    _optimize(parsed, machine, min(level, 2))
    return machine.emit_assembly(parsed)


def _initialize() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def _link_libdevice(parsed: llvm.ModuleRef) -> None:
    path = find_libdevice()
    if path is None:
        raise DiagnosticError.at(
            None,
            "--ptx-via llvm needs libdevice for this kernel's math functions",
            Note(
                "set CUDA_HOME to a CUDA toolkit, pip install nvidia-cuda-nvcc, "
                "or use --ptx-via nvrtc"
            ),
        )
    with open(path, "rb") as file:
        library = llvm.parse_bitcode(file.read())
    library.triple = TRIPLE
    library.data_layout = DATA_LAYOUT
    kernels = {f.name for f in parsed.functions if not f.is_declaration}
    parsed.link_in(library)
    # libdevice's functions are ours alone: internal, so that unused ones can be dropped
    for function in parsed.functions:
        if not function.is_declaration and function.name not in kernels:
            function.linkage = llvm.Linkage.internal


def _optimize(parsed: llvm.ModuleRef, machine: llvm.TargetMachine, speed_level: int) -> None:
    options = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    builder = llvm.create_pass_builder(machine, options)
    manager = builder.getModulePassManager()
    manager.run(parsed, builder)
