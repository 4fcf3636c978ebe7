"""Statements as lines, dispatched on a table keyed by class. A local one-element buffer
prints as a scalar (`x: T.int32 = v`, read `x`, written `x = v`); a thread launch that is
its parent's whole body prints unnested (`bx = T.launch_thread("blockIdx.x", 4)`)."""

from __future__ import annotations

from typing import TypeGuard

from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion
from tirc.ir.expr import (
    BufferLoad,
    Call,
    Cast,
    IntImm,
    Mul,
    PrimExpr,
    Ramp,
    Var,
    is_const_int,
    vscale_times,
)
from tirc.ir.functor import Dispatch, walk
from tirc.ir.stmt import (
    AllocBuffer,
    AssertStmt,
    AttrStmt,
    Bind,
    Break,
    BufferStore,
    Continue,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    IterVar,
    SBlock,
    SBlockRealize,
    SeqStmt,
    Stmt,
    While,
)
from tirc.text.printing import blocks, loops
from tirc.text.printing.buffers import (
    buffer_call,
    buffer_options,
    define_buffer,
    end_of,
    has_default_offset,
    layout_options,
)
from tirc.text.printing.emitter import Emitter, type_annotation, var_constructor
from tirc.text.printing.expr import is_scalar_index
from tirc.text.printing.literals import quote
from tirc.text.printing.sameness import same_expr
from tirc.text.printing.values import format_attrs, format_value

_THREAD_KEYS = ("thread_extent", "virtual_thread")
_ALLOC_FUNCTION = {"local": "T.alloc_local", "shared": "T.alloc_shared"}

RULES: Dispatch[StmtPrinter, [bool], None] = Dispatch("statement printer")


class StmtPrinter(Emitter):
    def __init__(self, *, declare_free_vars: bool = True) -> None:
        super().__init__(declare_free_vars=declare_free_vars)
        self.shared_threads: set[Var] = set()  # launched more than once: T.env_thread first
        # the statement (by id) before which each of them is declared
        self.thread_declarations: dict[int, list[IterVar]] = {}

    def stmt(self, node: Stmt, alone: bool = False) -> None:
        """Print one statement; `alone` when it is the whole body of its parent."""
        if self.thread_declarations:
            self.declare_threads(node)
        RULES(self, node, alone)

    def declare_threads(self, node: Stmt) -> None:
        """`tx = T.env_thread("threadIdx.x")` before the statement that holds its launches."""
        for thread in self.thread_declarations.get(id(node), ()):
            if thread.var not in self.names:
                name = self.names.define(thread.var, thread.var.name)
                self.line(f"{name} = T.env_thread({quote(thread.thread_tag)})")

    def body(self, node: Stmt) -> None:
        """Print a body: a sequence's statements in turn, or one statement alone."""
        if not isinstance(node, SeqStmt):
            self.stmt(node, True)
            return
        stmts = node.stmts
        count = len(stmts)
        index = 0
        while index < count:
            item = stmts[index]
            if isinstance(item, SeqStmt):
                if self.thread_declarations:
                    self.declare_threads(item)
                for inner in item.stmts:  # a nested sequence reads as part of this one
                    self.stmt(inner)
            elif isinstance(item, AllocBuffer) and is_scalar_alloc(item):
                if _is_data_used(item.buffer, stmts[index + 1 :]):
                    _print_alloc(self, item)
                    index += 1
                    continue
                following = stmts[index + 1] if index + 1 < count else None
                if _print_scalar(self, item, following):
                    index += 1
            else:
                self.stmt(item)
            index += 1


def is_scalar_alloc(alloc: AllocBuffer) -> bool:
    """A local buffer of one element with nothing else to say: printed as a scalar."""
    buffer = alloc.buffer
    shape = buffer.shape
    return (
        len(shape) == 1
        and type(shape[0]) is IntImm
        and shape[0].value == 1
        and shape[0].dtype == dt.INT32
        and buffer.scope == "local"
        and not alloc.annotations.items
        and not buffer.strides
        and has_default_offset(buffer)
        and not layout_options(buffer)
    )


