"""One kernel as an LLVM function with the `ptx_kernel` calling convention.

Thread indices read `llvm.nvvm.read.ptx.sreg.{tid,ctaid}.*`; shared buffers are addrspace(3)
globals (dynamic ones carved from one external array) aligned as CUDA C aligns them (1024 bytes
for a swizzled TMA box), used through generic pointers; per-thread arrays are allocas. Loops
carry their variable in a phi. The parameters are the kernel's, then its tensor maps
(tirc.codegen.nvptx.tma_ptx), as the CUDA C kernel's; its block size and cluster shape are
annotations (.maxntid, .reqnctapercluster), as CUDA C's __launch_bounds__ and __cluster_dims__.
"""

from __future__ import annotations

import llvmlite.ir as ir

from tirc.analysis.wmma_fragments import fragment_shapes
from tirc.codegen.cuda.kernel import (
    dynamic_shared_alignment,
    dynamic_shared_layout,
    pointer_element,
)
from tirc.codegen.cuda.kernels import Kernel, allocation_size, uses_of

# calls registers the Call rule in values.RULES as it loads; this is the one place that loads it
from tirc.codegen.nvptx import (
    calls,  # noqa: F401
    types,
)
from tirc.codegen.nvptx.annotations import annotate
from tirc.codegen.nvptx.cluster_ptx import annotate_cluster
from tirc.codegen.nvptx.fragment import ROLES, fragment_of
from tirc.codegen.nvptx.tma_ptx import TENSOR_MAP, bind_tensor_maps
from tirc.codegen.nvptx.unroll import register_arrays, unrolled_extent
from tirc.codegen.nvptx.values import ValueBuilder
from tirc.codegen.nvptx.wmma import allocate_fragments
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import Dispatch
from tirc.ir.structural import structural_equal
from tirc.ir.tma import shared_alignment, tensor_maps

SHARED = 3
_REGISTERS = {"threadIdx": "tid", "blockIdx": "ctaid"}


class KernelBuilder:
    def __init__(self, module: ir.Module, kernel: Kernel, *, noalias: bool) -> None:
        self.kernel = kernel
        self.module = module
        buffers = uses_of(kernel.body).buffers
        params = []
        for var in kernel.params:
            params.append(types.POINTER if var.dtype.is_handle else types.value_type(var.dtype))
        maps = tensor_maps(kernel.body)
        params += [TENSOR_MAP] * len(maps)
        function = ir.Function(module, ir.FunctionType(ir.VoidType(), params), kernel.name)
        function.calling_convention = "ptx_kernel"
        self.function = function
        entry = function.append_basic_block("entry")
        self.allocas = ir.IRBuilder(entry)  # static allocations go first in the entry block
        body = function.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self.v = ValueBuilder(module, self.b)
        for var, argument in zip(kernel.params, function.args[: len(kernel.params)], strict=True):
            argument.name = var.name
            if var.dtype.is_handle and noalias and pointer_element(var, buffers) is not None:
                argument.add_attribute("noalias")
            self.v.values[var] = argument
        for handle in (*kernel.params, *buffers):
            element = pointer_element(handle, buffers)
            if element is not None:
                self.v.pointees[handle] = element
        self.v.tensor_maps = bind_tensor_maps(function, maps, len(kernel.params))
        _annotate_launch_bounds(function, kernel)
        annotate_cluster(function, kernel.cluster)
        self.loops: list[tuple[ir.Block, ir.Block]] = []  # (continue target, exit)
        self.dynamic_offsets, _ = dynamic_shared_layout(kernel)
        self.registers = register_arrays(kernel.body)  # loops indexing them are unrolled
        self.fragment_shapes = fragment_shapes(kernel.body)

    def build(self) -> None:
        self.lower(self.kernel.body)
        self.b.ret_void()
        self.allocas.branch(self.function.blocks[1])

    def lower(self, stmt: S.Stmt) -> None:
        rule = RULES.get(type(stmt))
        if rule is None:
            raise DiagnosticError.at(
                stmt.span, f"--ptx-via llvm: cannot lower {type(stmt).__name__} in a kernel"
            )
        rule(self, stmt)

    def loop(self, var: E.Var, start: E.PrimExpr, end: E.PrimExpr, body: S.Stmt) -> None:
        """`for (var = start; var < end; ++var) body`, with var in a phi."""
        first, last = self.v(start), self.v(end)
        before = self.b.block
        header = self.b.append_basic_block(f"{var.name}_header")
        loop_body = self.b.append_basic_block(f"{var.name}_body")
        latch = self.b.append_basic_block(f"{var.name}_latch")
        exit_block = self.b.append_basic_block(f"{var.name}_exit")
        self.b.branch(header)
        self.b.position_at_end(header)
        counter = self.b.phi(first.type, name=var.name)
        counter.add_incoming(first, before)
        self.b.cbranch(self.b.icmp_signed("<", counter, last), loop_body, exit_block)
        self.b.position_at_end(loop_body)
        self.v.values[var] = counter
        self.loops.append((latch, exit_block))
        self.lower(body)
        self.loops.pop()
        self.b.branch(latch)
        self.b.position_at_end(latch)
        following = self.b.add(counter, ir.Constant(first.type, 1))
        counter.add_incoming(following, latch)
        self.b.branch(header)
        self.b.position_at_end(exit_block)

    def start_block(self) -> None:
        """A fresh block after a terminator (break, continue), for code that cannot run."""
        self.b.position_at_end(self.b.append_basic_block("unreachable"))


