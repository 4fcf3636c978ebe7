"""A PrimFunc compiled, once, to one Python function `_entry(inputs)`.

`inputs` holds, per parameter, a scalar, or for a buffer parameter `(storage, shape, strides)`;
the prologue binds shape, stride and offset variables from them. The generated source is kept
(see `CompiledFunction.source`) so that it can be read when debugging the interpreter.
"""

from __future__ import annotations

import linecache
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count
from pathlib import Path

from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.interp.fault import Fault, Site
from tirc.interp.threads.context import Context, Launcher, LaunchLine
from tirc.interp.threads.dead_code import remove_unread
from tirc.interp.threads.runtime import Returned, base_namespace
from tirc.interp.threads.stmt import StmtCompiler
from tirc.ir.abi import is_kernel, returned_type
from tirc.ir.buffer import Buffer
from tirc.ir.cluster import cluster_dims
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk
from tirc.ir.node import Node

_serial = count()


@dataclass(frozen=True)
class CompiledFunction:
    name: str
    source: str
    filename: str
    entry: Callable[[list[object]], None]
    sites: tuple[Site, ...]
    line_nodes: tuple[Node | None, ...]  # the IR node behind each line of source
    first_line: int  # line number of the first body line in source


def compile_python(
    func: PrimFunc,
    name: str,
    module: IRModule | None,
    launcher: Launcher | None = None,
    launch_line: LaunchLine | None = None,
    subroutine: bool = False,
) -> CompiledFunction:
    """Python code for func; raises DiagnosticError for what the interpreter cannot run.
    `module` holds the kernels a host function launches (split-host-device's) and the
    functions it calls, `launcher` compiles such a kernel or callee (`subroutine`: its
    handle parameters may point into memory, as a kernel's may), and `launch_line` writes a
    GPU launch (see Context)."""
    ctx = Context(namespace=dict(base_namespace()), module=module, body=func.body)
    ctx.launcher, ctx.launch_line = launcher, launch_line
    ctx.data_types = _data_types(func)
    ctx.serial_threads = func.is_s_tir
    ctx.cluster = cluster_dims(func)
    ctx.result_type = returned_type(func)
    compiler = StmtCompiler(ctx)
    _prologue(compiler, func, subroutine)
    compiler.compile(func.body)
    remove_unread(ctx.lines, ctx.removable)
    if not ctx.lines:  # a function that does nothing (its body only `T.evaluate(0)`)
        ctx.emit("pass")
    header = "def _entry(_inputs):"
    source = header + "\n" + ctx.source()
    filename = f"<tirc-interp {name} #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    exec(code, ctx.namespace)
    entry = ctx.namespace["_entry"]
    assert callable(entry)  # the `def _entry` just executed
    return CompiledFunction(
        name,
        source,
        filename,
        entry,
        tuple(ctx.sites),
        tuple(ctx.line_nodes),
        2,
    )


# Python exceptions that generated code can raise on its own, and what they mean there
_PYTHON_FAULTS: dict[type[Exception], str] = {
    ZeroDivisionError: "division by zero",
    OverflowError: "arithmetic overflow",
    IndexError: "memory access out of bounds",
}
_PYTHON_FAULT_TYPES = tuple(_PYTHON_FAULTS)


def execute(compiled: CompiledFunction, inputs: list[object]) -> object:
    """Runs compiled on inputs and gives the value its `T.ret` returns (None where it returns
    none); a run-time fault becomes a diagnostic at its node's span."""
    try:
        compiled.entry(inputs)
    except Returned as returned:
        return returned.value
    except Fault as fault:
        raise fault_diagnostic(compiled, fault) from None
    except _PYTHON_FAULT_TYPES as error:
        node = _node_of_traceback(compiled, error)
        if node is None:
            raise
        meaning = next(text for kind, text in _PYTHON_FAULTS.items() if isinstance(error, kind))
        message = f"{meaning}: {error}"
        raise DiagnosticError.at(getattr(node, "span", None), message) from None
    return None


def fault_diagnostic(compiled: CompiledFunction, fault: Fault) -> DiagnosticError:
    site = compiled.sites[fault.site]
    message = fault.message
    if site.is_access:
        message = f"out-of-bounds {site.what}: {message}"
    elif site.what and site.what not in message:
        message = f"{message} ({site.what})"
    notes = [Note(text, compiled.sites[other].span) for other, text in fault.notes]
    return DiagnosticError(Diagnostic.error(message, site.span, *notes))


