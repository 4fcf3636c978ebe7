"""Canonical form of a tirc IRModule, to compare with what TVM 0.27 builds (canonical_tvm.py).

Nested JSON lists. Variables are numbered in order of first appearance (so names never
matter) and written ["v", number, dtype]; a buffer is written in full the first time
(["B", number, name, dtype, shape, strides, elem_offset, alignment, offset_factor, scope])
and as ["B", number] after; a buffer's data pointer is ["data", buffer]. Bitwise operators
are calls, as in tirc. Function attributes TVM keeps but tirc models as fields (s_tir,
global_symbol) appear as the last two entries of a function.
"""

from __future__ import annotations

from typing import Any

from tirc.ir import expr as ir
from tirc.ir import stmt as st
from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk

BINARY = {
    ir.Add: "Add", ir.Sub: "Sub", ir.Mul: "Mul", ir.Div: "Div", ir.Mod: "Mod",
    ir.FloorDiv: "FloorDiv", ir.FloorMod: "FloorMod", ir.Min: "Min", ir.Max: "Max",
    ir.EQ: "EQ", ir.NE: "NE", ir.LT: "LT", ir.LE: "LE", ir.GT: "GT", ir.GE: "GE",
    ir.And: "And", ir.Or: "Or",
}  # fmt: skip
ITER_TYPES = {
    st.IterType.SPATIAL: "S", st.IterType.REDUCE: "R", st.IterType.SCAN: "O",
    st.IterType.OPAQUE: "opaque", st.IterType.THREAD: "thread",
}  # fmt: skip