def _annotate_launch_bounds(function: ir.Function, kernel: Kernel) -> None:
    """CUDA C's `__launch_bounds__(threads)` as `.maxntid threads, 1, 1`, and its `(threads,
    blocks)` (Kernel.blocks_per_sm: setmaxnreg's one block an SM) as `.minnctapersm` too."""
    threads = kernel.threads_per_block()
    if threads is None:
        return
    for axis, count in zip("xyz", (threads, 1, 1), strict=True):
        annotate(function, f"maxntid{axis}", count)
    blocks = kernel.blocks_per_sm()
    if blocks is not None:
        annotate(function, "minctasm", blocks)


RULES: Dispatch[KernelBuilder, [], None] = Dispatch("--ptx-via llvm")


@RULES.register(S.SeqStmt)
def _seq(k: KernelBuilder, node: S.SeqStmt) -> None:
    for stmt in node.stmts:
        k.lower(stmt)


@RULES.register(S.AttrStmt)
def _attr(k: KernelBuilder, node: S.AttrStmt) -> None:
    iter_var = node.node
    if node.key == "thread_extent" and isinstance(iter_var, S.IterVar):
        kind, axis = iter_var.thread_tag.split(".")
        register = f"llvm.nvvm.read.ptx.sreg.{_REGISTERS[kind]}.{axis}"
        value = k.b.call(k.v.function(register, types.I32, []), [])
        var = iter_var.var
        k.v.values[var] = k.v.cast(value, E.IntImm(0).dtype, var.dtype)
        launched = k.kernel.dims.get(iter_var.thread_tag)
        if launched is not None and not structural_equal(launched, node.value):
            inside = k.b.icmp_signed("<", k.v.values[var], k.v(node.value))
            with k.b.if_then(inside):
                k.lower(node.body)
        else:
            k.lower(node.body)
    elif node.key == "virtual_thread" and isinstance(iter_var, S.IterVar):
        zero = E.IntImm(0, iter_var.var.dtype)
        k.loop(iter_var.var, zero, node.value, node.body)
    else:
        k.lower(node.body)


@RULES.register(S.For)
def _for(k: KernelBuilder, node: S.For) -> None:
    end = node.extent if E.is_const_int(node.min, 0) else E.Add(node.min, node.extent)
    if node.step is not None and not E.is_const_int(node.step, 1):
        raise DiagnosticError.at(node.span, "--ptx-via llvm: loops with a step are not supported")
    copies = unrolled_extent(node, k.registers)
    if copies is None:
        k.loop(node.loop_var, node.min, end, node.body)
        return
    assert isinstance(node.min, E.IntImm)  # unrolled_extent says so
    var = node.loop_var
    for index in range(node.min.value, node.min.value + copies):
        k.v.values[var] = ir.Constant(types.value_type(var.dtype), index)
        k.lower(node.body)


@RULES.register(S.While)
def _while(k: KernelBuilder, node: S.While) -> None:
    header = k.b.append_basic_block("while_header")
    body = k.b.append_basic_block("while_body")
    exit_block = k.b.append_basic_block("while_exit")
    k.b.branch(header)
    k.b.position_at_end(header)
    k.b.cbranch(k.v(node.condition), body, exit_block)
    k.b.position_at_end(body)
    k.loops.append((header, exit_block))
    k.lower(node.body)
    k.loops.pop()
    k.b.branch(header)
    k.b.position_at_end(exit_block)


@RULES.register(S.Break)
def _break(k: KernelBuilder, node: S.Break) -> None:
    k.b.branch(k.loops[-1][1])
    k.start_block()


@RULES.register(S.Continue)
def _continue(k: KernelBuilder, node: S.Continue) -> None:
    k.b.branch(k.loops[-1][0])
    k.start_block()


