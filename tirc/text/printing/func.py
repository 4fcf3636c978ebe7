"""PrimFuncs: decorator, signature, `T.func_attr`, and the root block, which prints as the
comment `# with T.sblock("root"):` unless it holds something only the full form can say."""

from __future__ import annotations

from collections.abc import Iterator

from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import AttrStmt, IfThenElse, IterVar, SBlock, SBlockRealize, SeqStmt, Stmt
from tirc.text.printing import blocks
from tirc.text.printing.buffers import SignatureVars, buffer_call, define_buffer, vars_in
from tirc.text.printing.emitter import type_annotation, var_constructor
from tirc.text.printing.literals import quote
from tirc.text.printing.stmt import StmtPrinter
from tirc.text.printing.values import format_attrs


def decorator(func: PrimFunc) -> str:
    options = []
    if func.is_private:
        options.append("private=True")
    if func.is_s_tir:
        options.append("s_tir=True")
    return f"@T.prim_func({', '.join(options)})" if options else "@T.prim_func"


# What a buffer parameter's handle prints as until the body is known not to use it: the
# `A: T.Buffer(...)` form has no name for it, so a body that does falls back to the form
# `a: T.handle` + `A = T.match_buffer(a, ...)`, which TVM 0.27 still reads (for every buffer
# parameter, so that the match_buffers list the buffer map in its order).
_HANDLE_MARK = "\x00handle\x00"


def print_function(printer: StmtPrinter, func: PrimFunc, name: str) -> list[str]:
    """Append the function's lines; return the names of the int64 shape variables that go to
    module-level `TypeVar` declarations, sorted."""
    start = len(printer.lines)
    type_vars = _print_function(printer, func, name, frozenset())
    if not any(_HANDLE_MARK in line for line in printer.lines[start:]):
        return type_vars
    del printer.lines[start:]
    handles = frozenset(var for var, _ in func.buffer_map)
    return _print_function(printer, func, name, handles)


def _print_function(
    printer: StmtPrinter, func: PrimFunc, name: str, handles: frozenset[Var]
) -> list[str]:
    """Print with the buffer parameters of `handles` as handles and match_buffers."""
    printer.names.push()
    signature = _signature_vars(func)
    printer.declare_free_vars = False  # nothing can be declared above the `def` line
    params = ", ".join(
        _parameter(printer, func, param, signature, param in handles) for param in func.params
    )
    printer.declare_free_vars = True
    type_var_names = sorted(printer.names.get(var) or var.name for var in signature.type_vars)
    returns = ""
    if func.ret_type is not None and not func.ret_type.is_void:
        returns = f" -> T.{func.ret_type}"
    printer.line(decorator(func))
    printer.begin(f"def {name}({params}){returns}:")
    _declare_signature_vars(printer, signature.declared)
    for handle, buffer in func.buffer_map:
        if handle in handles:
            buffer_name = define_buffer(printer, buffer)
            call = buffer_call(
                printer, "T.match_buffer", buffer, buffer_name, lead=(printer.exprs.expr(handle),)
            )
            printer.line(f"{buffer_name} = {call}")
    attrs = func.attrs
    if attrs.get("global_symbol") == name:
        attrs = attrs.remove("global_symbol")
    if attrs.items:
        printer.line(f"T.func_attr({format_attrs(attrs, printer.exprs)})")
    printer.shared_threads, printer.thread_declarations = _shared_threads(func.body)
    root = implicit_root(func.body)
    if root is not None:
        printer.line('# with T.sblock("root"):')
        blocks.print_alloc_buffers(printer, root)
        printer.body(root.body)
    else:
        printer.body(func.body)
    printer.close()
    return type_var_names


def implicit_root(body: Stmt) -> SBlock | None:
    """The root block when it can print as a comment, else None."""
    if type(body) is not SBlockRealize or body.iter_values or not blocks.is_true(body.predicate):
        return None
    root = body.block
    if root.name != "root":
        # The comment form reads back as a block named "root" (TVM prints any name so and
        # loses it): print the block itself.
        return None
    if root.annotations.items or root.match_buffers or root.reads or root.writes:
        return None
    if root.init is not None:
        return None
    inner = root.body
    if root.alloc_buffers:
        return root
    if type(inner) is SBlockRealize:
        return root if inner.block.iter_vars else None
    return root if _contains_realize(inner) else None


def _contains_realize(stmt: Stmt) -> bool:
    return any(type(node) is SBlockRealize for node in statements(stmt))