def _is_data_used(buffer: Buffer, rest: tuple[Stmt, ...]) -> bool:
    """Whether statements name the buffer's data other than through its own loads and stores
    (`T.decl_buffer(..., data=x.data)`, `T.address_of`), or index it other than at 0
    (`B[vi]`, where vi can only be 0): a scalar has no `.data` to name and no index, and
    TVM 0.27 reads neither."""
    found = False

    def check(node: object) -> None:
        nonlocal found
        if node is buffer.data or (
            isinstance(node, Buffer) and node is not buffer and node.data is buffer.data
        ):
            found = True
        elif isinstance(node, (BufferLoad, BufferStore)) and node.buffer is buffer:
            found = found or not is_scalar_index(node.indices)
        elif isinstance(node, BufferRegion) and node.buffer is buffer:
            found = found or not all(is_const_int(r.min, 0) for r in node.region)

    walk(rest, check)
    return found


def _is_scalar_store(store: object, buffer: Buffer) -> TypeGuard[BufferStore]:
    return (
        type(store) is BufferStore
        and store.buffer is buffer
        and store.predicate is None
        and is_scalar_index(store.indices)
    )


def _print_scalar(printer: StmtPrinter, alloc: AllocBuffer, following: Stmt | None) -> bool:
    """`x: T.int32 = v` (consuming the store that follows) or `x: T.int32`."""
    buffer = alloc.buffer
    annotation = f"T.{buffer.dtype}"
    initial = None
    if following is not None and _is_scalar_store(following, buffer):
        if not _reads(following.value, buffer):
            initial = printer.exprs.expr(following.value)
    name = define_buffer(printer, buffer)
    printer.scalar_buffers.add(buffer)
    if initial is None:
        printer.line(f"{name}: {annotation}")
        return False
    printer.line(f"{name}: {annotation} = {initial}")
    return True


def _reads(expr: PrimExpr, buffer: Buffer) -> bool:
    found = False

    def check(node: object) -> None:
        nonlocal found
        if getattr(node, "buffer", None) is buffer:
            found = True

    walk(expr, check)
    return found


@RULES.register(BufferStore)
def _store(printer: StmtPrinter, node: BufferStore, alone: bool) -> None:
    exprs = printer.exprs
    value = exprs.expr(node.value)
    buffer = node.buffer
    name = exprs.buffer_name(buffer)
    if node.predicate is not None:
        indices = exprs.indices(node.indices)
        predicate = exprs.expr(node.predicate)
        printer.line(f"{name}.vstore([{indices}], {value}, predicate={predicate})")
        return
    if buffer in printer.scalar_buffers and _is_scalar_store(node, buffer):
        printer.line(f"{name} = {value}")
        return
    indices = ", ".join(_store_index(printer, index) for index in node.indices) or "()"
    printer.line(f"{name}[{indices}] = {value}")


def _store_index(printer: StmtPrinter, index: PrimExpr) -> str:
    """A stored Ramp with a constant stride prints as a slice: `A[b:b + 8]`, `A[b:e:2]`."""
    if type(index) is Ramp and type(index.stride) is IntImm:
        expr = printer.exprs.expr
        stride = index.stride
        span: PrimExpr = IntImm(stride.value * index.lanes, stride.dtype)
        if index.scalable:  # `A[b:b + T.vscale() * 4]`, `A[b:b + T.vscale() * 4 * 2:2]`
            span = vscale_times(index.lanes)
            if stride.value != 1:
                span = Mul(span, IntImm(stride.value))
            if span.dtype != stride.dtype:
                span = Cast(stride.dtype, span)
        text = f"{expr(index.base)}:{expr(end_of(index.base, span))}"
        return text if stride.value == 1 else f"{text}:{expr(stride)}"
    return printer.exprs.expr(index)


