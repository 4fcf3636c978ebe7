"""What a wmma fragment buffer is on the NVPTX path: its role, geometry, layout, and the
registers NVVM's `llvm.nvvm.wmma.*` intrinsics pass it in (the PTX ISA's wmma fragment sizes).
Only the combinations below exist in LLVM: anything else is refused, located, before LLVM sees
it (LLVM takes an unknown intrinsic name for an external function, and aborts the process on
one the architecture lacks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import llvmlite.ir as ir

from tirc.analysis.wmma_fragments import Shape, fragment_shapes
from tirc.codegen.cuda.wmma import check_fragment_accesses
from tirc.codegen.nvptx import types
from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.dtype import DataType
from tirc.ir.functor import walk
from tirc.ir.node import Node

ROLES = {"wmma.matrix_a": "a", "wmma.matrix_b": "b", "wmma.accumulator": "c"}
# the PTX type of a fragment's elements, by role and dtype
_PTX_TYPES = {
    "a": {"float16": "f16", "bfloat16": "bf16", "int8": "s8", "uint8": "u8", "float64": "f64"},
    "c": {"float16": "f16", "float32": "f32", "int32": "s32", "float64": "f64"},
}
_PTX_TYPES["b"] = _PTX_TYPES["a"]
_HALF2 = ir.VectorType(ir.HalfType(), 2)
_WORDS: dict[str, ir.Type] = {
    "f16": _HALF2,
    "f32": ir.FloatType(),
    "f64": ir.DoubleType(),
    "s32": types.I32,
    "s8": types.I32,
    "u8": types.I32,
    "bf16": types.I32,
}
_SIXTEEN = ("m16n16k16", "m32n8k16", "m8n32k16")


def _counts(a: tuple[int, int, int], b: tuple[int, int, int]) -> dict[str, dict[str, int]]:
    return {shape: {"a": na, "b": nb} for shape, na, nb in zip(_SIXTEEN, a, b, strict=True)}


# registers per fragment, by geometry, PTX type and role (the PTX ISA's wmma fragment sizes)
_REGISTERS: dict[str, dict[str, dict[str, int]]] = {
    "f16": {shape: {"a": 8, "b": 8, "c": 4} for shape in _SIXTEEN},
    "f32": {shape: {"c": 8} for shape in _SIXTEEN},
    "s8": _counts((2, 4, 1), (2, 1, 4)),
    "u8": _counts((2, 4, 1), (2, 1, 4)),
    "s32": {shape: {"c": 8} for shape in _SIXTEEN},
    "bf16": _counts((4, 8, 2), (4, 2, 8)),
    "f64": {"m8n8k4": {"a": 1, "b": 1, "c": 2}},
}
# (lowest sm, lowest PTX ISA) of each PTX type's wmma (f16's other geometries: PTX ISA 6.1)
_REQUIRES: dict[str, tuple[int, int]] = {
    "f16": (70, 60),
    "f32": (70, 60),
    "s8": (72, 63),
    "u8": (72, 63),
    "s32": (72, 63),
    "bf16": (80, 70),
    "f64": (80, 70),
}
# the accumulator types of each input type
ACCUMULATORS = {
    "f16": ("f16", "f32"),
    "bf16": ("f32",),
    "s8": ("s32",),
    "u8": ("s32",),
    "f64": ("f64",),
}


@dataclass(frozen=True)
class Fragment:
    """One fragment buffer: its fragments' role, geometry, layout and registers."""

    role: str  # "a", "b" or "c" (matrix_a, matrix_b, accumulator)
    geometry: str  # "m16n16k16"
    layout: str  # "row" or "col": how a and b fragments were loaded
    dtype: DataType
    ptx: str  # the element type in intrinsic names: f16, f32, s32, s8, u8, bf16, f64
    registers: int  # per fragment

    @property
    def word(self) -> ir.Type:
        return _WORDS[self.ptx]

    def requires(self) -> tuple[int, int]:
        sm, ptx = _REQUIRES[self.ptx]
        if self.ptx in ("f16", "f32") and self.geometry != "m16n16k16":
            ptx = 61
        return sm, ptx


def fragment_of(node: S.AllocBuffer, shapes: dict[E.Var, Shape]) -> Fragment:
    """The fragment that `node` allocates, its shape from `shapes` (`fragment_shapes`), or a
    located error where LLVM has no wmma for it."""
    buffer = node.buffer
    role = ROLES[buffer.scope]
    shape = shapes.get(buffer.data)
    if shape is None:
        raise DiagnosticError.at(
            node.span, f"--ptx-via llvm: no wmma call says the shape of fragment {buffer.name}"
        )
    m, n, k, layout = shape
    geometry = f"m{m}n{n}k{k}"
    ptx = _PTX_TYPES[role].get(str(buffer.dtype))
    count = _REGISTERS.get(ptx or "", {}).get(geometry, {}).get(role)
    if ptx is None or count is None:
        raise DiagnosticError.at(
            node.span,
            f"--ptx-via llvm: no wmma {geometry} {buffer.scope} fragment of {buffer.dtype}",
            Note(
                "wmma takes float16 (float16 or float32 accumulators) and int8/uint8 (int32) in "
                "m16n16k16, m32n8k16 and m8n32k16, bfloat16 (float32) in those too, float64 "
                "in m8n8k4"
            ),
        )
    major = "col" if layout == "col_major" else "row"
    return Fragment(role, geometry, major, buffer.dtype, ptx, count)


def check_wmma_arch(body: S.Stmt, arch: str, ptx: int) -> None:
    """A located error at each fragment whose wmma `arch` with PTX ISA `ptx` (60 for 6.0, what
    tirc gives that architecture) lacks: LLVM would abort the process instead."""
    found = re.match(r"sm_(\d+)", arch)
    if found is None:
        return
    sm = int(found.group(1))
    shapes = fragment_shapes(body)
    problems: list[Diagnostic] = []
    allocations: list[S.AllocBuffer] = []

    def visit(node: Node) -> None:
        if isinstance(node, S.AllocBuffer) and node.buffer.scope in ROLES:
            allocations.append(node)

    walk(body, visit)
    if allocations:
        check_fragment_accesses(body)  # an error of the program's comes first
    for node in allocations:
        fragment = fragment_of(node, shapes)
        need_sm, need_ptx = fragment.requires()
        if sm < need_sm or ptx < need_ptx:
            problems.append(
                Diagnostic.error(
                    f"--ptx-via llvm: wmma {fragment.geometry} on {fragment.dtype} needs "
                    f"sm_{need_sm} and PTX ISA {need_ptx // 10}.{need_ptx % 10}; {arch} "
                    f"has PTX ISA {ptx // 10}.{ptx % 10} here",
                    node.span,
                )
            )
    if problems:
        raise DiagnosticError(problems)


def dimensions(geometry: str) -> tuple[int, int, int]:
    """(m, n, k) of "m16n16k16"."""
    m, n, k = re.findall(r"\d+", geometry)
    return int(m), int(n), int(k)
