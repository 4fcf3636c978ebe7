"""`tirc run`'s arguments: the inputs given in an npz (checked against the parameters), the
sizes of symbolic shapes (`--size n=16`, or 0-d arrays named like the variables), and for
the rest random values drawn from the seed (`tirc.interp.inputs`: small exact floats,
integers in [0, 3], and in [1, 4] for a buffer the program divides by).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tirc.diagnostics import DiagnosticError, Note
from tirc.ir.abi import parameter_buffers
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import vars_in


def parse_sizes(items: Sequence[str]) -> dict[str, int]:
    """`--size NAME=VALUE` items as a dict of non-negative integers; a later one wins."""
    sizes: dict[str, int] = {}
    for item in items:
        name, equals, value = item.partition("=")
        try:
            number = int(value)
        except ValueError:
            number = -1
        if not equals or not name.isidentifier() or number < 0:
            raise DiagnosticError.at(
                None, f"invalid --size '{item}': expected NAME=VALUE with a whole number VALUE"
            )
        sizes[name] = number
    return sizes


def load_inputs(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError) as error:
        raise DiagnosticError.at(None, f"cannot read inputs from '{path}': {error}") from None


def complete_arguments(
    func: PrimFunc,
    given: Mapping[str, np.ndarray],
    seed: int,
    source: str,
    sizes: Mapping[str, int] | None = None,
) -> dict[str, np.ndarray | int]:
    """An argument per parameter: the given ones checked, the rest drawn at random, their
    shapes from `sizes`, the given arrays' shapes and 0-d arrays named like shape variables."""
    # deferred: the interpreter (about a second), only when it runs
    from tirc.interp.inputs import random_argument

    # deferred: the interpreter (about a second), only when it runs
    from tirc.interp.memory.storage import array_type

    names = {param.name for param in func.params}
    buffer_names = {
        buffer.name: param.name for param, buffer in func.buffer_map if buffer.name not in names
    }
    shape_vars = shape_variables(func)
    unknown = [
        key
        for key in given
        if key not in names and key not in buffer_names and key not in shape_vars
    ]
    if unknown:
        raise DiagnosticError.at(
            None,
            f"'{source}' has arrays for {', '.join(sorted(unknown))}, "
            "which are not parameters of the "
            f"function (its parameters: {', '.join(p.name for p in func.params)})",
        )
    known = _known_sizes(func, given, sizes or {}, shape_vars, source)
    by_param = {buffer_names.get(key, key): value for key, value in given.items()}
    args: dict[str, np.ndarray | int] = {}
    for param in func.params:
        if param.name not in by_param:
            continue
        value = by_param[param.name]
        buffer = _buffer_of(func, param)
        if buffer is None:
            args[param.name] = value.item() if value.ndim == 0 else value
            continue
        want = array_type(buffer.dtype)
        if value.dtype.kind == "V" and value.dtype.itemsize == want.itemsize:
            value = value.view(want)  # npz keeps bfloat16 and float8 as raw bytes
        if value.dtype != want:
            raise DiagnosticError.at(
                None,
                f"input {param.name} in '{source}' is {value.dtype}, "
                f"but {buffer.name} holds {buffer.dtype}",
            )
        if value.ndim != len(buffer.shape) + (1 if buffer.dtype.lanes > 1 else 0):
            raise DiagnosticError.at(
                None,
                f"input {param.name} in '{source}' has shape {value.shape}, "
                f"but {buffer.name} has {len(buffer.shape)} dimensions",
            )
        for extent, actual in zip(buffer.shape, value.shape, strict=False):
            if not isinstance(extent, Var):
                continue
            if known.setdefault(extent.name, int(actual)) != int(actual):
                raise DiagnosticError.at(
                    None,
                    f"input {param.name} in '{source}' has shape {value.shape}, so "
                    f"{extent.name} = {actual}, but it is given as {known[extent.name]}",
                )
        args[param.name] = np.array(value, copy=True)
    for index, param in enumerate(func.params):
        if param.name not in args:
            _check_sizes_known(func, param, known)
            args[param.name] = random_argument(func, index, seed, known)
    return args


def shape_variables(func: PrimFunc) -> dict[str, Var]:
    """The variables the shapes of the function's parameter buffers use, by name."""
    found: dict[str, Var] = {}
    for buffer in parameter_buffers(func).values():
        for extent in buffer.shape:
            for var in sorted(vars_in(extent), key=lambda v: v.name):
                found.setdefault(var.name, var)
    return found


def _known_sizes(
    func: PrimFunc,
    given: Mapping[str, np.ndarray],
    sizes: Mapping[str, int],
    shape_vars: Mapping[str, Var],
    source: str,
) -> dict[str, int]:
    """Values of shape variables and integer scalar parameters, by name: from `--size`, and
    from 0-d integer arrays in the inputs (which must agree)."""
    scalars = {
        param.name
        for param in func.params
        if _buffer_of(func, param) is None and not param.dtype.is_handle
    }
    sizable = sorted(set(shape_vars) | scalars)
    known: dict[str, int] = {}
    for name, value in sizes.items():
        if name not in sizable:
            raise DiagnosticError.at(
                None,
                f"--size {name}={value}: the function has no shape variable {name}",
                Note(
                    f"its shape variables: {', '.join(sizable)}"
                    if sizable
                    else "its shapes are all constants"
                ),
            )
        known[name] = int(value)
    for name, array in given.items():
        if name not in sizable:
            continue
        if array.ndim != 0 or not np.issubdtype(array.dtype, np.integer):
            if name in scalars:
                continue  # a float scalar parameter, say: its own argument
            raise DiagnosticError.at(
                None,
                f"'{source}' gives shape variable {name} as a {array.dtype} array of shape "
                f"{array.shape}; give it as a 0-d integer array",
            )
        if known.setdefault(name, int(array)) != int(array):
            raise DiagnosticError.at(
                None, f"'{source}' gives {name} = {int(array)}, but --size gives {known[name]}"
            )
    return known


def _check_sizes_known(func: PrimFunc, param: Var, known: Mapping[str, int]) -> None:
    """A DiagnosticError naming the option to use when a random argument needs a size that
    nothing gave."""
    buffer = _buffer_of(func, param)
    if buffer is None:
        if param.name in known or param.dtype.is_handle:
            return
        if param.dtype.is_float:
            hint = f"give it as a 0-d array '{param.name}' in --inputs"
        else:
            hint = f"give it with --size {param.name}=... or as a 0-d array in --inputs"
        raise DiagnosticError.at(param.span, f"scalar parameter {param.name} has no value: {hint}")
    missing = sorted({var.name for extent in buffer.shape for var in vars_in(extent)} - set(known))
    if missing:
        options = " ".join(f"--size {name}=..." for name in missing)
        raise DiagnosticError.at(
            buffer.span,
            f"the shape of {buffer.name} depends on {', '.join(missing)}: give {options} "
            f"(or the array {param.name} in --inputs)",
        )


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    stream = io.BytesIO()
    named: dict[str, Any] = dict(arrays)  # numpy's stub reads **kwds as its own allow_pickle too
    np.savez(stream, **named)
    return stream.getvalue()


def _buffer_of(func: PrimFunc, param: Var) -> Buffer | None:
    """The buffer over a parameter: its buffer_map entry, or in a lowered function (make-c-abi)
    the buffer its body declares over the pointer."""
    return parameter_buffers(func).get(param)