@RULES.register(Evaluate)
def _evaluate(printer: StmtPrinter, node: Evaluate, alone: bool) -> None:
    value = node.value
    if type(value) is Call and value.op == "ret" and len(value.args) == 1:
        printer.line(f"return {printer.exprs.expr(value.expr_arg(0))}")  # as TVM prints it
        return
    text = printer.exprs.expr(value)
    printer.line(text if type(value) is Call else f"T.evaluate({text})")


@RULES.register(Bind)
def _bind(printer: StmtPrinter, node: Bind, alone: bool) -> None:
    var, call = node.var, node.value
    if var.pointer is not None and type(call) is Call and call.dtype.is_handle:
        value = printer.exprs.typed_call(call, f"{var_constructor(var)}.ty")
    else:
        value = printer.exprs.expr(node.value)
    name = printer.names.define(node.var, node.var.name)
    printer.line(f"{name}: T.let[{type_annotation(node.var)}] = {value}")


@RULES.register(AssertStmt)
def _assert(printer: StmtPrinter, node: AssertStmt, alone: bool) -> None:
    condition = printer.exprs.expr(node.condition)
    message = ", ".join(quote(part) for part in node.message)
    printer.line(f"assert {condition}, ({quote(node.kind)}, [{message}])")


@RULES.register(IfThenElse)
def _if(printer: StmtPrinter, node: IfThenElse, alone: bool) -> None:
    printer.open(f"if {printer.exprs.expr(node.condition)}:")
    printer.body(node.then_case)
    printer.close()
    if node.else_case is not None:
        printer.open("else:")
        printer.body(node.else_case)
        printer.close()


@RULES.register(While)
def _while(printer: StmtPrinter, node: While, alone: bool) -> None:
    printer.open(f"while {printer.exprs.expr(node.condition)}:")
    printer.body(node.body)
    printer.close()


@RULES.register(Break)
def _break(printer: StmtPrinter, node: Break, alone: bool) -> None:
    printer.line("T.break_loop()")


@RULES.register(Continue)
def _continue(printer: StmtPrinter, node: Continue, alone: bool) -> None:
    printer.line("T.continue_loop()")


@RULES.register(AllocBuffer)
def _alloc(printer: StmtPrinter, node: AllocBuffer, alone: bool) -> None:
    if is_scalar_alloc(node):
        _print_scalar(printer, node, None)
        return
    _print_alloc(printer, node)


def _print_alloc(printer: StmtPrinter, node: AllocBuffer) -> None:
    """`x = T.alloc_buffer(...)` (or `T.alloc_shared`, ... for its scope)."""
    buffer = node.buffer
    name = define_buffer(printer, buffer)
    scope = buffer.scope
    function = _ALLOC_FUNCTION.get(scope, "T.alloc_buffer")
    options = buffer_options(printer, buffer, name)
    if scope in _ALLOC_FUNCTION:
        options = [option for option in options if not option.startswith("scope=")]
    if node.annotations.items:
        options.append(f"annotations={format_attrs(node.annotations, printer.exprs)}")
    printer.line(f"{name} = {buffer_call(printer, function, buffer, name, options=options)}")


@RULES.register(DeclBuffer)
def _decl(printer: StmtPrinter, node: DeclBuffer, alone: bool) -> None:
    buffer = node.buffer
    source = node.data if node.data is not None else buffer.data
    owner = printer.data_owners.get(source) if isinstance(source, Var) else None
    if owner is not None and owner in printer.names and _is_view(buffer, owner):
        dims = ", ".join(printer.exprs.expr(dim) for dim in buffer.shape)
        owner_name = printer.exprs.buffer_name(owner)
        name = printer.names.define(buffer, buffer.name)
        _take_data(printer, buffer, name)
        printer.line(f"{name} = {owner_name}.view({dims})")
        return
    data = None
    if not (isinstance(source, Var) and source not in printer.names):
        data = printer.exprs.expr(source)
    name = printer.names.define(buffer, buffer.name)
    options = [f"data={data}"] if data is not None else []
    options += buffer_options(printer, buffer, name)
    _take_data(printer, buffer, name)
    printer.line(f"{name} = {buffer_call(printer, 'T.decl_buffer', buffer, name, options=options)}")


