"""Generic traversal of IR trees: a Visitor and a Mutator that dispatch on a table, and
`Dispatch`, a typed table of handlers by node class for the rules written as functions.

Subclasses define `visit_<ClassName>` for the nodes they care about; every other node is walked
field by field. The Mutator rebuilds a node only when a child changed, so unchanged subtrees
are shared. Vars and Buffers are leaves by default: they are referenced from many places, and
rewriting one is a decision (see `substitute`), not a side effect of walking.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, TypeVar, overload

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Var
from tirc.ir.node import Node

NodeT = TypeVar("NodeT", bound=Node)
ContextT = TypeVar("ContextT")
ResultT = TypeVar("ResultT")
ArgsP = ParamSpec("ArgsP")
FirstT = TypeVar("FirstT")
SecondT = TypeVar("SecondT")
ThirdT = TypeVar("ThirdT")


def _child_fields(cls: type) -> tuple[str, ...]:
    """The constructor fields of an IR class, in order, without `span`."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init and f.name != "span")


# Typed as a function of a class: `functools.cache` takes `*args: Hashable`, and mypy does not
# see `type[Node]` as Hashable (python/mypy#11470), though every class is.
child_fields: Callable[[type], tuple[str, ...]] = cache(_child_fields)


def _dispatch(visitor_cls: type[_Dispatching], node_cls: type) -> Callable[..., Any] | None:
    """The visitor's `visit_<Class>` method for the node's class or its nearest base, or None;
    remembered in the visitor class's own table, so a visitor class made inside a function
    is freed with its table (a global cache would keep every such class alive)."""
    table = visitor_cls._methods
    try:
        return table[node_cls]
    except KeyError:
        pass
    found = None
    for klass in node_cls.__mro__:
        found = getattr(visitor_cls, f"visit_{klass.__name__}", None)
        if found is not None:
            break
    table[node_cls] = found
    return found


class _Dispatching:
    """Gives each subclass its own method table (see _dispatch)."""

    _methods: ClassVar[dict[type, Callable[..., Any] | None]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._methods = {}


LEAVES = (Var, Buffer)


class Visitor(_Dispatching):
    """Walks a tree in field order (definitions before uses in a well-formed program)."""

    def visit(self, node: object) -> None:
        if isinstance(node, Node):
            method = _dispatch(type(self), type(node))
            if method is not None:
                method(self, node)
            elif not isinstance(node, LEAVES):
                self.generic_visit(node)
        elif isinstance(node, tuple):
            for item in node:
                self.visit(item)

    def generic_visit(self, node: Node) -> None:
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, (Node, tuple)):
                self.visit(value)


class Mutator(_Dispatching):
    """Returns a rewritten tree; the same object where nothing changed."""

    def visit(self, node: Any) -> Any:
        if isinstance(node, Node):
            method = _dispatch(type(self), type(node))
            if method is not None:
                return method(self, node)
            if isinstance(node, LEAVES):
                return node
            return self.generic_visit(node)
        if isinstance(node, tuple):
            items = tuple(self.visit(item) for item in node)
            if all(new is old for new, old in zip(items, node, strict=True)):
                return node
            return items
        return node

    def generic_visit(self, node: NodeT) -> NodeT:
        changes: dict[str, Any] = {}
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, (Node, tuple)):
                new = self.visit(value)
                if new is not value:
                    changes[name] = new
        if not changes:
            return node
        return dataclasses.replace(node, **changes)


def walk(node: object, callback: Callable[[Node], None]) -> None:
    """Calls `callback` on every node of the tree, parents before children (in field order,
    as a Visitor goes; variables and buffers are called on, not entered)."""
    _walk(node, callback)


def _walk(item: object, callback: Callable[[Node], None]) -> None:
    # one call a level, where a Visitor makes three: passes and queries walk whole programs.
    # A module function, not a closure over itself, which would be a cycle for the collector
    if isinstance(item, Node):
        callback(item)
        if isinstance(item, LEAVES):
            return
        for name in child_fields(type(item)):
            value = getattr(item, name)
            if isinstance(value, (Node, tuple)):
                _walk(value, callback)
    elif isinstance(item, tuple):
        for value in item:
            _walk(value, callback)


