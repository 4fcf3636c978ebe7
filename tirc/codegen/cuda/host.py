"""The host launcher of one function: a C ABI entry that checks, allocates and launches.

`extern "C" int f_launch(float *A, ..., int64_t n, cudaStream_t stream)`: one device pointer
per buffer parameter, the scalars and shape variables as tirc.codegen.abi passes them to CPU
code, then the stream. Returns 0 or a cudaError_t.
"""

from __future__ import annotations

from tirc.codegen.abi import ParamKind, function_abi
from tirc.codegen.cuda import types
from tirc.codegen.cuda.expr import ExprPrinter
from tirc.codegen.cuda.kernel import STATIC_SHARED_LIMIT, dynamic_shared_layout, shape_bound
from tirc.codegen.cuda.kernels import (
    DeviceProgram,
    Kernel,
    KernelLaunch,
    allocation_size,
    uses_of,
)
from tirc.codegen.cuda.names import NameTable
from tirc.codegen.cuda.tma import encode_tensor_maps
from tirc.codegen.cuda.writer import Writer
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.functor import Dispatch
from tirc.ir.tma import tensor_maps

RULES: Dispatch[HostWriter, [], None] = Dispatch("CUDA codegen")


def launcher_name(name: str) -> str:
    return f"{name}_launch"


class HostWriter:
    def __init__(self, program: DeviceProgram, printer: ExprPrinter, out: Writer) -> None:
        self.program = program
        self.p = printer
        self.out = out
        self.known: set[E.Var] = set()  # variables the host has values for

    def emit(self, stmt: S.Stmt) -> None:
        rule = RULES.get(type(stmt))
        if rule is None:
            raise DiagnosticError.at(
                stmt.span, f"CUDA codegen: cannot run a {type(stmt).__name__} on the host"
            )
        rule(self, stmt)

    def check_known(self, expr: object, what: str) -> None:
        for var in uses_of(expr).free():
            if var not in self.known:
                raise DiagnosticError.at(
                    getattr(expr, "span", None),
                    f"CUDA codegen: {what} uses '{var.name}', which only the device knows",
                )


def launcher_text(name: str, program: DeviceProgram) -> str:
    func = program.func
    names = NameTable()
    printer = ExprPrinter(names)
    out = Writer()
    host = HostWriter(program, printer, out)
    params: list[str] = []
    conversions: list[str] = []
    for param in function_abi(func):
        buffer = param.buffer
        if buffer is not None:
            params.append(f"{types.c_type(buffer.dtype)}* {names(buffer.data)}")
            printer.pointer_types[buffer.data] = buffer.dtype
            host.known.add(buffer.data)
        elif param.kind is ParamKind.HANDLE:
            params.append(f"void* {names(param.var)}")
        else:
            params.append(_scalar_param(param.var, names, conversions))
            if param.kind is ParamKind.SHAPE or param.var.is_size_var:
                printer.analyzer.ranges[param.var] = shape_bound(param.var)
        host.known.add(param.var)
    params.append("cudaStream_t stream")
    with out.block(f'extern "C" int {launcher_name(name)}({", ".join(params)})'):
        for line in conversions:
            out.line(line)
        for buffer in program.host_allocations:
            _allocate(host, buffer)
        if program.host_allocations:
            # the body returns early on a failed check; the allocations are freed either way
            with out.block("int status = [&]() -> int", "}();"):
                host.emit(program.host)
                out.line("return (int)cudaGetLastError();")
            for buffer in program.host_allocations:
                out.line(f"cudaFreeAsync({names(buffer.data)}, stream);")
            out.line("return status != 0 ? status : (int)cudaGetLastError();")
        else:
            host.emit(program.host)
            out.line("return (int)cudaGetLastError();")
    return out.text()


def _scalar_param(var: E.Var, names: NameTable, conversions: list[str]) -> str:
    """An int64 parameter for an integer or bool variable (converted where the variable is
    narrower), the variable's own C type otherwise."""
    if (var.dtype.is_integer or var.dtype.is_bool) and var.dtype.bits != 64:
        argument = names.fresh(f"{var.name}_arg")
        conversions.append(
            f"{types.c_type(var.dtype)} {names(var)} = ({types.c_type(var.dtype)}){argument};"
        )
        return f"int64_t {argument}"
    if var.dtype.is_integer:
        return f"int64_t {names(var)}"
    return f"{types.c_type(var.dtype)} {names(var)}"


@RULES.register(S.SeqStmt)
def _seq(h: HostWriter, node: S.SeqStmt) -> None:
    for stmt in node.stmts:
        h.emit(stmt)


