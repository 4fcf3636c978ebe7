"""Compiled CPU code loaded in-process with LLVM's ORC JIT and called through ctypes.

The object file is the one `tirc compile --emit obj` writes, linked against this process
(libm) and libgomp; ORC reports a symbol nothing defines, where MCJIT would crash on the call.
Arguments are numpy arrays, copied to 64-byte-aligned memory when they are not already so
aligned (the ABI promises the kernel its buffers' alignment), and copied back after the call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from tirc.codegen.abi import AbiParam, ParamKind, function_abi
from tirc.codegen.llvm import CompiledModule
from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir.abi import EXTERN_CALLS, returned_type
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node

_LIBRARY_NAMES = itertools.count()
_C_TYPES: dict[str, type[ctypes._SimpleCData[Any]]] = {
    "handle": ctypes.c_void_p,
    "bool": ctypes.c_bool,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


@cache
def load_openmp() -> None:
    """Makes libgomp's symbols visible to JIT-linked code."""
    name = ctypes.util.find_library("gomp")
    if name is None:
        raise DiagnosticError.at(None, "cannot find libgomp, which parallel loops run on")
    ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    llvm.load_library_permanently(name)


@dataclass
class JitFunction:
    symbol: str
    func: PrimFunc
    abi: list[AbiParam]
    entry: Callable[..., int | float]
    result: DataType | None = None  # the type of the value it returns; None: a status

    def __call__(self, args: Mapping[str, object]) -> int | float:
        """Calls the function with `args` keyed by parameter name (buffers as numpy arrays,
        updated in place); shape variables come from the arrays' shapes. Returns the status,
        or the value of a function that returns one (`result`)."""
        sizes = self.shape_values(args)
        call_args: list[object] = []
        copies: list[tuple[np.ndarray, np.ndarray]] = []
        for param in self.abi:
            if param.kind is ParamKind.BUFFER:
                array = args[param.name]
                assert isinstance(array, np.ndarray)
                aligned = aligned_array(array)
                if aligned is not array:
                    copies.append((array, aligned))
                call_args.append(aligned.ctypes.data)
            elif param.kind is ParamKind.SHAPE:
                call_args.append(sizes[param.var])
            elif param.kind is ParamKind.HANDLE:
                value = args[param.name]
                call_args.append(value.ctypes.data if isinstance(value, np.ndarray) else value)
            else:
                value = args[param.name]
                call_args.append(value.item() if isinstance(value, np.ndarray) else value)
        returned = self.entry(*call_args)
        for original, aligned in copies:
            np.copyto(original, aligned.reshape(original.shape))
        return returned

    def shape_values(self, args: Mapping[str, object]) -> dict[Var, int]:
        sizes: dict[Var, int] = {}
        for param in self.abi:
            if param.kind is not ParamKind.BUFFER or param.buffer is None:
                continue
            array = args[param.name]
            assert isinstance(array, np.ndarray)
            for extent, actual in zip(param.buffer.shape, array.shape, strict=False):
                if isinstance(extent, Var):
                    sizes.setdefault(extent, int(actual))
            # The call passes a dense copy's first element: its strides are the dense ones and
            # its offset is 0, whatever variables the buffer declares them with.
            stride = 1
            for extent, actual in reversed(
                list(zip(param.buffer.strides, array.shape, strict=False))
            ):
                if isinstance(extent, Var):
                    sizes.setdefault(extent, stride)
                stride *= int(actual)
            if isinstance(param.buffer.elem_offset, Var):
                sizes.setdefault(param.buffer.elem_offset, 0)
        for param in self.abi:
            if param.kind is ParamKind.SHAPE and param.var not in sizes:
                given = args.get(param.name)
                if given is None:
                    raise DiagnosticError.at(
                        None, f"cannot tell the value of shape variable {param.name}"
                    )
                if not isinstance(given, (int, np.integer)) or isinstance(given, bool):
                    raise DiagnosticError.at(
                        None,
                        f"shape variable {param.name} must be an integer, "
                        f"got {type(given).__name__}",
                    )
                sizes[param.var] = int(given)
        return sizes


def check_externs_defined(module: IRModule) -> None:
    """A located error at each `T.call_extern` (or `T.call_pure_extern`) of a function that
    neither the module nor this process (the C library, libm, libgomp) defines, naming it:
    ORC's link would fail naming only the function that calls it. An object file may call
    anything (its user links the library), so only running checks this."""
    defined = set(module.names()) | {
        str(func.attrs.get("global_symbol")) for _, func in module.functions
    }
    load_openmp()
    process = ctypes.CDLL(None)
    errors: list[Diagnostic] = []
    seen: set[str] = set()

    def visit(node: Node) -> None:
        if not (isinstance(node, E.Call) and node.op in EXTERN_CALLS and node.args):
            return
        name = node.args[0]
        symbol = name.value if isinstance(name, E.StringImm) else None
        if symbol is None or symbol in defined or symbol in seen or _in_process(process, symbol):
            return
        seen.add(symbol)
        errors.append(
            Diagnostic.error(
                f"T.{node.op} calls '{symbol}', which nothing in this process defines, so the "
                "compiled code cannot run here",
                node.span,
                Note(
                    "tirc run links the C library, libm and libgomp; `tirc compile` writes an "
                    f"object that calls '{symbol}', to link with the library that defines it"
                ),
            )
        )

    for _, func in module.functions:
        walk(func.body, visit)
    if errors:
        raise DiagnosticError(errors)


def _in_process(process: ctypes.CDLL, symbol: str) -> bool:
    try:
        getattr(process, symbol)
    except AttributeError:
        return False
    return True


def aligned_array(array: np.ndarray, alignment: int = 64) -> np.ndarray:
    """`array` itself when dense and aligned, else an aligned dense copy."""
    if array.flags.c_contiguous and array.ctypes.data % alignment == 0:
        return array
    return aligned_copy(array, alignment)


def aligned_copy(array: np.ndarray, alignment: int = 64) -> np.ndarray:
    """A dense copy of `array` at an `alignment`-byte boundary: arguments made once this way
    are called with no copy per call (numpy's own large arrays are 16-byte aligned)."""
    raw = np.empty(array.nbytes + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    copy = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    np.copyto(copy, array)
    return copy


class JitModule:
    """The exported functions of a compiled module, callable while this object lives."""

    def __init__(self, compiled: CompiledModule, functions: Mapping[str, PrimFunc]):
        load_openmp()
        self.jit = llvm.create_lljit_compiler(compiled.machine)
        builder = llvm.JITLibraryBuilder().add_object_img(compiled.object_code())
        builder.add_current_process()
        for symbol in functions:
            builder.export_symbol(symbol)
        try:
            self.tracker = builder.link(self.jit, f"tirc{next(_LIBRARY_NAMES)}")
        except RuntimeError as error:
            raise DiagnosticError.at(None, f"the JIT could not link the code: {error}") from None
        self.functions: dict[str, JitFunction] = {}
        for symbol, func in functions.items():
            abi = function_abi(func)
            result = returned_type(func)
            returns = ctypes.c_int32 if result is None else _C_TYPES[str(result)]
            prototype = ctypes.CFUNCTYPE(returns, *[_C_TYPES[str(p.abi_dtype)] for p in abi])
            entry = prototype(self.tracker[symbol])
            self.functions[symbol] = JitFunction(symbol, func, abi, entry, result)

    def __getitem__(self, symbol: str) -> JitFunction:
        return self.functions[symbol]
