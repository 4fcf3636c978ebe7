"""Positional arguments of a call from Python (tirc.build's functions), checked against the
function's packed signature (tirc.codegen.ffi_signature) as the tvm-ffi wrapper checks them,
with the same messages: numpy arrays or DLPack tensors for buffers, Python numbers for
scalars, the shape arguments optional. Unlike the wrapper, an array that is strided or not
aligned is accepted for a dense buffer: it is copied.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from tirc.analysis.arith import Analyzer
from tirc.codegen.abi import ParamKind
from tirc.codegen.ffi_signature import (
    DEVICE_NAMES,
    DL_CPU,
    FfiSignature,
    TensorParam,
    alignment_message,
    argument_message,
    device_message,
    dimension_message,
    dtype_message,
    is_shape_argument,
    origin,
    rank_message,
)
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.substitute import substitute
from tirc.runtime.jit import JitFunction, aligned_array


def call_jit(function: JitFunction, sig: FfiSignature, args: Sequence[object]) -> int:
    """Calls the JIT-compiled `function` with `args` checked by `bind_arguments`; returns its
    status. A dense buffer's array that is strided or misaligned is passed as an aligned
    dense copy, copied back after the call; a buffer whose strides or offset the program
    declares is passed as the array itself (its strides are the program's to read), which
    must then be aligned."""
    values = bind_arguments(sig, args)
    call_args: list[object] = []
    copies: list[tuple[np.ndarray, np.ndarray]] = []
    for index, param in enumerate(function.abi):
        value = values[param.name]
        if param.kind is ParamKind.BUFFER:
            assert isinstance(value, np.ndarray)
            tensor = sig.tensors[index]
            if _is_dense(tensor):
                passed = aligned_array(value)
                if passed is not value:
                    copies.append((value, passed))
            else:
                passed = value
                if tensor.alignment > tensor.element_bytes and value.ctypes.data % tensor.alignment:
                    raise ValueError(
                        _format(alignment_message(sig, tensor), hex(value.ctypes.data))
                    )
            call_args.append(passed.ctypes.data)
        elif param.kind is ParamKind.HANDLE and isinstance(value, np.ndarray):
            call_args.append(value.ctypes.data)
        else:
            call_args.append(value)
    status = int(function.entry(*call_args))
    for original, passed in copies:
        np.copyto(original, passed.reshape(original.shape))
    return status


def _is_dense(tensor: TensorParam) -> bool:
    return tensor.offset is None and all(d.expected is None for d in tensor.strides)


def bind_arguments(sig: FfiSignature, args: Sequence[object]) -> dict[str, object]:
    """The arguments by C parameter name (arrays as numpy arrays sharing the caller's
    memory, shape parameters as ints). Raises TypeError or ValueError as the tvm-ffi wrapper
    would, naming the parameter."""
    full = len(args) == sig.full_count
    if not full and not (sig.short_form and len(args) == sig.short_count):
        raise TypeError(_format(sig.count_message(), len(args)))
    values: dict[str, object] = {}
    given = iter(args)
    arrays: dict[int, np.ndarray] = {}
    for index, param in enumerate(sig.params):
        if param.kind is ParamKind.SHAPE and not full:
            continue
        value = next(given)
        if param.kind is ParamKind.BUFFER:
            arrays[index] = values[param.name] = _array(sig, index, value)
        elif param.kind is ParamKind.HANDLE:
            values[param.name] = value
        elif param.abi_dtype.is_float:
            values[param.name] = _number(sig, index, value, (int, float, np.number), "a number")
        else:
            values[param.name] = _number(sig, index, value, (int, np.integer), "an int")
    shapes = _bind(sig, arrays, values, full)
    for index, array in arrays.items():
        _check(sig, sig.tensors[index], array, shapes, full)
    for param in sig.params:
        if param.kind is ParamKind.SHAPE:
            values[param.name] = shapes[param.var]
    return values


def _array(sig: FfiSignature, index: int, value: object) -> np.ndarray:
    tensor = sig.tensors[index]
    if isinstance(value, np.ndarray):
        array = value
    elif hasattr(value, "__dlpack__"):
        device = getattr(value, "__dlpack_device__", lambda: (DL_CPU, 0))()[0]
        if device != DL_CPU:
            name = DEVICE_NAMES.get(device, f"device type {device}")
            message = device_message(sig, tensor, "the CPU")
            raise ValueError(_format(message, name) + ' (build with target="cuda" for it)')
        try:
            array = np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError) as error:
            message = f"{sig.name}: {tensor.name} cannot be read as an array: {error}"
            raise ValueError(message) from None
    else:
        raise TypeError(
            _format(argument_message(sig, index, tensor.param, "a tensor"), _type_name(value))
        )
    if array.ndim != len(tensor.shape):
        raise ValueError(_format(rank_message(sig, tensor), array.ndim))
    if array.dtype.name != str(tensor.param.dtype):
        message = dtype_message(sig, tensor, lanes=False)
        raise TypeError(_format(message, *_dtype_parts(array.dtype)))
    return array


def _number(
    sig: FfiSignature, index: int, value: object, kinds: tuple[type, ...], what: str
) -> object:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, kinds) and not isinstance(value, bool):
        raise TypeError(
            _format(argument_message(sig, index, sig.params[index], what), _type_name(value))
        )
    return value


def _bind(
    sig: FfiSignature, arrays: dict[int, np.ndarray], values: dict[str, object], full: bool
) -> dict[Var, int]:
    """The value of each shape variable: passed, or told by the tensors."""
    shapes: dict[Var, int] = {}
    for index, array in arrays.items():
        tensor = sig.tensors[index]
        for dimension, extent in zip(tensor.shape, array.shape, strict=True):
            if dimension.binds is not None:
                shapes[dimension.binds] = int(extent)
        for dimension, stride in zip(tensor.strides, _strides(array), strict=True):
            if dimension.binds is not None:
                shapes[dimension.binds] = stride
        if tensor.offset is not None:
            shapes[tensor.offset] = 0  # the JIT passes a copy's or the array's own start
    if full:
        for param in sig.params:
            if param.kind is ParamKind.SHAPE:
                value = values[param.name]
                assert isinstance(value, (int, np.integer))  # _number checked it, as "an int"
                shapes[param.var] = int(value)
    return shapes


def _check(
    sig: FfiSignature, tensor: TensorParam, array: np.ndarray, shapes: dict[Var, int], full: bool
) -> None:
    declared = [d for d in tensor.strides if d.expected is not None]
    actual = (*array.shape, *(_strides(array) if declared else ()))
    for dimension, value in zip((*tensor.shape, *declared), actual, strict=False):
        expected = dimension.expected
        assert expected is not None
        want = _evaluate(expected, shapes)
        if want == value:
            continue
        message = dimension_message(sig, dimension)
        if isinstance(expected, IntImm):
            raise ValueError(_format(message, value))
        if isinstance(expected, Var):
            told = "as passed" if full and is_shape_argument(sig, expected) else None
            raise ValueError(_format(message, value, want, told or origin(sig, expected)))
        raise ValueError(_format(message, value, want))


def _evaluate(expr: PrimExpr, shapes: dict[Var, int]) -> int:
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var) and expr in shapes:
        return shapes[expr]
    known = {var: IntImm(value, var.dtype) for var, value in shapes.items()}
    folded = Analyzer().simplify(substitute(expr, known))
    if not isinstance(folded, IntImm):
        raise ValueError(f"cannot tell the value of {expr} from the arguments")
    return folded.value


def _strides(array: np.ndarray) -> list[int]:
    return [stride // array.itemsize for stride in array.strides]


def _dtype_parts(dtype: np.dtype) -> tuple[str, str]:
    """A numpy dtype as the wrapper names a DLPack dtype: kind, then bits."""
    if dtype == np.bool_:
        return "bool", "8"
    found = re.fullmatch(r"([a-z]+?)(\d+)", dtype.name)
    return (found.group(1), found.group(2)) if found else (dtype.name, "")


def _type_name(value: object) -> str:
    return type(value).__name__


def _format(message: str, *values: object) -> str:
    """A printf format of ffi_signature's messages, filled in by Python."""
    return message.replace("%lld", "%s").replace("%d", "%s").replace("%p", "%s") % values
