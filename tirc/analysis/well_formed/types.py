"""Types the constructors cannot check alone: conditions are bool, a stored value has the type
of the element it replaces, buffer indices are integers, one per dimension, and a variable is
bound to a value of its own type. An integer `if` or `while` condition (TVM accepts one, true
when nonzero) only draws a warning.

Only the last index may be a vector (a Ramp): that index's lanes make the access a vector of
the buffer's element type, e.g. `B[i, T.Ramp(0, 1, 4)]` on a float32 buffer is float32x4.
"""

from __future__ import annotations

from tirc.analysis.well_formed.checker import Checker
from tirc.diagnostics import Diagnostic
from tirc.ir.buffer import Buffer, Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import BufferLoad, Call, Let, PrimExpr, Select, access_dtype
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import AssertStmt, Bind, BufferStore, IfThenElse, SBlockRealize, While


def dtype_of(expr: PrimExpr) -> DataType:
    return expr.dtype


class TypeChecker(Checker):
    def check_condition(self, what: str, expr: PrimExpr, lanes: int = 1) -> None:
        dtype = dtype_of(expr)
        if not dtype.is_bool or dtype.lanes not in (1, lanes):
            wanted = "bool" if lanes == 1 else f"bool or boolx{lanes}"
            self.error(f"condition of {what} must be {wanted}, not {dtype}", expr)

    def check_branch_condition(self, what: str, expr: PrimExpr) -> None:
        """`if` and `while` also take a scalar integer (TVM prints `if n:`), true when nonzero."""
        dtype = dtype_of(expr)
        if dtype.is_integer and dtype.is_scalar:
            self.warning(
                f"condition of {what} is {dtype}, true when nonzero; compare it to 0", expr
            )
        else:
            self.check_condition(what, expr)

    def visit_IfThenElse(self, stmt: IfThenElse) -> None:
        self.check_branch_condition("if", stmt.condition)
        self.generic_visit(stmt)

    def visit_While(self, stmt: While) -> None:
        self.check_branch_condition("while", stmt.condition)
        self.generic_visit(stmt)

    def visit_AssertStmt(self, stmt: AssertStmt) -> None:
        self.check_condition("assert", stmt.condition)
        self.generic_visit(stmt)

    def visit_Select(self, expr: Select) -> None:
        self.check_condition("T.Select", expr.condition, expr.dtype.lanes)
        self.generic_visit(expr)

    def visit_SBlockRealize(self, stmt: SBlockRealize) -> None:
        self.check_condition(f"T.where in block '{stmt.block.name}'", stmt.predicate)
        self.generic_visit(stmt)

    def visit_Call(self, call: Call) -> None:
        if call.op == "if_then_else" and call.args and isinstance(call.args[0], PrimExpr):
            self.check_condition("T.if_then_else", call.args[0], call.dtype.lanes)
        self.generic_visit(call)

    def visit_BufferLoad(self, load: BufferLoad) -> None:
        self.check_indices(load.buffer, load.indices, load)
        if load.predicate is not None:
            what = f"the load from '{load.buffer.name}'"
            self.check_condition(what, load.predicate, load.dtype.lanes)
        self.generic_visit(load)

    def visit_BufferStore(self, store: BufferStore) -> None:
        if self.check_indices(store.buffer, store.indices, store):
            expected = access_dtype(store.buffer, store.indices)
            actual = dtype_of(store.value)
            if actual != expected:
                self.error(
                    f"value stored into '{store.buffer.name}' has type {actual}, "
                    f"the element{'s' if expected.is_vector else ''} it replaces {expected}",
                    store.value,
                )
            if store.predicate is not None:
                self.check_condition(
                    f"the store into '{store.buffer.name}'", store.predicate, expected.lanes
                )
        self.generic_visit(store)

    def check_indices(self, buffer: Buffer, indices: tuple[PrimExpr, ...], access: object) -> bool:
        """Whether the access is well typed; reports each way it is not."""
        if len(indices) != buffer.ndim:
            self.error(
                f"'{buffer.name}' has {buffer.ndim} dimension{'s' if buffer.ndim != 1 else ''} "
                f"but is indexed with {len(indices)} ind{'ices' if len(indices) != 1 else 'ex'}",
                access,
            )
            return False
        is_typed = True
        for position, index in enumerate(indices):
            dtype = dtype_of(index)
            if not dtype.is_integer:
                self.error(
                    f"index {position} of '{buffer.name}' has type {dtype}; indices are integers",
                    index,
                )
                is_typed = False
            elif dtype.is_vector and position != len(indices) - 1:
                self.error(
                    f"index {position} of '{buffer.name}' is a vector; only the last index may be",
                    index,
                )
                is_typed = False
        return is_typed

    def visit_Range(self, dom: Range) -> None:
        for role, expr in (("start", dom.min), ("extent", dom.extent)):
            dtype = dtype_of(expr)
            if not dtype.is_integer or dtype.is_vector:
                self.error(f"{role} of a range has type {dtype}; ranges are integer", expr)
        self.generic_visit(dom)

    def visit_Bind(self, stmt: Bind) -> None:
        self.check_bound_value(stmt.var.name, stmt.var.dtype, stmt.value)
        self.generic_visit(stmt)

    def visit_Let(self, expr: Let) -> None:
        self.check_bound_value(expr.var.name, expr.var.dtype, expr.value)
        self.generic_visit(expr)

    def check_bound_value(self, name: str, dtype: DataType, value: PrimExpr) -> None:
        if dtype_of(value) != dtype:
            message = f"'{name}' has type {dtype} but is bound to a {dtype_of(value)} value"
            self.error(message, value)


def check_types(func: PrimFunc) -> list[Diagnostic]:
    checker = TypeChecker()
    checker.visit(func)
    return checker.diagnostics
