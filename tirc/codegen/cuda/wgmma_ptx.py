"""Hopper warpgroup MMA as CUDA C inline asm: wgmma.mma_async, its fence, commit and wait,
fence.proxy.async and setmaxnreg (tirc.ir.wgmma says what the arguments mean).

The shared operands' descriptors are packed where the call is (start address, LBO, SBO,
swizzle mode), and the accumulator's N / 2 floats of this thread are "+f" operands:

    T.ptx_wgmma("m64n8k16", "fp16", "fp16", "fp32", A.data, 0, 128, 256, 0, 0,
                B.data, 0, 128, 256, 0, 0, C.data, 0, 1)
    -> asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %6, 0;\\n"
                    "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, ..., %3}, %4, %5,
                    p, 1, 1, 0, 0;\\n}\\n" : "+f"(...), ... : "l"(desc_a), "l"(desc_b), "r"(1))

Only sm_90a has wgmma and setmaxnreg (fence.proxy.async: sm_90 and later): `check_arch`
refuses them, at the call, elsewhere.
"""

from __future__ import annotations

from tirc.codegen.cuda.expr import PRIMARY, Code, ExprPrinter
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir.function import IRModule
from tirc.ir.functor import Visitor
from tirc.ir.target import arch_number
from tirc.ir.wgmma import (
    A_POINTER,
    ARCHES,
    B_POINTER,
    C_POINTER,
    SWIZZLE_MODES,
    setmaxnreg_operands,
    wgmma_shape,
)

NAMES = ("ptx_wgmma", "ptx_wgmma_fence", "ptx_wgmma_commit_group", "ptx_wgmma_wait_group")
HOPPER_ONLY = (*NAMES, "ptx_fence_proxy_async", "ptx_setmaxnreg")


def _descriptor(p: ExprPrinter, call: E.Call, first: int, element: str) -> str:
    """The 64-bit descriptor of the operand whose arguments start at `first`."""
    pointer, offset, lbo, sbo, width = call.args[first : first + 5]
    assert isinstance(width, E.IntImm)
    shared = f"__cvta_generic_to_shared((({element}*)({p(pointer)})) + ({p(offset)}))"
    address = f"(unsigned long long){shared}"
    return (
        f"((({address}) & 0x3FFFFULL) >> 4 | "
        f"((unsigned long long)(({p(lbo)}) & 0x3FFFF) >> 4) << 16 | "
        f"((unsigned long long)(({p(sbo)}) & 0x3FFFF) >> 4) << 32 | "
        f"{SWIZZLE_MODES[width.value]}ULL << 62)"
    )


def _flag(call: E.Call, index: int, what: str) -> int:
    arg = call.args[index]
    if not isinstance(arg, E.IntImm) or arg.value not in (0, 1):
        raise DiagnosticError.at(call.span, f"T.{call.op}: {what} must be a constant 0 or 1")
    return arg.value


def print_wgmma(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    shape = wgmma_shape(call)
    trans_a = _flag(call, A_POINTER + 5, "trans_a")
    trans_b = _flag(call, B_POINTER + 5, "trans_b")
    element = "__half" if shape.a_type == "f16" else "__nv_bfloat16"
    local, offset = p(call.args[C_POINTER]), p(call.args[C_POINTER + 1])
    count = shape.registers
    registers = [f"((float*)({local}) + ({offset}))[{i}]" for i in range(count)]
    names = "{" + ", ".join(f"%{i}" for i in range(count)) + "}"
    instruction = f"wgmma.mma_async.sync.aligned.{shape.name}.f32.{shape.a_type}.{shape.b_type}"
    outputs = ", ".join(f'"+f"({register})' for register in registers)
    inputs = (
        f'"l"({_descriptor(p, call, A_POINTER, element)}), '
        f'"l"({_descriptor(p, call, B_POINTER, element)}), '
        f'"r"((int)({p(call.args[C_POINTER + 2])}))'
    )
    text = (
        f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{count + 2}, 0;\\n'
        f"{instruction} {names}, %{count}, %{count + 1}, p, 1, 1, {trans_a}, {trans_b};\\n}}\\n"
        f'" : {outputs} : {inputs} : "memory")'
    )
    return text, PRIMARY


def _instruction(text: str) -> Code:
    return f'asm volatile("{text};\\n" ::: "memory")', PRIMARY


def print_wait_group(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    count = call.args[0]
    if not isinstance(count, E.IntImm):
        raise DiagnosticError.at(
            call.span, "T.ptx_wgmma_wait_group: the group count must be a constant"
        )
    return _instruction(f"wgmma.wait_group.sync.aligned {count.value}")


def print_setmaxnreg(p: ExprPrinter, call: E.Call, lane: int | None) -> Code:
    direction, count = setmaxnreg_operands(call)
    return _instruction(f"setmaxnreg.{direction}.sync.aligned.u32 {count}")


HANDLERS = {
    "ptx_wgmma": print_wgmma,
    "ptx_wgmma_fence": lambda p, call, lane: _instruction("wgmma.fence.sync.aligned"),
    "ptx_wgmma_commit_group": lambda p, call, lane: _instruction("wgmma.commit_group.sync.aligned"),
    "ptx_wgmma_wait_group": print_wait_group,
    "ptx_fence_proxy_async": lambda p, call, lane: _instruction("fence.proxy.async.shared::cta"),
    "ptx_setmaxnreg": print_setmaxnreg,
}


class _HopperCalls(Visitor):
    """The calls of Hopper-only instructions, in program order."""

    def __init__(self) -> None:
        self.found: list[E.Call] = []

    def visit_Call(self, node: E.Call) -> None:
        if node.op in HOPPER_ONLY:
            self.found.append(node)
        self.generic_visit(node)


def _needs(call: E.Call, arch: str) -> str | None:
    """What `arch` lacks for `call`, or None."""
    if call.op == "ptx_fence_proxy_async":
        return None if arch_number(arch) >= 90 else "sm_90 or later"
    if call.op == "ptx_setmaxnreg":
        return None if arch in ARCHES else "sm_90a (Hopper's setmaxnreg)"
    return None if arch in ARCHES else "sm_90a (Hopper's wgmma)"


def check_arch(module: IRModule, arch: str) -> None:
    """A located error at the first Hopper instruction of `module` that `arch` lacks."""
    finder = _HopperCalls()
    for _, function in module.functions:
        finder.visit(function.body)
    for call in finder.found:
        needed = _needs(call, arch)
        if needed is not None:
            raise DiagnosticError.at(
                call.span,
                f"T.{call.op} needs {needed}, but the target architecture is {arch}",
                Note("compile with --target 'cuda -arch=sm_90a'"),
            )