@RULES.register(S.IfThenElse)
def _if(k: KernelBuilder, node: S.IfThenElse) -> None:
    condition = k.v(node.condition)
    if node.else_case is None:
        with k.b.if_then(condition):
            k.lower(node.then_case)
        return
    with k.b.if_else(condition) as (then, otherwise):
        with then:
            k.lower(node.then_case)
        with otherwise:
            k.lower(node.else_case)


@RULES.register(S.BufferStore)
def _store(k: KernelBuilder, node: S.BufferStore) -> None:
    if node.predicate is not None or len(node.indices) != 1:
        raise DiagnosticError.at(node.span, "--ptx-via llvm: only flat, unmasked stores")
    buffer, index = node.buffer, node.indices[0]
    value = k.v(node.value)
    if buffer.dtype.element.is_bool:
        value = k.b.zext(
            value,
            ir.VectorType(types.I8, value.type.count)
            if isinstance(value.type, ir.VectorType)
            else types.I8,
        )
    alignment = types.element_bytes(buffer.dtype)
    if isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1):
        pointer = k.v.element_pointer(buffer, k.v(index.base))
        typed = k.b.bitcast(pointer, ir.PointerType(value.type))  # a no-op for LLVM
        k.b.store(value, typed, align=alignment)
    elif index.dtype.is_vector:
        indices = k.v(index)
        for lane in range(index.dtype.lanes):
            position = ir.Constant(types.I32, lane)
            pointer = k.v.element_pointer(buffer, k.b.extract_element(indices, position))
            k.b.store(k.b.extract_element(value, position), pointer, align=alignment)
    else:
        k.b.store(value, k.v.element_pointer(buffer, k.v(index)), align=alignment)


@RULES.register(S.AllocBuffer)
def _alloc(k: KernelBuilder, node: S.AllocBuffer) -> None:
    buffer = node.buffer
    element = types.memory_type(buffer.dtype)
    size = allocation_size(buffer)
    if buffer.scope in ROLES:
        allocate_fragments(k.v, k.allocas, node, fragment_of(node, k.fragment_shapes))
        return
    if buffer in k.dynamic_offsets:
        base = _dynamic_shared(k)
        offset = k.v(k.dynamic_offsets[buffer])
        k.v.values[buffer.data] = k.b.gep(base, [offset], source_etype=types.I8)
    elif buffer.scope in ("shared", "shared.dyn"):
        assert isinstance(size, E.IntImm)
        array = ir.ArrayType(element, size.value)
        name = k.module.get_unique_name(f"{k.kernel.name}_{buffer.name}")
        shared = ir.GlobalVariable(k.module, array, name, addrspace=SHARED)
        shared.linkage = "internal"
        shared.initializer = ir.Constant(array, ir.Undefined)
        shared.align = shared_alignment(k.kernel.body, buffer.data)
        k.v.values[buffer.data] = k.b.addrspacecast(shared, types.POINTER)
    elif isinstance(size, E.IntImm):
        slot = k.allocas.alloca(element, size=ir.Constant(types.I64, size.value), name=buffer.name)
        slot.align = 16
        k.v.values[buffer.data] = slot
    else:
        # per-thread memory whose size only the launch knows: a dynamic alloca
        k.v.values[buffer.data] = k.b.alloca(element, size=k.v(size), name=buffer.name)


def _dynamic_shared(k: KernelBuilder) -> ir.Value:
    existing = k.module.globals.get("tirc_dynamic_shared")
    if existing is None:
        array = ir.ArrayType(types.I8, 0)
        existing = ir.GlobalVariable(k.module, array, "tirc_dynamic_shared", addrspace=SHARED)
        existing.linkage = "external"
        existing.align = 1
    # one array for every kernel of the module: aligned for the one that needs most
    existing.align = max(existing.align, dynamic_shared_alignment(k.kernel, k.dynamic_offsets))
    return k.b.addrspacecast(existing, types.POINTER)


@RULES.register(S.DeclBuffer)
def _decl(k: KernelBuilder, node: S.DeclBuffer) -> None:
    if node.data is not None and node.data is not node.buffer.data:
        k.v.values[node.buffer.data] = k.v(node.data)


@RULES.register(S.Bind)
def _bind(k: KernelBuilder, node: S.Bind) -> None:
    k.v.values[node.var] = k.v(node.value)


@RULES.register(S.AssertStmt)
def _assert(k: KernelBuilder, node: S.AssertStmt) -> None:
    failed = k.b.not_(k.v(node.condition))
    with k.b.if_then(failed):
        k.b.call(k.v.function("llvm.trap", ir.VoidType(), []), [])


@RULES.register(S.Evaluate)
def _evaluate(k: KernelBuilder, node: S.Evaluate) -> None:
    if not isinstance(node.value, (E.IntImm, E.FloatImm)):
        k.v(node.value)
