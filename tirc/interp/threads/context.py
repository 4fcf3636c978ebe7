"""The state of compiling one PrimFunc to Python source: emitted lines, names, bounds, sites.

Expressions compile to `Code` (a Python expression and, for integers, the range of values it
can take); statements emit lines. Every IR variable becomes one Python name; every place that
can fail at run time becomes a numbered Site whose span the runner reports.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tirc.interp.fault import Site
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.node import Node
from tirc.ir.stmt import Stmt

_ATOM = re.compile(r"^(?:[A-Za-z_][A-Za-z_0-9]*|-?[0-9][0-9.e+-]*|True|False)$")
_UNSAFE = re.compile(r"[^A-Za-z_0-9]")


@dataclass(eq=False, slots=True)
class Slot:
    """A place to put code computed before an inner loop: just after a definition.

    `line` moves as lines are inserted before it; `loops` counts the loops around the place.
    """

    line: int
    indent: int
    loops: int
    order: int
    hoisted: dict[str, str] = field(default_factory=dict)  # expression -> its name here


@dataclass(frozen=True, slots=True)
class Code:
    """A Python expression; for integers also the closed range [low, high] of its values.

    A pure expression cannot fail and reads no memory, so it may be computed earlier than
    written: at `slot`, after the latest definition it depends on (None: only constants).
    """

    text: str
    low: int | None = None
    high: int | None = None
    unrounded: str | None = None  # a float before its final rounding, for stores that round
    pure: bool = False
    slot: Slot | None = None
    varying: bool = False  # lanes backend: a numpy array of every lane's value

    @property
    def is_atom(self) -> bool:
        """A name or literal: evaluating it twice costs nothing and changes nothing."""
        return bool(_ATOM.match(self.text))

    @property
    def constant(self) -> int | None:
        if self.low is not None and self.low == self.high:
            return self.low
        return None


@dataclass(frozen=True, slots=True)
class View:
    """How generated code reaches memory of one element type through one handle."""

    memory: str  # the memoryview's name
    base: Code  # element index where the handle points


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a buffer's element [i0, i1, ...] lives: base + offset + sum(i_k * strides[k])."""

    data: Var
    offset: Code
    strides: tuple[Code, ...]
    shape: tuple[Code, ...]


@dataclass
class KernelState:
    """Inside a GPU kernel: the names that hold this thread's and block's coordinates."""

    coordinates: dict[str, str]  # thread tag -> expression of this thread's index
    extents: dict[str, Code]  # thread tag -> launch extent
    thread_vars: dict[Var, str] = field(default_factory=dict)  # variable -> its thread tag
    reducers: list[tuple[str, str]] = field(default_factory=list)  # (combine, identity) names


# compiles a kernel function of the module that a host function launches: (kernel, name,
# module) -> the launch to call with the kernel's arguments
Launcher = Callable[[PrimFunc, str, "IRModule | None"], Callable[..., object]]
# the generated line that launches a GPU kernel: (statement compiler, outermost thread
# binding, kernel name, grid, block, site) -> line (the lockstep model's, given from above)
LaunchLine = Callable[..., str]


