"""`run`: checks the arguments against the function's parameters, runs its compiled code on
them, and turns a run-time fault into a diagnostic at the offending node's span.

Buffer arguments are updated in place (a non-contiguous array through a copy written back).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from functools import lru_cache

import numpy as np

from tirc.diagnostics import DiagnosticError
from tirc.interp.lockstep.kernel import gpu_model as use_gpu_model
from tirc.interp.lockstep.kernel import launch_line
from tirc.interp.memory.storage import array_type, storage_from_array
from tirc.interp.semantics.values import round_to
from tirc.interp.threads.function import CompiledFunction, compile_python, execute
from tirc.ir.abi import parameter_buffers, returned_type
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.expr import IntImm, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.integer import int_range

Argument = np.ndarray | int | float | bool


def run(
    func: PrimFunc,
    args: Mapping[str, Argument],
    *,
    module: IRModule | None = None,
    gpu_model: str | None = None,
) -> object:
    """Runs func on args (keyed by parameter name, or a buffer parameter's buffer name),
    updating buffer arguments in place; raises DiagnosticError for errors in the program.
    Returns the value the function returns (`T.ret`; 0 of its return type where it ends
    without one), None for a function that returns none.

    gpu_model: how GPU kernels run: "threads" (each thread a coroutine; catches data races),
    "lockstep" (all threads as numpy lanes; fast, for race-free kernels) or "auto" (lockstep
    for large launches); None (the default) keeps the model a surrounding
    `tirc.interp.lockstep.kernel.gpu_model(...)` block chose, else "threads"."""
    compiled = compile_function(func, _function_name(func, module), module)
    inputs, write_backs = bind_arguments(func, args)
    with use_gpu_model(gpu_model) if gpu_model is not None else nullcontext():
        value = execute(compiled, inputs)
    for original, copy in write_backs:
        original[...] = copy.reshape(original.shape)
    return _returned(returned_type(func), value)


def _returned(result: DataType | None, value: object) -> object:
    """What a call of a function returning `result` gives: its `T.ret` value, or where it
    ended without one, 0 of its return type (as the compiled code returns), or None for a
    function that returns none."""
    if value is not None or result is None:
        return value
    return 0.0 if result.is_float else False if result.is_bool else 0


@lru_cache(maxsize=64)
def compile_function(
    func: PrimFunc, name: str = "main", module: IRModule | None = None, subroutine: bool = False
) -> CompiledFunction:
    """Python code for func (compiled once); raises DiagnosticError for what the interpreter
    cannot run. `module` holds the kernels a host function launches (split-host-device's)
    and the functions it calls (`subroutine`: func is one of those); a GPU launch runs in
    lockstep where the kernel can and the gpu_model asks for it."""
    return compile_python(func, name, module, _launcher, launch_line, subroutine)


def _launcher(kernel: PrimFunc, name: str, module: IRModule | None) -> Callable[..., object]:
    """A host's launch of a kernel function of its module, or a call of another function
    of it: the callee runs to the end."""
    compiled = compile_function(kernel, name, module, subroutine=True)
    result = returned_type(kernel)  # once: a subroutine may be called many times

    def launch(*args: object) -> object:
        value = _returned(result, execute(compiled, list(args)))
        return 0 if value is None else value  # a kernel's status, or a callee's value

    return launch


def _function_name(func: PrimFunc, module: IRModule | None) -> str:
    if module is not None:
        for name, candidate in module.functions:
            if candidate is func:
                return name
    return "main"


def bind_arguments(
    func: PrimFunc, args: Mapping[str, Argument]
) -> tuple[list[object], list[tuple[np.ndarray, np.ndarray]]]:
    """The compiled function's inputs, and (array, copy) pairs to write back after the run."""
    given = {**_shape_arguments(func, args), **args}
    inputs: list[object] = []
    write_backs: list[tuple[np.ndarray, np.ndarray]] = []
    missing: list[str] = []
    for param in func.params:
        buffer = func.buffer_of(param)
        key = _argument_key(param, buffer, given)
        if key is None:
            missing.append(param.name)
            inputs.append(None)
            continue
        value = given.pop(key)
        if buffer is None and not param.dtype.is_handle:
            inputs.append(_scalar(param, value))
            continue
        array = _array(param, buffer, value)
        if buffer is None:
            inputs.append(
                storage_from_array(param.name, np.ascontiguousarray(array), _element(array, param))
            )
            continue
        contiguous = np.ascontiguousarray(array)
        if contiguous is not array:
            write_backs.append((array, contiguous))
        storage = storage_from_array(buffer.name, contiguous, buffer.dtype)
        strides = tuple(s // contiguous.itemsize for s in contiguous.strides)
        inputs.append((storage, tuple(contiguous.shape), strides))
    if missing:
        raise DiagnosticError.at(func.span, f"no argument given for {', '.join(missing)}")
    if given:
        names = ", ".join(sorted(given))
        raise DiagnosticError.at(
            func.span, f"unknown argument(s) {names}: not parameters of the function"
        )
    return inputs, write_backs


def _shape_arguments(func: PrimFunc, args: Mapping[str, Argument]) -> dict[str, Argument]:
    """Shape parameters (make-c-abi's `n` of a pointer declared `(n,)`) the arrays tell."""
    if func.buffer_map:
        return {}
    params = set(func.params)
    found: dict[str, Argument] = {}
    for param, buffer in parameter_buffers(func).items():
        value = args.get(param.name)
        if not isinstance(value, np.ndarray):
            continue
        for extent, actual in zip(buffer.shape, value.shape, strict=False):
            if isinstance(extent, Var) and extent in params:
                found.setdefault(extent.name, int(actual))
    return found


def _argument_key(param: Var, buffer: Buffer | None, given: Mapping[str, object]) -> str | None:
    if param.name in given:
        return param.name
    if buffer is not None and buffer.name in given:
        return buffer.name
    return None


def _scalar(param: Var, value: Argument) -> object:
    dtype = param.dtype
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise DiagnosticError.at(param.span, f"argument {param.name} must be a scalar")
        value = value.item()
    if dtype.is_bool:
        return bool(value)
    if dtype.is_integer:
        if isinstance(value, float) and not value.is_integer():
            raise DiagnosticError.at(param.span, f"argument {param.name} must be an integer")
        number = int(value)
        low, high = int_range(dtype)
        if not low <= number <= high:
            raise DiagnosticError.at(
                param.span, f"argument {param.name} = {number} does not fit {dtype}"
            )
        return number
    if dtype.is_float:
        return round_to(float(value), dtype)
    raise DiagnosticError.at(
        param.span, f"cannot pass a value for parameter {param.name} of type {dtype}"
    )


def _array(param: Var, buffer: Buffer | None, value: Argument) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise DiagnosticError.at(param.span, f"argument {param.name} must be an array")
    if buffer is None:
        return value
    want = array_type(buffer.dtype)
    if value.dtype != want:
        raise DiagnosticError.at(
            buffer.span or param.span,
            f"argument {param.name} has dtype {value.dtype}, "
            f"but buffer {buffer.name} holds {buffer.dtype}",
        )
    lanes = buffer.dtype.lanes
    shape = tuple(value.shape)
    expected_rank = len(buffer.shape) + (1 if lanes > 1 else 0)
    if len(shape) != expected_rank:
        raise DiagnosticError.at(
            buffer.span or param.span,
            f"argument {param.name} has shape {shape}, but buffer {buffer.name} has "
            f"{len(buffer.shape)} dimensions",
        )
    for dim, extent in enumerate(buffer.shape):
        if isinstance(extent, IntImm) and extent.value != shape[dim]:
            wanted = tuple(e.value if isinstance(e, IntImm) else "?" for e in buffer.shape)
            raise DiagnosticError.at(
                buffer.span or param.span,
                f"argument {param.name} has shape {shape}, "
                f"but buffer {buffer.name} has shape {wanted}",
            )
    return value


def _element(array: np.ndarray, param: Var) -> DataType:
    if param.pointer is not None and not param.pointer.element.is_void:  # void: for its scope
        return param.pointer.element
    return parse_dtype(str(array.dtype)) if array.dtype.kind in "iufb" else parse_dtype("uint8")
