"""Canonical form of what Apache TVM 0.27's parser builds, for comparison with tirc's IR.

Run with TVM's own interpreter (never imported by tirc or its tests):
    /work/tvm-venv/bin/python tests/text/oracle/canonical_tvm.py FILE.tir... > out.jsonl
One JSON line per file: {"file": ..., "canonical": ...} or {"file": ..., "error": ...}.
The format is the one canonical_tirc.py writes; see that module for its rules.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import tvm  # noqa: F401  (the oracle)

FOR_KINDS = {0: "serial", 1: "parallel", 2: "vectorized", 3: "unroll", 4: "thread_binding"}
ITER_TYPES = {0: "S", 1: "thread", 2: "R", 3: "O", 4: "opaque"}
BINARY = {
    "prim.Add": "Add", "prim.Sub": "Sub", "prim.Mul": "Mul", "prim.Div": "Div", "prim.Mod": "Mod",
    "prim.FloorDiv": "FloorDiv", "prim.FloorMod": "FloorMod", "prim.Min": "Min", "prim.Max": "Max",
    "prim.EQ": "EQ", "prim.NE": "NE", "prim.LT": "LT", "prim.LE": "LE", "prim.GT": "GT",
    "prim.GE": "GE", "prim.And": "And", "prim.Or": "Or",
}  # fmt: skip
BITWISE = {
    "prim.BitwiseAnd": "bitwise_and", "prim.BitwiseOr": "bitwise_or",
    "prim.BitwiseXor": "bitwise_xor", "prim.LShift": "shift_left", "prim.RShift": "shift_right",
}  # fmt: skip
HIDDEN_ATTRS = {"global_symbol", "s_tir"}


def key(obj: Any) -> str:
    info = getattr(type(obj), "__tvm_ffi_type_info__", None)
    return info.type_key if info is not None else type(obj).__name__


def dtype_of(obj: Any) -> str:
    ty = obj.ty
    k = key(ty)
    if k == "ir.PrimType":
        return str(ty.dtype) or "void"
    if k == "ir.PointerType":
        return "handle"
    return "void"


# TVM 0.27's ops that tirc reads as one of its intrinsics under another name (the one
# TVMScript spells, or an older one)
TIRC_NAMES = {
    "ptx_legacy.mma": "ptx_mma",
    "ptx_legacy.ldmatrix": "ptx_ldmatrix",
    "s_tir.cp_async_raw": "ptx_cp_async",
    "tvm_call_packed": "call_packed",
    "tvm_call_cpacked": "call_cpacked",
    "tvm_call_packed_lowered": "call_packed_lowered",
    "tvm_call_cpacked_lowered": "call_cpacked_lowered",
}


class Canon:
    def __init__(self) -> None:
        self.vars: dict[int, int] = {}
        self.buffers: dict[int, int] = {}

    def var(self, v: Any) -> Any:
        if key(v.ty) == "tirx.BufferType":
            return self.buffer(v)
        handle = v.__chandle__()
        if handle not in self.vars:
            self.vars[handle] = len(self.vars)
        kind = dtype_of(v)
        if key(v.ty) == "ir.PointerType":
            element = v.ty.element_type
            kind = f"handle:{element.dtype if key(element) == 'ir.PrimType' else element}:{v.ty.storage_scope}"  # noqa: E501
        return ["v", self.vars[handle], kind]

    def buffer(self, b: Any) -> Any:
        handle = b.__chandle__()
        if handle in self.buffers:
            return ["B", self.buffers[handle]]
        self.buffers[handle] = len(self.buffers)
        t = b.ty
        eo = t.elem_offset
        elem = None if (key(eo) == "ir.IntImm" and eo.value == 0) else self.expr(eo)
        return [
            "B", self.buffers[handle], b.name, str(t.dtype),
            [self.expr(s) for s in t.shape], [self.expr(s) for s in t.strides], elem,
            int(t.data_alignment), int(t.offset_factor), str(t.storage_scope),
        ]  # fmt: skip

    def value(self, v: Any) -> Any:
        for kind in (bool, int, float, str):
            if isinstance(v, kind) and not hasattr(type(v), "__tvm_ffi_type_info__"):
                return ["py", kind.__name__, kind(v)]
        if v is None:
            return ["py", "NoneType", None]
        if isinstance(v, tvm.ir.Array) or isinstance(v, (list, tuple)):
            return ["list", [self.value(x) for x in v]]
        if isinstance(v, tvm.ir.Map) or isinstance(v, dict):
            return ["dict", sorted([str(k), self.value(x)] for k, x in v.items())]
        return self.expr(v)

    def attrs(self, m: Any, hidden: set[str] = frozenset()) -> Any:  # type: ignore[assignment]
        items = dict(m.items()) if m is not None else {}
        return sorted([k, self.value(v)] for k, v in items.items() if k not in hidden)

    def expr(self, e: Any) -> Any:
        k = key(e)
        if k in ("ir.Var", "tirx.Var", "ir.SizeVar"):
            return self.var(e)
        if k == "ir.IntImm":
            return ["int", int(e.value), dtype_of(e)]
        if k == "ir.FloatImm":
            return ["float", repr(float(e.value)), dtype_of(e)]
        if k == "ir.StringImm":
            return ["str", e.value]
        if k in BINARY:
            return [BINARY[k], self.expr(e.a), self.expr(e.b)]
        if k in BITWISE:
            return ["call", dtype_of(e), BITWISE[k], [self.expr(e.a), self.expr(e.b)]]
        if k == "prim.BitwiseNot":
            return ["call", dtype_of(e), "bitwise_not", [self.expr(e.a)]]
        if k == "prim.Not":
            return ["Not", self.expr(e.a)]
        if k == "prim.Cast":
            return ["Cast", dtype_of(e), self.expr(e.value)]
        if k == "prim.Select":
            return [
                "Select",
                self.expr(e.condition),
                self.expr(e.true_value),
                self.expr(e.false_value),
            ]
        if k == "prim.Ramp":
            return ["Ramp", self.expr(e.base), self.expr(e.stride), int(e.lanes)]
        if k == "prim.Broadcast":
            return ["Broadcast", self.expr(e.value), int(e.lanes)]
        if k == "prim.Shuffle":
            return ["Shuffle", [self.expr(v) for v in e.vectors], [self.expr(i) for i in e.indices]]
        if k == "prim.Let":
            return ["Let", self.var(e.var), self.expr(e.value), self.expr(e.body)]
        if k == "ir.TensorLoad":
            return ["load", self.buffer(e.source), [self.expr(i) for i in e.indices]]
        if k == "ir.Call":
            return self.call(e)
        if k == "ir.Range":
            return [self.expr(e.min), self.expr(e.extent)]
        if k == "tirx.IterVar":
            dom = None if e.dom is None else self.expr(e.dom)
            return ["iv", self.var(e.var), dom, ITER_TYPES[int(e.iter_type)], str(e.thread_tag)]
        if k == "te.CommReducer":
            return [
                "reducer", [self.var(v) for v in e.lhs], [self.var(v) for v in e.rhs],
                [self.expr(r) for r in e.result], [self.expr(i) for i in e.identity_element],
            ]  # fmt: skip
        if k == "ir.TensorRegion":
            return ["region", self.buffer(e.source), [self.expr(r) for r in e.region]]
        if k == "target.Target":
            return ["target", self.value(e.export())]
        return ["?", k]

    def call(self, e: Any) -> Any:
        name = str(e.op.name) if key(e.op) == "ir.Op" else str(e.op)
        for prefix in ("tirx.", "prim.", "tir."):
            name = name.removeprefix(prefix)
        name = TIRC_NAMES.get(name, name)
        if key(e.op) == "ir.GlobalVar":  # another function of the module, as tirc spells it
            name = f"Module.{e.op.name_hint}"
        args = list(e.args)
        if name == "buffer_data":
            return ["data", self.buffer(args[0])]
        if (
            name in ("call_llvm_pure_intrin", "call_llvm_intrin")
            and args
            and key(args[0]) == "ir.IntImm"
        ):
            intrinsic = tvm.target.codegen.llvm_get_intrinsic_name(int(args[0].value))
            return [
                "call",
                dtype_of(e),
                name,
                [["str", intrinsic]] + [self.expr(a) for a in args[1:]],
            ]
        return ["call", dtype_of(e), name, [self.expr(a) for a in args]]

    def stmt(self, s: Any) -> Any:
        k = key(s)
        if k == "tirx.SeqStmt":
            return ["seq", [self.stmt(x) for x in s.seq]]
        if k == "tirx.For":
            binding = None if s.thread_binding is None else self.expr(s.thread_binding)
            step = None if s.step is None else self.expr(s.step)
            return [
                "for", self.var(s.loop_var), self.expr(s.min), self.expr(s.extent),
                FOR_KINDS[int(s.kind)], binding, self.attrs(s.annotations), step, self.stmt(s.body),
            ]  # fmt: skip
        if k == "s_tir.SBlockRealize":
            return [
                "realize",
                [self.expr(v) for v in s.iter_values],
                self.expr(s.predicate),
                self.stmt(s.block),
            ]
        if k == "s_tir.SBlock":
            return [
                "block", str(s.name_hint), [self.expr(iv) for iv in s.iter_vars],
                [self.buffer(b) for b in s.alloc_buffers],
                [["match", self.buffer(m.buffer), self.expr(m.source)] for m in s.match_buffers],
                [self.expr(r) for r in s.reads], [self.expr(r) for r in s.writes],
                self.attrs(s.annotations),
                None if s.init is None else self.stmt(s.init), self.stmt(s.body),
            ]  # fmt: skip
        if k == "tirx.BufferStore":
            return [
                "store",
                self.buffer(s.buffer),
                [self.expr(i) for i in s.indices],
                self.expr(s.value),
            ]
        if k == "tirx.Evaluate":
            return ["eval", self.expr(s.value)]
        if k == "tirx.IfThenElse":
            orelse = None if s.else_case is None else self.stmt(s.else_case)
            return ["if", self.expr(s.condition), self.stmt(s.then_case), orelse]
        if k == "tirx.While":
            return ["while", self.expr(s.condition), self.stmt(s.body)]
        if k == "tirx.AttrStmt":
            node = s.node
            node_canon = (
                self.value(node)
                if not hasattr(type(node), "__tvm_ffi_type_info__")
                else self.expr(node)
            )
            return ["attr", node_canon, str(s.attr_key), self.expr(s.value), self.stmt(s.body)]
        if k == "tirx.AssertStmt":
            kind = s.error_kind.value if hasattr(s.error_kind, "value") else str(s.error_kind)
            return ["assert", self.expr(s.condition), kind, [str(m.value) for m in s.message_parts]]
        if k == "tirx.Bind":
            return ["bind", self.var(s.var), self.expr(s.value)]
        if k == "tirx.AllocBuffer":
            return ["alloc", self.buffer(s.buffer), self.attrs(s.annotations)]
        if k == "tirx.DeclBuffer":
            data = self.expr(s.data) if s.data is not None else None
            return ["decl", self.buffer(s.buffer), data]
        if k == "tirx.Break":
            return ["break"]
        if k == "tirx.Continue":
            return ["continue"]
        return ["?stmt", k]

    def function(self, f: Any, name: str) -> Any:
        params = [self.var(p) for p in f.params]
        attrs = dict(f.attrs.items()) if f.attrs is not None else {}
        private = "global_symbol" not in attrs
        s_tir = bool(attrs.get("s_tir", False))
        hidden = {"s_tir"} | ({"global_symbol"} if attrs.get("global_symbol") == name else set())
        return ["func", params, self.stmt(f.body), self.attrs(f.attrs, hidden), s_tir, private]


def canonical(path: str) -> Any:
    result = tvm.script.from_source(open(path).read())
    if isinstance(result, tvm.IRModule):
        functions = sorted((gv.name_hint, f) for gv, f in result.functions.items())
    else:
        attrs = dict(result.attrs.items()) if result.attrs is not None else {}
        functions = [(str(attrs.get("global_symbol", "main")), result)]
    return [[name, Canon().function(f, name)] for name, f in functions]


def main() -> None:
    for path in sys.argv[1:]:
        try:
            print(json.dumps({"file": path, "canonical": canonical(path)}))
        except Exception as error:  # noqa: BLE001 - the oracle's failure is data
            print(
                json.dumps({"file": path, "error": f"{type(error).__name__}: {str(error)[:300]}"})
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