def statements(root: Stmt) -> Iterator[Stmt]:
    """Every statement under `root`, parents first; expressions are not entered, which
    keeps the printer's look-ahead cheap."""
    stack: list[Stmt] = [root]
    while stack:
        node = stack.pop()
        yield node
        if type(node) is SeqStmt:
            stack.extend(reversed(node.stmts))
        elif type(node) is SBlockRealize:
            stack.append(node.block)
        elif type(node) is SBlock:
            stack.append(node.body)
            if node.init is not None:
                stack.append(node.init)
        elif type(node) is IfThenElse:
            if node.else_case is not None:
                stack.append(node.else_case)
            stack.append(node.then_case)
        else:
            body = getattr(node, "body", None)  # For, While, AttrStmt
            if isinstance(body, Stmt):
                stack.append(body)


def _signature_vars(func: PrimFunc) -> SignatureVars:
    params = set(func.params)
    type_vars: set[Var] = set()
    for _, buffer in func.buffer_map:
        for dim in buffer.shape:
            for var in vars_in(dim):
                if var.dtype == dt.INT64 and var not in params:
                    type_vars.add(var)
    return SignatureVars(params=params, type_vars=type_vars)


def _parameter(
    printer: StmtPrinter, func: PrimFunc, param: Var, signature: SignatureVars, as_handle: bool
) -> str:
    buffer = func.buffer_of(param)
    if buffer is not None and not as_handle:
        return _buffer_parameter(printer, param, buffer, signature)
    name = printer.names.get(param)
    if name is None:
        name = printer.names.define(param, param.name)
    return f"{name}: {type_annotation(param)}"


def _buffer_parameter(
    printer: StmtPrinter, handle: Var, buffer: Buffer, signature: SignatureVars
) -> str:
    name = define_buffer(printer, buffer)
    if handle not in printer.names:
        printer.names.alias(handle, _HANDLE_MARK)
    declaration = buffer_call(
        printer, "T.Buffer", buffer, name, always_dtype=True, signature=signature
    )
    return f"{name}: {declaration}"


def _declare_signature_vars(printer: StmtPrinter, declared: list[list[Var]]) -> None:
    """`n = T.int32()` for shape variables the signature spelled as strings."""
    for group in declared:
        names = ", ".join(printer.names.get(var) or var.name for var in group)
        constructors = ", ".join(var_constructor(var) for var in group)
        printer.line(f"{names} = {constructors}")


def _shared_threads(body: Stmt) -> tuple[set[Var], dict[int, list[IterVar]]]:
    """Thread variables launched more than once, declared by `T.env_thread` first; and
    where: before the statement (by id) that holds every launch of the variable, or before
    the item of a sequence that holds its first launch, so that one name covers them all."""
    paths: dict[Var, list[tuple[Stmt, ...]]] = {}
    threads: dict[Var, IterVar] = {}
    stack: list[tuple[Stmt, tuple[Stmt, ...]]] = [(body, ())]
    while stack:
        node, above = stack.pop()
        path = above + (node,)
        if isinstance(node, AttrStmt) and isinstance(node.node, IterVar):
            paths.setdefault(node.node.var, []).append(path)
            threads.setdefault(node.node.var, node.node)
        stack.extend((child, path) for child in reversed(_children(node)))
    declarations: dict[int, list[IterVar]] = {}
    for var, found in paths.items():
        if len(found) < 2:
            continue
        common = 0
        while all(len(p) > common + 1 and p[common] is found[0][common] for p in found):
            common += 1
        # found[0][common - 1] holds every launch; in a sequence, declare before its item
        holder = found[0][max(common - 1, 0)]
        at = found[0][common] if type(holder) is SeqStmt and common > 0 else holder
        declarations.setdefault(id(at), []).append(threads[var])
    shared = {var for var, found in paths.items() if len(found) > 1}
    return shared, declarations


def _children(node: Stmt) -> list[Stmt]:
    """The statements directly under `node`, in order (as `statements` enters them)."""
    if type(node) is SeqStmt:
        return list(node.stmts)
    if type(node) is SBlockRealize:
        return [node.block]
    if type(node) is SBlock:
        return [node.body] if node.init is None else [node.init, node.body]
    if type(node) is IfThenElse:
        return [node.then_case] if node.else_case is None else [node.then_case, node.else_case]
    body = getattr(node, "body", None)  # For, While, AttrStmt
    return [body] if isinstance(body, Stmt) else []


def module_header(type_var_names: list[str], is_bare: bool) -> list[str]:
    lines = ["# from typing import TypeVar"] if type_var_names else []
    if not is_bare:
        lines.append("# from tvm.script import ir as I")
    lines += ["# from tvm.script import tirx as T", "# from tvm.tirx.layout import Axis", ""]
    lines += [f"{name} = TypeVar({quote(name)})" for name in type_var_names]
    return lines
