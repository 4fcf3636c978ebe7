"""Generated programs: hypothesis draws TVMScript text from the shapes of the language
(signatures, loops of every kind, s-tir blocks with axes, reads/writes and init, stores,
lets, conditions, calls of every `T` builtin), mostly well typed so that many reach
verification and lowering, sometimes not, so that the builder's checks are exercised too.

The generator makes its choices through one function, `integer(low, high)`: `programs()`
is the hypothesis strategy (each choice a draw, so a failing program shrinks), and
`random_program(rng)` makes the same choices from a random.Random, about fifty times faster,
for campaigns of many thousand inputs where nothing is shrunk.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from hypothesis import strategies as st

from tests.fuzz.mutate import SPECIAL_NUMBERS, STRINGS, namespace_names

DTYPES = ("float32", "float32", "float16", "float64", "int32", "int32", "int8", "int64", "uint8")
ODD_DTYPES = ("bool", "bfloat16", "float8_e4m3fn", "float32x4", "int32x4", "handle")
FLOAT_CALLS = ("T.exp", "T.sqrt", "T.log", "T.tanh", "T.sigmoid", "T.fabs", "T.floor", "T.erf")
LOOP_KINDS = ("range", "T.serial", "T.parallel", "T.vectorized", "T.unroll")
THREADS = ("blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y", "vthread.x")
INDENT = "    "


@dataclass
class BufferInfo:
    name: str
    shape: tuple[str, ...]
    dtype: str


@dataclass
class Scope:
    ints: list[str] = field(default_factory=list)
    floats: list[str] = field(default_factory=list)
    buffers: list[BufferInfo] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)  # loop variables (what T.axis.remap binds)
    # integer variables known to lie in [0, bound), to index buffers in bounds
    bounds: dict[str, int] = field(default_factory=dict)

    def child(self) -> Scope:
        return Scope(
            list(self.ints),
            list(self.floats),
            list(self.buffers),
            list(self.loops),
            dict(self.bounds),
        )


Choose = Callable[[int, int], int]  # an integer in [low, high]
Item = TypeVar("Item")


class Generator:
    """One program's making; names are fresh by counters."""

    def __init__(self, choose: Choose):
        self.choose = choose
        self.s_tir = self.chance(0.5)
        # How often a choice goes wrong on purpose (a wild call, an odd number): 0 for
        # programs meant to verify and lower, more for those meant to probe the builder.
        self.noise = self.pick((0.0, 0.0, 0.0, 0.01, 0.03))
        self.counter = 0
        self.lines: list[str] = []

    # Choices.

    def chance(self, probability: float) -> bool:
        return self.choose(0, 999) < probability * 1000

    def pick(self, items: Sequence[Item]) -> Item:
        return items[self.choose(0, len(items) - 1)]

    def number(self, low: int, high: int) -> int:
        return self.choose(low, high)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    # Expressions.

    def wrong(self, rate: float = 1.0) -> bool:
        return self.noise > 0 and self.chance(self.noise * rate)

    def literal_int(self) -> str:
        if self.wrong():
            return self.pick(SPECIAL_NUMBERS)
        return str(self.number(0, 16))

    def literal_float(self) -> str:
        if self.wrong():
            return self.pick(("1e300", "-0.0", "1e-45", "T.float32('inf')", "T.float32('nan')"))
        return f"{self.number(-8, 8) / 2}"

    def int_expr(self, scope: Scope, depth: int = 0) -> str:
        roll = self.number(0, 99)
        if roll < 40 and scope.ints:
            return self.pick(scope.ints)
        if roll < 55 or depth > 2:
            return self.literal_int()
        if roll < 80:
            op = self.pick(("+", "-", "*", "//", "%"))
            if op in ("//", "%") and not self.wrong(10):
                return f"{self.int_expr(scope, depth + 1)} {op} {self.number(1, 9)}"
            return f"{self.int_expr(scope, depth + 1)} {op} {self.int_expr(scope, depth + 1)}"
        if roll < 88:
            call = self.pick(("T.min", "T.max", "T.floordiv", "T.floormod", "T.truncdiv"))
            return f"{call}({self.int_expr(scope, depth + 1)}, {self.int_expr(scope, depth + 1)})"
        if roll < 92:
            target = self.pick(("int32", "int64", "int8"))
            return f'T.Cast("{target}", {self.float_expr(scope, depth + 1)})'
        loads = [b for b in scope.buffers if "int" in b.dtype]
        if roll < 96 and loads:
            return self.load(self.pick_buffer(loads), scope, depth + 1)
        if self.wrong(5):
            return self.wild_call(scope, depth + 1)
        return self.literal_int()

    def float_expr(self, scope: Scope, depth: int = 0) -> str:
        roll = self.number(0, 99)
        loads = [b for b in scope.buffers if "float" in b.dtype]
        if roll < 35 and loads:
            return self.load(self.pick_buffer(loads), scope, depth + 1)
        if roll < 50 and scope.floats:
            return self.pick(scope.floats)
        if roll < 60 or depth > 2:
            return self.literal_float()
        if roll < 80:
            op = self.pick(("+", "-", "*", "/"))
            return f"{self.float_expr(scope, depth + 1)} {op} {self.float_expr(scope, depth + 1)}"
        if roll < 88:
            return f"{self.pick(FLOAT_CALLS)}({self.float_expr(scope, depth + 1)})"
        if roll < 93:
            return f'T.Cast("{self.pick(DTYPES)}", {self.int_expr(scope, depth + 1)})'
        if roll < 97:
            return (
                f"T.Select({self.bool_expr(scope, depth + 1)}, "
                f"{self.float_expr(scope, depth + 1)}, {self.float_expr(scope, depth + 1)})"
            )
        if self.wrong(5):
            return self.wild_call(scope, depth + 1)
        return self.literal_float()

    def bool_expr(self, scope: Scope, depth: int = 0) -> str:
        roll = self.number(0, 9)
        if roll < 6 or depth > 2:
            op = self.pick(("<", "<=", ">", ">=", "==", "!="))
            return f"{self.int_expr(scope, depth + 1)} {op} {self.int_expr(scope, depth + 1)}"
        if roll < 8:
            op = self.pick(("and", "or"))
            return f"{self.bool_expr(scope, depth + 1)} {op} {self.bool_expr(scope, depth + 1)}"
        if roll < 9:
            return f"not {self.bool_expr(scope, depth + 1)}"
        return f"T.isnan({self.float_expr(scope, depth + 1)})"

    def value_of(self, dtype: str, scope: Scope) -> str:
        if self.wrong():
            return self.any_value(scope, 1)
        if "float" in dtype:
            return self.float_expr(scope)
        if dtype == "bool":
            return self.bool_expr(scope)
        return self.int_expr(scope)

    def any_value(self, scope: Scope, depth: int) -> str:
        """Anything at all: where a builtin's argument goes, the builder must check it."""
        roll = self.number(0, 9)
        if roll == 0 and scope.buffers:
            return self.pick_buffer(scope.buffers).name
        if roll == 1:
            return self.pick(STRINGS)
        if roll == 2:
            return self.pick(("None", "True", "[]", "()", "{}", '{"a": 1}', "lambda i: i"))
        if roll == 3:
            return f"({self.int_expr(scope, depth)}, {self.int_expr(scope, depth)})"
        if roll == 4:
            return self.float_expr(scope, depth)
        if roll == 5 and scope.buffers:
            buffer = self.pick_buffer(scope.buffers)
            return f"{buffer.name}[{', '.join('0:1' for _ in buffer.shape)}]"
        if roll == 6:
            return self.pick(namespace_names())
        return self.int_expr(scope, depth)

    def wild_call(self, scope: Scope, depth: int) -> str:
        """A call of any name of the T namespace with arguments of any kind."""
        name = self.pick(namespace_names())
        args = [self.any_value(scope, depth + 1) for _ in range(self.number(0, 3))]
        if self.chance(0.2):
            keyword = self.pick(("dtype", "scope", "thread", "annotations", "axis_separators"))
            args.append(f"{keyword}={self.any_value(scope, depth + 1)}")
        return f"{name}({', '.join(args)})"

    def pick_buffer(self, buffers: list[BufferInfo]) -> BufferInfo:
        return self.pick(buffers)

    def indices(self, buffer: BufferInfo, scope: Scope, depth: int = 0) -> str:
        count = len(buffer.shape)
        if self.wrong():
            count = self.number(0, 3)
        items = []
        for axis in range(count):
            if axis >= len(buffer.shape) or self.wrong(3):
                items.append(self.int_expr(scope, depth + 1))
                continue
            extent = buffer.shape[axis]
            fitting = [
                name
                for name, bound in scope.bounds.items()
                if extent == "n" or bound <= int(extent)
            ]
            if fitting and self.chance(0.8):
                items.append(self.pick(fitting))
            elif scope.ints and self.chance(0.7):
                items.append(f"{self.pick(scope.ints)} % {extent}")
            else:
                items.append(f"{extent} - 1")
        return ", ".join(items) if items else "()"

    def load(self, buffer: BufferInfo, scope: Scope, depth: int = 0) -> str:
        return f"{buffer.name}[{self.indices(buffer, scope, depth)}]"

    # Statements.

    def body(
        self, scope: Scope, depth: int, count: int | None = None, block_top: bool = False
    ) -> None:
        """Statements at `depth`; `block_top`: directly in a block or an s-tir function, where
        T.sblock_alloc_buffer belongs."""
        before = len(self.lines)
        for _ in range(count if count is not None else self.number(1, 3)):
            self.statement(scope, depth, block_top)
        if len(self.lines) == before:
            self.emit(depth, "T.evaluate(0)")

    def statement(self, scope: Scope, depth: int, block_top: bool = False) -> None:
        roll = self.number(0, 99)
        nested = depth < 5
        if roll < 25 and nested:
            self.loop(scope, depth)
        elif roll < 40 and nested and self.s_tir:
            self.block(scope, depth)
        elif roll < 60 and scope.buffers:
            buffer = self.pick_buffer(scope.buffers)
            value = self.value_of(buffer.dtype, scope)
            self.emit(depth, f"{self.load(buffer, scope)} = {value}")
        elif roll < 67 and nested:
            self.emit(depth, f"if {self.bool_expr(scope)}:")
            self.body(scope.child(), depth + 1)
            if self.chance(0.4):
                self.emit(depth, "else:")
                self.body(scope.child(), depth + 1)
        elif roll < 75:
            self.let(scope, depth)
        elif roll < 80:
            self.allocation(scope, depth, block_top)
        elif roll < 84 and nested and not self.s_tir:
            name = self.fresh("t")
            self.emit(
                depth, f'{name} = T.launch_thread("{self.pick(THREADS)}", {self.number(1, 8)})'
            )
            scope.ints.append(name)
        elif roll < 88 and self.wrong(10):
            self.emit(depth, f"T.evaluate({self.wild_call(scope, 0)})")
        elif roll < 91:
            self.emit(depth, f'assert {self.bool_expr(scope)}, "fuzz"')
        elif roll < 93 and nested and not self.s_tir:
            self.emit(depth, f"while {self.bool_expr(scope)}:")
            self.body(scope.child(), depth + 1, 1)
        elif self.wrong(10):
            self.emit(depth, self.wild_call(scope, 0))
        else:
            self.emit(depth, "T.evaluate(0)")

    def loop(self, scope: Scope, depth: int) -> None:
        inner = scope.child()
        if self.chance(0.3):
            names = [self.fresh("i") for _ in range(self.number(1, 3))]
            extents = [self.extent(scope) for _ in names]
            self.emit(depth, f"for {', '.join(names)} in T.grid({', '.join(extents)}):")
        else:
            names = [self.fresh("i")]
            extents = [self.extent(scope)]
            if self.chance(0.15):
                thread = self.pick(THREADS)
                self.emit(
                    depth, f'for {names[0]} in T.thread_binding({extents[0]}, thread="{thread}"):'
                )
            else:
                kind = self.pick(LOOP_KINDS)
                if self.chance(0.15):
                    start = self.literal_int()
                    self.emit(depth, f"for {names[0]} in {kind}({start}, {extents[0]}):")
                    extents = [extents[0] if start.isdigit() else "?"]
                else:
                    self.emit(depth, f"for {names[0]} in {kind}({extents[0]}):")
        inner.ints += names
        inner.loops += names
        for name, extent in zip(names, extents, strict=True):
            if extent.isdigit():
                inner.bounds[name] = int(extent)
        self.body(inner, depth + 1)

    def extent(self, scope: Scope) -> str:
        if not self.wrong(3):
            return self.pick(("1", "2", "4", "8", "16", "3"))
        return self.int_expr(scope)

    def block(self, scope: Scope, depth: int) -> None:
        inner = scope.child()
        self.emit(depth, f'with T.sblock("{self.fresh("b")}"):')
        axes: list[str] = []
        bounds: dict[str, int] = {}
        has_reduction = False
        if scope.loops and self.chance(0.5):
            count = self.number(1, min(3, len(scope.loops)))
            bound = scope.loops[-count:]
            axes = [self.fresh("v") for _ in bound]
            kinds = "".join(self.pick(("S", "S", "R")) for _ in bound)
            has_reduction = "R" in kinds
            names, values = ", ".join(axes), ", ".join(bound)
            self.emit(depth + 1, f'{names} = T.axis.remap("{kinds}", [{values}])')
            bounds = {
                a: scope.bounds[b] for a, b in zip(axes, bound, strict=True) if b in scope.bounds
            }
        else:
            for _ in range(self.number(0, 2)):
                axis = self.fresh("v")
                kind = self.pick(("spatial", "spatial", "reduce", "scan", "opaque"))
                has_reduction = has_reduction or kind == "reduce"
                if scope.bounds and not self.wrong(3):
                    binding = self.pick(list(scope.bounds))
                    extent = str(scope.bounds[binding])
                else:
                    binding = self.pick(scope.ints) if scope.ints else self.literal_int()
                    extent = self.extent(scope)
                self.emit(depth + 1, f"{axis} = T.axis.{kind}({extent}, {binding})")
                axes.append(axis)
                if extent.isdigit():
                    bounds[axis] = int(extent)
        # Inside a block only its axes may be used (and, by mistake, an outer variable).
        inner.ints = axes + [name for name in scope.ints if self.wrong()]
        inner.bounds = bounds
        inner.loops = []
        if inner.buffers and self.chance(0.4):
            read = self.pick_buffer(inner.buffers)
            self.emit(depth + 1, f"T.reads({read.name}[{self.region(read, inner)}])")
            written = self.pick_buffer(inner.buffers)
            self.emit(depth + 1, f"T.writes({written.name}[{self.region(written, inner)}])")
        if self.chance(0.1):
            self.emit(depth + 1, f"T.where({self.bool_expr(inner)})")
        if (has_reduction or self.wrong(3)) and self.chance(0.5) and inner.buffers:
            self.emit(depth + 1, "with T.init():")
            buffer = self.pick_buffer(inner.buffers)
            self.emit(
                depth + 2, f"{self.load(buffer, inner)} = {self.value_of(buffer.dtype, inner)}"
            )
        self.body(inner, depth + 1, block_top=True)

    def region(self, buffer: BufferInfo, scope: Scope) -> str:
        parts = []
        for extent in buffer.shape:
            if self.chance(0.5) and scope.ints:
                parts.append(self.pick(scope.ints))
            else:
                parts.append(f"0:{extent}")
        return ", ".join(parts) if parts else "()"

    def let(self, scope: Scope, depth: int) -> None:
        name = self.fresh("x")
        if self.chance(0.5):
            self.emit(depth, f"{name} = {self.int_expr(scope)}")
            scope.ints.append(name)
        elif self.chance(0.5):
            self.emit(depth, f"{name}: T.float32 = {self.float_expr(scope)}")
            scope.floats.append(name)
        else:
            self.emit(depth, f"{name}: T.let[T.int32] = {self.int_expr(scope)}")
            scope.ints.append(name)

    def allocation(self, scope: Scope, depth: int, block_top: bool) -> None:
        name = self.fresh("B")
        shape = tuple(self.pick(("1", "4", "8", "16")) for _ in range(self.number(1, 2)))
        dtype = self.pick(DTYPES)
        block_allocation = self.s_tir and (block_top or self.wrong(3)) and self.chance(0.5)
        call = "T.sblock_alloc_buffer" if block_allocation else "T.alloc_buffer"
        where = f', scope="{self.pick(("global", "shared", "local"))}"' if self.chance(0.3) else ""
        self.emit(depth, f'{name} = {call}(({", ".join(shape)},), "{dtype}"{where})')
        scope.buffers.append(BufferInfo(name, shape, dtype))

    # Functions and files.

    def function(self, name: str, depth: int) -> None:
        scope = Scope()
        params = []
        for index in range(self.number(1, 3)):
            buffer_name = "ABC"[index]
            shape = tuple(self.pick(("4", "8", "16", "1", "n")) for _ in range(self.number(1, 3)))
            dtype = self.pick(ODD_DTYPES) if self.wrong() else self.pick(DTYPES)
            shape_text = ", ".join(f'"{s}"' if s == "n" else s for s in shape)
            params.append(f'{buffer_name}: T.Buffer(({shape_text},), "{dtype}")')
            scope.buffers.append(BufferInfo(buffer_name, shape, dtype))
            if "n" in shape and "n" not in scope.ints:
                scope.ints.append("n")
        if self.chance(0.3):
            params.append("m: T.int32")
            scope.ints.append("m")
        decorator = "@T.prim_func(s_tir=True)" if self.s_tir else "@T.prim_func"
        if self.chance(0.1):
            decorator = decorator.replace(")", ", private=True)") if self.s_tir else decorator
        self.emit(depth, decorator)
        self.emit(depth, f"def {name}({', '.join(params)}):")
        if self.chance(0.1):
            self.emit(depth + 1, 'T.func_attr({"tir.noalias": True})')
        self.body(scope, depth + 1, self.number(1, 4), block_top=self.s_tir)


def make_program(generator: Generator) -> str:
    """The text of a random program: one bare function or a module of one to three."""
    if generator.chance(0.5):
        generator.function("main", 0)
    else:
        generator.emit(0, "@I.ir_module")
        generator.emit(0, "class Module:")
        for index in range(generator.number(1, 3)):
            generator.s_tir = generator.chance(0.5)
            generator.function("main" if index == 0 else f"f{index}", 1)
    return "\n".join(generator.lines) + "\n"


@functools.cache
def integers(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@st.composite
def programs(draw: st.DrawFn) -> str:
    """Random program text, each choice a hypothesis draw."""
    return make_program(Generator(lambda low, high: draw(integers(low, high))))


def random_program(rng: random.Random) -> str:
    """Random program text from `rng`: the same generator, without hypothesis's bookkeeping."""
    return make_program(Generator(rng.randint))
