"""A lowered IRModule to an LLVM module, optimized with LLVM's new pass manager, and the
artifacts made from it: textual IR, assembly, an object file. Same input, same bytes."""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from tirc.codegen.header import exported_functions
from tirc.codegen.llvm.function import emit_function
from tirc.codegen.llvm.target import target_machine, vector_registers
from tirc.codegen.llvm.tvm_ffi import add_tvm_ffi_wrappers
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir.abi import returned_type
from tirc.ir.expr import Call, PrimExpr, StringImm, subroutine_name
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.target import Target
from tirc.transform.dialects import require_dialect
from tirc.transform.pass_base import Dialect


@dataclass
class CompiledModule:
    """An optimized LLVM module and the target machine that generates its code."""

    module: llvm.ModuleRef
    machine: llvm.TargetMachine
    symbols: list[str]  # the exported functions

    def llvm_ir(self) -> str:
        return str(self.module)

    def assembly(self) -> str:
        return str(self.machine.emit_assembly(self.module))

    def object_code(self) -> bytes:
        return bytes(self.machine.emit_object(self.module))


def build_ir(
    module: IRModule, target: Target, machine: llvm.TargetMachine, prefix: str = ""
) -> tuple[ir.Module, list[str]]:
    """The unoptimized LLVM module of a lowered `module`; private functions stay internal.
    The module must be what the cpu pipeline leaves (tir-c-abi): this backend runs no pass."""
    require_dialect(
        module,
        Dialect.C_ABI,
        "the CPU backend reads a module lowered for the CPU",
        Note("lower it with the cpu pipeline, which ends with make-c-abi"),
    )
    result = ir.Module(name="tirc")
    result.triple = target.triple
    result.data_layout = str(machine.target_data)
    exported = dict(exported_functions(module, prefix))
    symbols = []
    registers = vector_registers(target)
    symbol_of = {
        name: next((s for s, n in exported.items() if n == name), prefix + name)
        for name, _ in module.functions
    }
    order = _callees_first(module)
    results = {name: returned_type(func) for name, func in module.functions}
    called = {callee for _, func in order for callee in _callees(func)}
    for name, func in order:
        symbol = symbol_of[name]
        emit_function(
            result,
            symbol,
            func,
            symbol in exported,
            target.cache_bytes,
            registers,
            symbol_of,
            assume_aligned=name not in called,
            results=results,
        )
        if symbol in exported:
            symbols.append(symbol)
    return result, sorted(symbols, key=list(symbol_of.values()).index)


def _callees(func: PrimFunc) -> list[str]:
    """The functions that `func`'s subroutine calls call, and the names its extern calls
    call (split-host-device's launch of a CPU "kernel" of the module)."""
    callees: list[str] = []

    def collect(node: Node) -> None:
        if isinstance(node, Call) and (callee := subroutine_name(node)) is not None:
            callees.append(callee)
        elif isinstance(node, Call) and node.op == "call_extern" and node.args:
            name = node.args[0]
            if isinstance(name, StringImm):
                callees.append(name.value)

    walk(func.body, collect)
    return callees


def _callees_first(module: IRModule) -> list[tuple[str, PrimFunc]]:
    """The module's functions, each after those its subroutine calls call (so that a call
    finds its callee emitted); a function in a cycle of calls comes where it is."""
    order: list[tuple[str, PrimFunc]] = []
    placed: set[str] = set()

    def place(name: str, visiting: frozenset[str]) -> None:
        if name in placed or name in visiting or name not in module:
            return
        for callee in _callees(module[name]):
            place(callee, visiting | {name})
        placed.add(name)
        order.append((name, module[name]))

    for name, _ in module.functions:
        place(name, frozenset())
    return order


def compile_module(
    module: IRModule, target: Target, opt_level: int = 3, prefix: str = "", abi: str = "c"
) -> CompiledModule:
    """`abi="tvm-ffi"` adds a packed function `__tvm_ffi_<symbol>` beside each exported one
    (tirc.codegen.llvm.tvm_ffi)."""
    machine = target_machine(target, opt_level)
    text, symbols = build_ir(module, target, machine, prefix)
    if abi == "tvm-ffi":
        symbols += add_tvm_ffi_wrappers(text, module, exported_functions(module, prefix))
    try:
        parsed = llvm.parse_assembly(str(text))
        parsed.verify()
    except RuntimeError as error:
        rejected = _rejected_intrinsic_call(module, str(error))
        if rejected is None:
            raise
        raise rejected from None
    optimize(parsed, machine, opt_level)
    return CompiledModule(parsed, machine, symbols)


def _rejected_intrinsic_call(module: IRModule, message: str) -> DiagnosticError | None:
    """LLVM's rejection of a `T.call_llvm_(pure_)intrin` the program makes (its operands do
    not fit the intrinsic), located at the call; None where LLVM names no intrinsic called so.
    The program chose the intrinsic and its operands, so this is its error, not tirc's."""
    calls: list[tuple[Call, str]] = []

    def collect(node: Node) -> None:
        if isinstance(node, Call) and node.op in ("call_llvm_intrin", "call_llvm_pure_intrin"):
            name = node.args[0] if node.args else None
            if isinstance(name, StringImm) and f"@{name.value}" in message.split():
                calls.append((node, name.value))

    for _, func in module.functions:
        walk(func.body, collect)
    if not calls:
        return None
    call, name = calls[0]
    reason = message.strip().splitlines()[0].rstrip("!")
    operands = ", ".join(str(arg.dtype) for arg in call.args[1:] if isinstance(arg, PrimExpr))
    return DiagnosticError.at(
        call.span,
        f"LLVM rejects this call of {name}: {reason}",
        Note(f"its operands are ({operands}) and its result {call.dtype}"),
    )


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine, opt_level: int) -> None:
    """The default `-O<level>` pipeline of the new pass manager, vectorizers on from -O2."""
    options = llvm.create_pipeline_tuning_options(speed_level=min(max(opt_level, 0), 3))
    options.loop_vectorization = opt_level >= 2
    options.slp_vectorization = opt_level >= 2
    options.loop_unrolling = opt_level >= 2
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