@dataclass
class Context:
    lines: list[str] = field(default_factory=list)
    line_nodes: list[Node | None] = field(default_factory=list)
    depth: int = 1
    namespace: dict[str, object] = field(default_factory=dict)
    sites: list[Site] = field(default_factory=list)
    names: dict[Var, str] = field(default_factory=dict)
    bounds: dict[Var, tuple[int | None, int | None]] = field(default_factory=dict)
    layouts: dict[Buffer, Layout] = field(default_factory=dict)
    views: dict[tuple[Var, str], View] = field(default_factory=dict)
    data_types: dict[Var, set[DataType]] = field(default_factory=dict)
    scopes: dict[Var, str] = field(default_factory=dict)  # data var -> scope of its storage
    storages: set[Var] = field(default_factory=set)  # handles known to hold a whole Storage
    constants: set[Var] = field(default_factory=set)  # variables standing for literals
    removable: set[str] = field(default_factory=set)  # names of pure values (see dead_code)
    kernel: KernelState | None = None
    module: IRModule | None = None  # the functions a call_extern may launch as kernels
    body: Stmt | None = None  # the function's body, for facts read off the whole of it
    # its wmma fragments' (m, n, k, layout) (analysis.wmma_fragments), found when a call needs them
    fragment_shapes: dict[Var, tuple[int, int, int, str]] | None = None
    launcher: Launcher | None = None
    launch_line: LaunchLine | None = None
    serial_threads: bool = False  # s-tir: thread-bound loops mean serial loops
    cluster: tuple[int, int, int] | None = None  # the function's cluster shape (ir.cluster)
    result_type: DataType | None = None  # the type the function returns (ir.abi.returned_type)
    current_node: Node | None = None
    loops: int = 0  # loops (and kernels) around the code being emitted
    nesting: int = 0  # blocks open in the Python function being emitted (Python allows 20)
    slots: list[Slot] = field(default_factory=list)  # those still in scope, oldest first
    var_slots: dict[Var, Slot] = field(default_factory=dict)
    affine: dict[Var, tuple[dict[Var, int], int]] = field(default_factory=dict)
    _emitted: int = 0
    _orders: int = 0
    _used: set[str] = field(default_factory=set)
    _counters: dict[str, int] = field(default_factory=dict)  # base name -> last number used
    _constants: dict[int, str] = field(default_factory=dict)

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)
        self.line_nodes.append(self.current_node)
        self._emitted += 1

    @contextmanager
    def indented(self, loop: bool = False) -> Iterator[None]:
        """A nested block (a loop body when `loop`); definitions inside go out of scope after."""
        self.depth += 1
        self.nesting += 1
        self.loops += loop
        start = self._emitted
        scope = len(self.slots)
        try:
            yield
        finally:
            if self._emitted == start:
                self.emit("pass")
            del self.slots[scope:]
            self.loops -= loop
            self.nesting -= 1
            self.depth -= 1

    @contextmanager
    def function_body(self) -> Iterator[None]:
        """The body of a nested `def`: Python counts nested blocks per function."""
        saved = self.nesting
        self.nesting = 0
        try:
            yield
        finally:
            self.nesting = saved

    # hoisting

    def mark(self) -> Slot:
        """A slot at the current position."""
        self._orders += 1
        slot = Slot(len(self.lines), self.depth, self.loops, self._orders)
        self.slots.append(slot)
        return slot

    def define(self, var: Var) -> None:
        """var was just assigned: code depending on it may go right here."""
        self.var_slots[var] = self.mark()

    def hoist(self, code: Code, below: Slot | None = None) -> Code:
        """code, computed once at its slot when a loop lies between there and here (or there
        and `below`, where a larger expression using it will be computed)."""
        slot = code.slot
        loops = self.loops if below is None else below.loops
        if not code.pure or slot is None or code.is_atom or slot.loops >= loops:
            return code
        if slot not in self.slots:
            return code
        known = slot.hoisted.get(code.text)
        if known is not None:
            return Code(known, code.low, code.high, pure=True, slot=slot)
        name = self.fresh("_h")
        slot.hoisted[code.text] = name
        self.removable.add(name)
        line = "    " * slot.indent + f"{name} = {code.text}"
        self.lines.insert(slot.line, line)
        self.line_nodes.insert(slot.line, self.current_node)
        for other in self.slots:
            if other.line > slot.line or (other.line == slot.line and other.order > slot.order):
                other.line += 1
        slot.line += 1
        return Code(name, code.low, code.high, pure=True, slot=slot)

    @contextmanager
    def at(self, node: Node) -> Iterator[None]:
        """Attribute the lines emitted inside to node (for errors Python raises there)."""
        saved = self.current_node
        self.current_node = node
        try:
            yield
        finally:
            self.current_node = saved

    def fresh(self, hint: str) -> str:
        base = _UNSAFE.sub("_", hint) or "v"
        if base[0].isdigit() or keyword.iskeyword(base) or base.startswith("_"):
            base = "v_" + base.lstrip("_")
        name = base
        number = self._counters.get(base, 0)
        while name in self._used:
            number += 1
            name = f"{base}_{number}"
        self._counters[base] = number
        self._used.add(name)
        return name

    def temp(self) -> str:
        return self.fresh("_t")

    def lanes_of(self, element: str, targets: str, iterable: str) -> str:
        """`tuple([element for targets in iterable])`. Python forbids `:=` (our bounds-checked
        indices use it) in a comprehension's iterable, so such an iterable is bound first."""
        if ":=" not in iterable:
            return f"tuple([{element} for {targets} in {iterable}])"
        source = self.temp()
        return f"(({source} := {iterable}), tuple([{element} for {targets} in {source}]))[1]"

    def bind(self, var: Var, low: int | None = None, high: int | None = None) -> str:
        """A Python name for var (the same one if var was bound before), with its bounds."""
        name = self.names.get(var)
        if name is None or not name.isidentifier():
            name = self.fresh(var.name)
            self.names[var] = name
        self.bounds[var] = (low, high)
        return name

    def alias(self, var: Var, code: Code) -> None:
        """Let var stand for an atom (a name or literal) without a Python assignment."""
        self.names[var] = code.text
        self.bounds[var] = (code.low, code.high)
        if code.pure and code.slot is not None:
            self.var_slots[var] = code.slot
        elif code.pure:
            self.var_slots.pop(var, None)
            self.constants.add(var)
        else:
            self.var_slots.pop(var, None)

    def constant(self, value: object, hint: str) -> str:
        """A name in the generated code's namespace holding value."""
        name = self._constants.get(id(value))
        if name is None:
            name = self.fresh("_" + hint)
            self.namespace[name] = value
            self._constants[id(value)] = name
        return name

    def site(self, node: Node | None, what: str, is_access: bool = False) -> int:
        """A numbered place that can fail: node's span, else the enclosing statement's."""
        span = getattr(node, "span", None) or getattr(self.current_node, "span", None)
        self.sites.append(Site(span, what, is_access))
        return len(self.sites) - 1

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"