@RULES.register(KernelLaunch)
def _launch(h: HostWriter, node: KernelLaunch) -> None:
    kernel = h.program.kernels[node.index]
    grid = [_at_launch(kernel, node, f"blockIdx.{axis}") for axis in "xyz"]
    block = [_at_launch(kernel, node, f"threadIdx.{axis}") for axis in "xyz"]
    for extent in (*grid, *block):
        if extent is not None:
            h.check_known(extent, f"the launch of {kernel.name}")
    _, shared_bytes = dynamic_shared_layout(kernel)
    shared_bytes = kernel.at_launch(shared_bytes, node)
    h.check_known(shared_bytes, f"the shared memory of {kernel.name}")
    for arg in node.args:
        h.check_known(arg, f"the launch of {kernel.name}")
    arguments = [h.p(arg) for arg in node.args]
    arguments += _tensor_maps(h, kernel, node)
    grid_name = h.p.names.fresh(f"{kernel.name}_grid")
    block_name = h.p.names.fresh(f"{kernel.name}_block")
    if not (isinstance(shared_bytes, E.IntImm) and shared_bytes.value <= STATIC_SHARED_LIMIT):
        # past 48 KiB a kernel must opt in to dynamic shared memory
        h.out.line(
            f"cudaFuncSetAttribute({kernel.name}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
            f"(int)({h.p(shared_bytes)}));"
        )
    h.out.line(f"dim3 {grid_name}({_dims(h, grid)});")
    h.out.line(f"dim3 {block_name}({_dims(h, block)});")
    if kernel.cluster is not None and not all(isinstance(e, E.IntImm | None) for e in grid):
        # a constant grid was checked when compiled; this one must be whole clusters too
        remainders = " || ".join(
            f"{grid_name}.{axis} % {size} != 0"
            for axis, size in zip("xyz", kernel.cluster, strict=True)
            if size > 1
        )
        if remainders:
            h.out.line(f"if ({remainders}) return (int)cudaErrorInvalidClusterSize;")
    shared = str(shared_bytes.value) if isinstance(shared_bytes, E.IntImm) else h.p(shared_bytes)
    launch = (
        f"{kernel.name}<<<{grid_name}, {block_name}, {shared}, stream>>>({', '.join(arguments)});"
    )
    # an empty grid is a launch error in CUDA, and nothing to do for tirc
    h.out.line(f"if ({grid_name}.x * {grid_name}.y * {grid_name}.z != 0) {launch}")


def _tensor_maps(h: HostWriter, kernel: Kernel, node: KernelLaunch) -> list[str]:
    """The tensor maps the kernel's TMA loads read through, built here (tirc.codegen.cuda.tma)."""
    maps = tensor_maps(kernel.body)
    names = [h.p.names.fresh(f"{kernel.name}_tensor_map") for _ in maps]
    for load in maps:
        h.check_known(kernel.at_launch(load.tensor, node), f"the tensor map of {kernel.name}")
        for extent in load.shape:
            h.check_known(kernel.at_launch(extent, node), f"the tensor map of {kernel.name}")
    encode_tensor_maps(h.out, h.p, maps, lambda expr: kernel.at_launch(expr, node), names)
    return names


def _at_launch(kernel: Kernel, node: KernelLaunch, tag: str) -> E.PrimExpr | None:
    extent = kernel.dims.get(tag)
    return None if extent is None else kernel.at_launch(extent, node)


def _dims(h: HostWriter, extents: list[E.PrimExpr | None]) -> str:
    return ", ".join(_dim(h, extent) for extent in extents)


def _dim(h: HostWriter, extent: E.PrimExpr | None) -> str:
    if extent is None:
        return "1"
    if isinstance(extent, E.IntImm):
        return str(extent.value)
    return f"(unsigned int)({h.p(extent)})"


@RULES.register(S.AllocBuffer)
def _alloc(h: HostWriter, node: S.AllocBuffer) -> None:
    pass  # host allocations happen at the launcher's start (see _allocate); others in kernels


def _allocate(h: HostWriter, buffer: Buffer) -> None:
    """Device memory for a buffer kernels share; its size must be known at the start."""
    h.check_known(allocation_size(buffer), f"the size of {buffer.name}")
    element = types.c_type(buffer.dtype)
    name = h.p.names(buffer.data)
    h.p.pointer_types[buffer.data] = buffer.dtype
    h.known.add(buffer.data)
    size = h.p(allocation_size(buffer))
    h.out.line(f"{element}* {name} = nullptr;")
    h.out.line(f"cudaMallocAsync((void**)&{name}, ({size}) * sizeof({element}), stream);")


@RULES.register(S.DeclBuffer)
def _decl(h: HostWriter, node: S.DeclBuffer) -> None:
    buffer = node.buffer
    if node.data is None or node.data is buffer.data:
        return
    h.check_known(node.data, f"the view {buffer.name}")
    element = types.c_type(buffer.dtype)
    h.p.pointer_types[buffer.data] = buffer.dtype
    h.known.add(buffer.data)
    h.out.line(f"{element}* {h.p.names(buffer.data)} = ({element}*)({h.p(node.data)});")


@RULES.register(S.Bind)
def _bind(h: HostWriter, node: S.Bind) -> None:
    h.check_known(node.value, f"'{node.var.name}'")
    h.known.add(node.var)
    h.out.line(f"{types.c_type(node.var.dtype)} {h.p.names(node.var)} = {h.p(node.value)};")


@RULES.register(S.AssertStmt)
def _assert(h: HostWriter, node: S.AssertStmt) -> None:
    h.check_known(node.condition, "an assertion")
    with h.out.block(f"if (!({h.p(node.condition)}))"):
        h.out.line("return (int)cudaErrorInvalidValue;")


@RULES.register(S.For)
def _for(h: HostWriter, node: S.For) -> None:
    h.check_known((node.min, node.extent), "a host loop")
    var, name = node.loop_var, h.p.names(node.loop_var)
    h.known.add(var)
    end = node.extent if E.is_const_int(node.min, 0) else E.Add(node.min, node.extent)
    with h.out.block(
        f"for ({types.c_type(var.dtype)} {name} = {h.p(node.min)}; {name} < {h.p(end)}; ++{name})"
    ):
        h.emit(node.body)


@RULES.register(S.IfThenElse)
def _if(h: HostWriter, node: S.IfThenElse) -> None:
    h.check_known(node.condition, "a host condition")
    with h.out.block(f"if ({h.p(node.condition)})"):
        h.emit(node.then_case)
    if node.else_case is not None:
        with h.out.block("else"):
            h.emit(node.else_case)


@RULES.register(S.AttrStmt)
def _attr(h: HostWriter, node: S.AttrStmt) -> None:
    h.emit(node.body)


@RULES.register(S.Evaluate)
def _evaluate(h: HostWriter, node: S.Evaluate) -> None:
    pass  # constants only: anything else runs in a kernel