def _take_data(printer: StmtPrinter, buffer: Buffer, name: str) -> None:
    """A declaration over existing memory leaves the handle printing as its first owner's
    (`B.data`, as the text wrote it); a handle not yet named becomes `name.data`."""
    if buffer.data not in printer.names:
        printer.names.alias(buffer.data, f"{name}.data")
        printer.data_owners[buffer.data] = buffer


def _is_view(buffer: Buffer, owner: Buffer) -> bool:
    """`B.view(dims)`: same memory, element type and layout as `owner`, another shape."""
    return (
        buffer.dtype == owner.dtype
        and buffer.scope == owner.scope
        and not buffer.strides
        and has_default_offset(buffer)
        and not layout_options(buffer)
        and not same_expr(buffer.shape, owner.shape)
    )


@RULES.register(AttrStmt)
def _attr(printer: StmtPrinter, node: AttrStmt, alone: bool) -> None:
    target = node.node
    if node.key in _THREAD_KEYS and isinstance(target, IterVar):
        _launch_thread(printer, node, target, alone)
        return
    exprs = printer.exprs
    if _is_attr_dict_node(target):
        items = []
        body: Stmt = node
        while type(body) is AttrStmt and _is_attr_dict_node(body.node):
            items.append(f"{quote(body.key)}: {exprs.expr(body.value)}")
            body = body.body
        _scope(printer, f"T.attr({{{', '.join(items)}}})", body, alone)
        return
    value = exprs.expr(node.value)
    _scope(
        printer,
        f"T.attr({format_value(target, exprs)}, {quote(node.key)}, {value})",
        node.body,
        alone,
    )


def _scope(printer: StmtPrinter, head: str, body: Stmt, alone: bool) -> None:
    """`with head:` and the body; alone in its parent's body, the scope runs to the end of
    it, and TVM prints `head` as a statement followed by the body."""
    if alone:
        printer.line(head)
        printer.body(body)
        return
    printer.open(f"with {head}:")
    printer.body(body)
    printer.close()


def _is_attr_dict_node(target: object) -> bool:
    return target is None or (type(target) is IntImm and target.value == 0) or target == 0


def _launch_thread(printer: StmtPrinter, node: AttrStmt, thread: IterVar, alone: bool) -> None:
    extent = printer.exprs.expr(node.value)
    var = thread.var
    if var not in printer.names and var in printer.shared_threads:
        name = printer.names.define(var, var.name)
        printer.line(f"{name} = T.env_thread({quote(thread.thread_tag)})")
    if var in printer.names:
        printer.open(f"with T.launch_thread({printer.names.get(var)}, {extent}):")
        printer.body(node.body)
        printer.close()
        return
    call = f"T.launch_thread({quote(thread.thread_tag)}, {extent})"
    if alone:
        # the launch scopes over the rest of the parent's body: no nesting needed
        name = printer.names.define(var, var.name)
        printer.line(f"{name} = {call}")
        printer.body(node.body)
        return
    printer.names.push()
    name = printer.names.define(var, var.name)
    printer.begin(f"with {call} as {name}:")
    printer.body(node.body)
    printer.close()


@RULES.register(SeqStmt)
def _seq(printer: StmtPrinter, node: SeqStmt, alone: bool) -> None:
    printer.body(node)


@RULES.register(For)
def _for(printer: StmtPrinter, node: For, alone: bool) -> None:
    loops.print_for(printer, node)


@RULES.register(SBlockRealize)
def _realize(printer: StmtPrinter, node: SBlockRealize, alone: bool) -> None:
    blocks.print_realize(printer, node)


@RULES.register(SBlock)
def _block(printer: StmtPrinter, node: SBlock, alone: bool) -> None:
    printer.open(f"with T.sblock({quote(node.name)}):")
    blocks.print_block_contents(printer, node)
    printer.close()


@RULES.register(Stmt)
def _unknown(printer: StmtPrinter, node: Stmt, alone: bool) -> None:
    printer.line(f"# <{type(node).__name__}>")
