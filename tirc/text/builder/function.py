"""Building a PrimFunc from a `@T.prim_func` definition: its signature, its body, and, for
s-tir, the root block TVM adds around the body.

Parameters are handles viewed through `buffer_map` (`A: T.Buffer(...)`, or `a: T.handle`
and `T.match_buffer(a, ...)`) and scalars (`n: T.int32`). An s-tir body that is not itself
one block without iteration variables is wrapped in a block named "root" when it holds
blocks or allocates through `T.sblock_alloc_buffer`.
"""

from __future__ import annotations

import re
from typing import Any

from tirc.diagnostics import DiagnosticError, Source
from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.ir.stmt import Attrs, SBlock, SBlockRealize, Stmt
from tirc.text.builder.context import CONSTRUCTION_ERRORS, BuildError, Context, SilentError
from tirc.text.builder.decorators import FunctionOptions
from tirc.text.builder.frames import FunctionFrame
from tirc.text.builder.namespace import SymbolicShape
from tirc.text.builder.regions import infer_regions
from tirc.text.builder.scope import Scope
from tirc.text.builder.stmt import Builder, Declared, names_in
from tirc.text.builder.values import DTypeValue, HandleType, Poison, handle_pointer
from tirc.text.syntax import parse_syntax, tree

LEGACY_SPELLING = re.compile(r"\.\s*(block|block_attr)\s*\(")


def uses_legacy_spelling(context: Context, node: tree.FunctionDef) -> bool:
    """Whether the function says `T.block` or `T.block_attr` (TVM before 0.22). A search of
    its text: cheaper than walking its tree, and a false hit only in a string or comment."""
    return LEGACY_SPELLING.search(context.source.text, node.start, node.end) is not None


def scalar_annotation_dtypes(builder: Builder, node: tree.FunctionDef) -> dict[str, Any]:
    """Dtypes of parameters annotated `T.<dtype>`, read before the signature is evaluated."""
    result = {}
    for param in node.params:
        annotation = param.annotation
        if isinstance(annotation, tree.Attribute) and dt.is_dtype_name(annotation.attr):
            result[param.name] = dt.parse_dtype(annotation.attr)
    return result


def mentioned_names(node: tree.FunctionDef) -> set[str]:
    """Names the signature's annotations mention, also inside shape strings (`("n",)`)."""
    names: set[str] = set()
    stack: list[Any] = [p.annotation for p in node.params] + [node.returns]
    while stack:
        item = stack.pop()
        if isinstance(item, tree.Name):
            names.add(item.id)
        elif isinstance(item, tree.Constant) and isinstance(item.value, str):
            names.update(
                word for word in item.value.replace("*", " ").split() if word.isidentifier()
            )
        elif isinstance(item, tuple):
            stack.extend(item)
        elif isinstance(item, tree.Syntax):
            stack.extend(getattr(item, name) for name in item.__slots__)
    return names


def declare_symbolic_shapes(builder: Builder, frame: FunctionFrame, node: tree.FunctionDef) -> None:
    """A fresh int64 variable for each module-level TypeVar the signature mentions."""

    parameters = {p.name for p in node.params}
    for name in sorted(mentioned_names(node) - parameters):
        try:
            value = builder.scope.lookup(name)
        except KeyError:
            continue
        if isinstance(value, SymbolicShape):
            var = Var(name, dt.INT64)
            frame.signature_vars[name] = var
            builder.scope.bind(name, var)


def shape_strings(annotation: tree.Expr) -> list[tuple[str, tree.Constant]]:
    """The strings in the shapes of the T.Buffer(...) calls of an annotation."""
    found: list[tuple[str, tree.Constant]] = []
    stack: list[Any] = [annotation]
    while stack:
        item = stack.pop()
        if isinstance(item, tree.Call):
            stack.extend(item.args)
            stack.extend(k.value for k in item.keywords)
            if isinstance(item.func, tree.Attribute) and item.func.attr == "Buffer":
                shapes = list(item.args[:1]) + [k.value for k in item.keywords if k.name == "shape"]
                for shape in shapes:
                    elements = (
                        shape.items if isinstance(shape, (tree.Tuple, tree.List)) else (shape,)
                    )
                    for element in elements:
                        if isinstance(element, tree.Constant) and isinstance(element.value, str):
                            found.append((element.value, element))
        elif isinstance(item, tree.Subscript):
            stack.append(item.value)
            stack.extend(item.indices)
    return found


def declare_shape_strings(builder: Builder, annotation: tree.Expr) -> None:
    """A quoted shape declares its variables before the annotation is evaluated, so the
    rest of the shape can use them (`T.Buffer(("n", n * 2))`), as in TVM."""

    for text, node in shape_strings(annotation):
        names = [text] if text.isidentifier() else []
        if not names:
            try:
                names = names_in(parse_syntax(Source("<shape>", text)))
            except DiagnosticError:
                continue  # reported when the shape itself is read
        for name in names:
            if not builder.scope.contains(name):
                builder.shape_variable(name, builder.span(node))