class Canon:
    def __init__(self, function: PrimFunc):
        self.vars: dict[int, int] = {}
        self.buffers: dict[int, int] = {}
        self.data_owner: dict[int, Buffer] = {}

        def note(node: object) -> None:
            if isinstance(node, Buffer) and id(node.data) not in self.data_owner:
                self.data_owner[id(node.data)] = node

        # Buffers are leaves for walk(); visit them through the places that hold them.
        for _, buffer in function.buffer_map:
            note(buffer)

        def visit(node: object) -> None:
            for name in ("buffer", "alloc_buffers", "source"):
                value = getattr(node, name, None)
                items = value if isinstance(value, tuple) else (value,)
                for item in items:
                    if isinstance(item, Buffer):
                        note(item)
                    elif isinstance(item, BufferRegion):
                        note(item.buffer)

        walk(function.body, visit)

    def var(self, v: ir.Var) -> Any:
        owner = self.data_owner.get(id(v))
        if owner is not None:
            return ["data", self.buffer(owner)]
        if id(v) not in self.vars:
            self.vars[id(v)] = len(self.vars)
        kind = str(v.dtype)
        if v.pointer is not None:
            kind = f"handle:{v.pointer.element}:{v.pointer.scope}"
        return ["v", self.vars[id(v)], kind]

    def buffer(self, b: Buffer) -> Any:
        if id(b) in self.buffers:
            return ["B", self.buffers[id(b)]]
        self.buffers[id(b)] = len(self.buffers)
        elem = None if b.elem_offset is None else self.expr(b.elem_offset)
        return [
            "B", self.buffers[id(b)], b.name, str(b.dtype),
            [self.expr(s) for s in b.shape], [self.expr(s) for s in b.strides], elem,
            b.data_alignment, b.offset_factor, b.scope,
        ]  # fmt: skip

    def value(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return ["py", type(v).__name__, v]
        if isinstance(v, tuple):
            return ["list", [self.value(x) for x in v]]
        if isinstance(v, st.Attrs):
            return ["dict", sorted([k, self.value(x)] for k, x in v.items)]
        return self.expr(v)

    def attrs(self, attrs: st.Attrs) -> Any:
        return sorted([k, self.value(v)] for k, v in attrs.items)

    def expr(self, e: Any) -> Any:
        if isinstance(e, st.TargetAttr):
            return ["target", self.value(e.config)]
        if isinstance(e, ir.Var):
            return self.var(e)
        if isinstance(e, ir.IntImm):
            return ["int", e.value, str(e.dtype)]
        if isinstance(e, ir.FloatImm):
            return ["float", repr(float(e.value)), str(e.dtype)]
        if isinstance(e, ir.StringImm):
            return ["str", e.value]
        name = BINARY.get(type(e))
        if name is not None:
            return [name, self.expr(e.a), self.expr(e.b)]
        if isinstance(e, ir.Not):
            return ["Not", self.expr(e.a)]
        if isinstance(e, ir.Cast):
            return ["Cast", str(e.dtype), self.expr(e.value)]
        if isinstance(e, ir.Select):
            return [
                "Select",
                self.expr(e.condition),
                self.expr(e.true_value),
                self.expr(e.false_value),
            ]
        if isinstance(e, ir.Ramp):
            return ["Ramp", self.expr(e.base), self.expr(e.stride), e.lanes]
        if isinstance(e, ir.Broadcast):
            return ["Broadcast", self.expr(e.value), e.lanes]
        if isinstance(e, ir.Shuffle):
            return ["Shuffle", [self.expr(v) for v in e.vectors], [self.expr(i) for i in e.indices]]
        if isinstance(e, ir.Let):
            return ["Let", self.var(e.var), self.expr(e.value), self.expr(e.body)]
        if isinstance(e, ir.BufferLoad):
            return ["load", self.buffer(e.buffer), [self.expr(i) for i in e.indices]]
        if isinstance(e, ir.Call):
            args = [self.buffer(a) if isinstance(a, Buffer) else self.expr(a) for a in e.args]
            return ["call", str(e.dtype), e.op, args]
        if isinstance(e, Range):
            return [self.expr(e.min), self.expr(e.extent)]
        if isinstance(e, st.IterVar):
            dom = None if e.dom is None else self.expr(e.dom)
            return ["iv", self.var(e.var), dom, ITER_TYPES[e.iter_type], e.thread_tag]
        if isinstance(e, BufferRegion):
            return ["region", self.buffer(e.buffer), [self.expr(r) for r in e.region]]
        if isinstance(e, Buffer):
            return self.buffer(e)
        if isinstance(e, ir.CommReducer):
            return [
                "reducer", [self.var(v) for v in e.lhs], [self.var(v) for v in e.rhs],
                [self.expr(r) for r in e.result], [self.expr(i) for i in e.identity],
            ]  # fmt: skip
        return ["?", type(e).__name__]

    def match(self, m: MatchBufferRegion) -> Any:
        return ["match", self.buffer(m.buffer), self.expr(m.source)]

    def stmt(self, s: Any) -> Any:
        handler = STATEMENTS.get(type(s))
        return handler(self, s) if handler is not None else ["?stmt", type(s).__name__]

    def function(self, f: PrimFunc) -> Any:
        buffers = {id(var): buffer for var, buffer in f.buffer_map}
        params = [
            self.buffer(buffers[id(p)]) if id(p) in buffers else self.var(p) for p in f.params
        ]
        return ["func", params, self.stmt(f.body), self.attrs(f.attrs), f.is_s_tir, f.is_private]


def _for(c: Canon, s: st.For) -> Any:
    binding = None if s.thread_binding is None else c.expr(s.thread_binding)
    step = None if s.step is None else c.expr(s.step)
    return [
        "for", c.var(s.loop_var), c.expr(s.min), c.expr(s.extent), s.kind.value, binding,
        c.attrs(s.annotations), step, c.stmt(s.body),
    ]  # fmt: skip


def _block(c: Canon, s: st.SBlock) -> Any:
    return [
        "block", s.name, [c.expr(iv) for iv in s.iter_vars], [c.buffer(b) for b in s.alloc_buffers],
        [c.match(m) for m in s.match_buffers], [c.expr(r) for r in s.reads],
        [c.expr(r) for r in s.writes], c.attrs(s.annotations),
        None if s.init is None else c.stmt(s.init), c.stmt(s.body),
    ]  # fmt: skip


def _attr(c: Canon, s: st.AttrStmt) -> Any:
    node = c.buffer(s.node) if isinstance(s.node, Buffer) else c.expr(s.node)
    return ["attr", node, s.key, c.expr(s.value), c.stmt(s.body)]


STATEMENTS: dict[type, Any] = {
    st.SeqStmt: lambda c, s: ["seq", [c.stmt(x) for x in s.stmts]],
    st.For: _for,
    st.SBlockRealize: lambda c, s: [
        "realize",
        [c.expr(v) for v in s.iter_values],
        c.expr(s.predicate),
        c.stmt(s.block),
    ],
    st.SBlock: _block,
    st.BufferStore: lambda c, s: [
        "store",
        c.buffer(s.buffer),
        [c.expr(i) for i in s.indices],
        c.expr(s.value),
    ],
    st.Evaluate: lambda c, s: ["eval", c.expr(s.value)],
    st.IfThenElse: lambda c, s: [
        "if",
        c.expr(s.condition),
        c.stmt(s.then_case),
        None if s.else_case is None else c.stmt(s.else_case),
    ],
    st.While: lambda c, s: ["while", c.expr(s.condition), c.stmt(s.body)],
    st.AttrStmt: _attr,
    st.AssertStmt: lambda c, s: ["assert", c.expr(s.condition), s.kind, list(s.message)],
    st.Bind: lambda c, s: ["bind", c.var(s.var), c.expr(s.value)],
    st.AllocBuffer: lambda c, s: ["alloc", c.buffer(s.buffer), c.attrs(s.annotations)],
    st.DeclBuffer: lambda c, s: [
        "decl",
        c.buffer(s.buffer),
        None if s.data is None else c.expr(s.data),
    ],
    st.Break: lambda c, s: ["break"],
    st.Continue: lambda c, s: ["continue"],
}


def canonical(module: IRModule) -> Any:
    return [
        [name, Canon(f).function(f)] for name, f in sorted(module.functions, key=lambda x: x[0])
    ]