def uses_var(node: object, variables: set[Var] | Var) -> bool:
    """Whether `node` mentions any of `variables` (compared by identity)."""
    wanted = {id(variables)} if isinstance(variables, Var) else {id(v) for v in variables}
    found = False

    def look(item: Node) -> None:
        nonlocal found
        if id(item) in wanted:
            found = True

    walk(node, look)
    return found


def vars_in(node: object) -> set[Var]:
    """Every variable that `node` mentions (bound inside it or not), as `walk` reaches them."""
    found: set[Var] = set()
    walk(node, lambda item: found.add(item) if isinstance(item, Var) else None)
    return found


class Dispatch(Generic[ContextT, ArgsP, ResultT]):
    """Handlers by node class, each a function `(context, node, *args) -> result`:

        RULES: Dispatch[Printer, [int | None], str] = Dispatch("CUDA expression")

        @RULES.register(E.Min, E.Max)
        def _min_max(printer: Printer, node: E.Min | E.Max, lane: int | None) -> str: ...

    The checker holds each handler to the classes it is registered for (its node parameter
    must accept each of them), the table's context, extra arguments and result; `RULES(printer,
    node, lane)` calls the handler of the node's class or of its nearest registered base.
    """

    def __init__(self, what: str) -> None:
        self.what = what  # for the message when a node has no handler
        self._handlers: dict[type, Callable[..., ResultT]] = {}
        self._found: dict[type, Callable[..., ResultT] | None] = {}

    # The node parameter is checked against the union of up to three classes; past that,
    # against their nearest common base, which the handler then takes.
    @overload
    def register(
        self, first: type[FirstT], /
    ) -> Callable[
        [Callable[Concatenate[ContextT, FirstT, ArgsP], ResultT]],
        Callable[Concatenate[ContextT, FirstT, ArgsP], ResultT],
    ]: ...
    @overload
    def register(
        self, first: type[FirstT], second: type[SecondT], /
    ) -> Callable[
        [Callable[Concatenate[ContextT, FirstT | SecondT, ArgsP], ResultT]],
        Callable[Concatenate[ContextT, FirstT | SecondT, ArgsP], ResultT],
    ]: ...
    @overload
    def register(
        self, first: type[FirstT], second: type[SecondT], third: type[ThirdT], /
    ) -> Callable[
        [Callable[Concatenate[ContextT, FirstT | SecondT | ThirdT, ArgsP], ResultT]],
        Callable[Concatenate[ContextT, FirstT | SecondT | ThirdT, ArgsP], ResultT],
    ]: ...
    @overload
    def register(
        self, *classes: type[FirstT]
    ) -> Callable[
        [Callable[Concatenate[ContextT, FirstT, ArgsP], ResultT]],
        Callable[Concatenate[ContextT, FirstT, ArgsP], ResultT],
    ]: ...
    def register(
        self, *classes: type
    ) -> Callable[[Callable[..., ResultT]], Callable[..., ResultT]]:
        def decorate(handler: Callable[..., ResultT]) -> Callable[..., ResultT]:
            for cls in classes:
                self._handlers[cls] = handler
            self._found.clear()
            return handler

        return decorate

    def get(self, cls: type) -> Callable[Concatenate[ContextT, Any, ArgsP], ResultT] | None:
        """The handler of cls (or of its nearest registered base), or None: one lookup where
        a caller has its own answer for a class with no handler."""
        return self._lookup(cls)

    def _lookup(self, cls: type) -> Callable[..., ResultT] | None:
        try:
            return self._found[cls]
        except KeyError:
            pass
        found = next((self._handlers[k] for k in cls.__mro__ if k in self._handlers), None)
        self._found[cls] = found
        return found

    def __call__(
        self, context: ContextT, node: object, *args: ArgsP.args, **kwargs: ArgsP.kwargs
    ) -> ResultT:
        handler = self._lookup(type(node))
        if handler is None:
            raise NoHandler(f"{self.what}: no rule for {type(node).__name__}", node)
        return handler(context, node, *args, **kwargs)


class NoHandler(LookupError):
    """A node that a Dispatch table has no handler for; `node` is it, for a located error."""

    def __init__(self, message: str, node: object) -> None:
        super().__init__(message)
        self.node = node