def bind_parameter(builder: Builder, frame: FunctionFrame, param: tree.Parameter) -> None:
    if param.annotation is None:
        raise builder.error(param, f"parameter '{param.name}' needs a type annotation")
    declare_shape_strings(builder, param.annotation)
    value = builder.check_value(builder.evaluate(param.annotation, (param.name,)))
    span = builder.span(param)
    if isinstance(value, Buffer):
        var = Var(param.name, dt.HANDLE, span=span)
        frame.params.append(var)
        frame.buffer_map.append((var, value))
        builder.scope.bind(param.name, value)
        return
    if isinstance(value, Declared):
        value = value.value
    if isinstance(value, DTypeValue):
        existing = frame.signature_vars.get(param.name)
        var = (
            existing
            if existing is not None and existing.dtype == value.dtype
            else Var(param.name, value.dtype, span=span)
        )
    elif isinstance(value, HandleType):
        var = Var(param.name, dt.HANDLE, handle_pointer(value), span=span)
    elif isinstance(value, Var):
        var = value
    else:
        raise builder.error(
            param.annotation,
            f"a parameter type must be T.Buffer(...), a dtype or T.handle, not {value!r}",
        )
    frame.params.append(var)
    builder.scope.bind(param.name, var)


class _BlockFound(Exception):
    pass


class _BlockFinder(Visitor):
    """Stops at the first block; skips expressions, which hold no statements (an unrolled
    kernel's body is mostly long index expressions)."""

    def visit_SBlockRealize(self, node: SBlockRealize) -> None:
        raise _BlockFound()

    def visit_PrimExpr(self, node: PrimExpr) -> None:
        pass


def contains_block(stmt: Stmt) -> bool:
    try:
        _BlockFinder().visit(stmt)
    except _BlockFound:
        return True
    return False


class Replace(Mutator):
    def __init__(self, replacements: dict[int, SBlockRealize]):
        self.replacements = replacements

    def visit_SBlockRealize(self, node: SBlockRealize) -> Any:
        replacement = self.replacements.get(id(node))
        return replacement if replacement is not None else self.generic_visit(node)


def finish_body(builder: Builder, frame: FunctionFrame, body: Stmt) -> Stmt:
    """Infer the regions of top-level blocks that turned out not to be the root, and add
    the root block an s-tir body needs."""

    candidates = frame.root_candidates
    is_root = (
        frame.is_s_tir
        and len(candidates) == 1
        and body is candidates[0][0]
        and not frame.root_buffers
    )
    if is_root:
        return body
    replacements = {}
    for realize, need_reads, need_writes in candidates:
        if need_reads or need_writes:
            replacements[id(realize)] = infer_regions(builder, realize, need_reads, need_writes)
    if replacements:
        body = Replace(replacements).visit(body)
    if frame.is_s_tir and (frame.root_buffers or contains_block(body)):
        root = SBlock("root", (), (), (), body, None, tuple(frame.root_buffers), span=frame.span)
        body = SBlockRealize((), IntImm(1, dt.BOOL), root, span=frame.span)
    return body


def build_function(
    context: Context, node: tree.FunctionDef, options: FunctionOptions, scope: Scope, legacy: bool
) -> PrimFunc | None:
    """The PrimFunc of a definition; None (with errors reported) when it has errors."""
    builder = Builder(context, scope.child())
    is_legacy = legacy or uses_legacy_spelling(context, node)
    is_s_tir = options.s_tir if options.s_tir is not None else is_legacy
    span = context.span(node)
    frame = FunctionFrame(node.name, span, is_s_tir, options.private, is_legacy)
    frame.signature_dtypes = scalar_annotation_dtypes(builder, node)
    builder.function = frame
    builder.frames.append(frame)
    declare_symbolic_shapes(builder, frame, node)
    errors_before = len(context.diagnostics)
    for param in node.params:
        try:
            bind_parameter(builder, frame, param)
        except BuildError as error:
            context.report(error)
            builder.scope.bind(param.name, Poison())
        except CONSTRUCTION_ERRORS as problem:
            context.report(builder.error(param, str(problem)))
            builder.scope.bind(param.name, Poison())
        except SilentError:
            builder.scope.bind(param.name, Poison())
    if node.returns is not None:
        try:
            frame.ret_type = return_type(builder, node.returns)
        except BuildError as error:
            context.report(error)
    body = builder.build_body(node.body, builder.scope)
    if len(context.diagnostics) > errors_before:
        return None
    if frame.attrs.get("global_symbol") == node.name:
        # The function's own name is its symbol anyway; the printer leaves the attribute out,
        # so keeping it would make parse(print(m)) differ from m.
        del frame.attrs["global_symbol"]
    try:
        body = finish_body(builder, frame, body)
        return PrimFunc(
            tuple(frame.params),
            tuple(frame.buffer_map),
            body,
            frame.ret_type,
            Attrs(tuple(frame.attrs.items())),
            frame.is_s_tir,
            frame.is_private,
            span=span,
        )
    except BuildError as error:
        context.report(error)
    except CONSTRUCTION_ERRORS as problem:
        context.report(builder.error(span, str(problem)))
    return None


def return_type(builder: Builder, node: tree.Expr) -> Any:
    value = builder.check_value(builder.evaluate(node))
    if isinstance(value, DTypeValue):
        return value.dtype
    if isinstance(value, HandleType):
        return dt.HANDLE
    if value is None:
        return None
    raise builder.error(node, "a return type must be a dtype such as T.int32")