# the thread model's scheduling: a Python exception from there is the interpreter's failure,
# never the program's, even when generated code called into it
_MACHINERY = tuple(str(Path(__file__).with_name(name)) for name in ("scheduler.py", "cluster.py"))


def _node_of_traceback(compiled: CompiledFunction, error: BaseException) -> object:
    """The node whose generated line raised error (itself, or in the operations it calls:
    `int(inf)`, a float rounding, a wmma tile); None for an exception from the scheduling
    machinery below it, which is the interpreter's own failure, not the program's."""
    node = None
    for frame, line in traceback.walk_tb(error.__traceback__):
        name = frame.f_code.co_filename
        if name == compiled.filename:
            index = line - compiled.first_line
            if 0 <= index < len(compiled.line_nodes):
                node = compiled.line_nodes[index] or node
        elif name in _MACHINERY:
            node = None
    return node


def _data_types(func: PrimFunc) -> dict[Var, set[DataType]]:
    """For each data handle, the element types some buffer views it as."""
    found: dict[Var, set[DataType]] = {}

    def collect(node: Node) -> None:
        if isinstance(node, Buffer):
            found.setdefault(node.data, set()).add(node.dtype.element)

    walk(func, collect)
    for _, buffer in func.buffer_map:
        found.setdefault(buffer.data, set()).add(buffer.dtype.element)
    return found


def _prologue(compiler: StmtCompiler, func: PrimFunc, subroutine: bool) -> None:
    """Scalars first: a buffer's shape may use a scalar parameter listed after it."""
    ctx = compiler.ctx
    for index, param in enumerate(func.params):
        if func.buffer_of(param) is not None:
            continue
        if param.dtype.is_handle:
            # a kernel's host, or a subroutine's caller, may pass a pointer into memory, not
            # only a whole storage
            whole = not is_kernel(func) and not subroutine
            compiler.bind_handle(param, f"_inputs[{index}]", "global", is_storage=whole)
        else:
            name = ctx.bind(param)
            ctx.emit(f"{name} = _inputs[{index}]")
            ctx.define(param)
    for index, param in enumerate(func.params):
        buffer = func.buffer_of(param)
        if buffer is None:
            continue
        storage = compiler.bind_handle(param, f"_inputs[{index}][0]", "global", is_storage=True)
        if buffer.data is not param:
            compiler.bind_handle(buffer.data, storage, "global", is_storage=True)
    # every buffer's variables before any check: a shape may use a variable a later buffer
    # defines (A: (n + 1,) before B: (n,))
    checks = []
    for index, param in enumerate(func.params):
        buffer = func.buffer_of(param)
        if buffer is not None:
            checks += _bind_layout(compiler, buffer, index)
    for buffer, index, position, dim in checks:
        _check_layout(compiler, buffer, index, position, dim)


def _bind_layout(
    compiler: StmtCompiler, buffer: Buffer, index: int
) -> list[tuple[Buffer, int, int, int]]:
    """Variables in a parameter buffer's shape and strides take the argument's values; the
    other dimensions, to check against the argument once all are bound."""
    ctx = compiler.ctx
    checks = []
    for position, values in enumerate((buffer.shape, buffer.strides)):
        for dim, value in enumerate(values):
            actual = f"_inputs[{index}][{position + 1}][{dim}]"
            if isinstance(value, Var) and value not in ctx.names:
                name = ctx.bind(value, 0, None)
                ctx.emit(f"{name} = {actual}")
                ctx.define(value)
            else:
                checks.append((buffer, index, position, dim))
    if isinstance(buffer.elem_offset, Var) and buffer.elem_offset not in ctx.names:
        name = ctx.bind(buffer.elem_offset, 0, 0)
        ctx.emit(f"{name} = 0")
        ctx.define(buffer.elem_offset)
    return checks


def _check_layout(
    compiler: StmtCompiler, buffer: Buffer, index: int, position: int, dim: int
) -> None:
    """A fault where dimension `dim` of the argument's shape (`position` 0) or strides (1)
    differs from the buffer's."""
    ctx = compiler.ctx
    field, values = ("shape", buffer.shape) if position == 0 else ("strides", buffer.strides)
    actual = f"_inputs[{index}][{position + 1}][{dim}]"
    expected = compiler.expr(values[dim])
    if expected.constant is not None:
        return  # checked before the run, with the argument's name
    site = ctx.site(buffer, f"{field} of {buffer.name}")
    ctx.emit(f"if {expected.text} != {actual}:")
    with ctx.indented():
        message = f"argument {buffer.name} has {field}[{dim}] = %d but the program needs %d"
        ctx.emit(f"_fault({site}, {message!r} % ({actual}, {expected.text}))")
