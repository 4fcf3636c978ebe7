"""Index maps: `lambda i, j: (j, i)` as a value — initial variables, final index expressions
and an optional inverse the user gave — read from plan text, applied to indices and shapes,
and inverted (the inverse is what layout primitives substitute into the program).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.int_set import relax
from tirc.analysis.arith.iter_inverse import inverse_iter_map
from tirc.analysis.arith.iter_map import Level, detect_iter_map
from tirc.diagnostics import Diagnostic, DiagnosticError, Source, Span
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.schedule.dtype_substitute import substitute_legalized
from tirc.text import script
from tirc.text.syntax import parse_syntax, tree

# `T.index_map(...)` without `index_dtype` makes int64 variables (TVMScript's default).
SCRIPT_DEFAULT_DTYPE = dt.parse_dtype("int64")


class IndexMapError(Exception):
    """The map cannot do what was asked (not invertible, wrong arity); says why."""


@dataclass(frozen=True, eq=False)
class IndexMap:
    """`lambda *initial: final`; `given_inverse`, when set, is trusted as the inverse."""

    initial: tuple[Var, ...]
    final: tuple[PrimExpr, ...]
    given_inverse: IndexMap | None = None

    def map(
        self, indices: Sequence[PrimExpr], analyzer: Analyzer | None = None
    ) -> tuple[PrimExpr, ...]:
        """The final indices with the initial variables replaced by `indices`, simplified."""
        if len(indices) != len(self.initial):
            raise IndexMapError(
                f"the index map takes {len(self.initial)} indices, {len(indices)} given"
            )
        mapping = dict(zip(self.initial, indices, strict=True))
        analyzer = analyzer or Analyzer()
        return tuple(analyzer.simplify(substitute_legalized(e, mapping)) for e in self.final)

    def map_ranges(self, ranges: Sequence[Range]) -> tuple[Range, ...]:
        """The box the final indices cover when the initial ones range over `ranges`.

        The initial variables take the ranges' dtypes first (as `map` takes its indices'):
        an int64 `lambda i, j: (i * 8 + j,)` over int32 extents computes in int64 where its
        constants are int64, and in int32 where the variables pass through."""
        fresh = [
            var if var.dtype == item.extent.dtype else Var(var.name, item.extent.dtype)
            for var, item in zip(self.initial, ranges, strict=True)
        ]
        final = [
            substitute_legalized(index, dict(zip(self.initial, fresh, strict=True)))
            for index in self.final
        ]
        domains = dict(zip(fresh, ranges, strict=True))
        analyzer = Analyzer.over(domains)
        result = []
        for index in final:
            bounds = relax(index, domains, analyzer)
            if bounds.min is None or bounds.max is None:
                raise IndexMapError(f"the index {_text(index)} is not bounded")
            low = analyzer.simplify(bounds.min)
            extent = analyzer.simplify(_sub(_plus_one(bounds.max), low))
            if isinstance(index, E.FloorMod) and isinstance(index.b, IntImm) and index.b.value > 0:
                # `i % c` covers [0, c) as TVM's iterator map reads it, even for i in [0, 2)
                low, extent = IntImm(0, index.dtype), IntImm(index.b.value, index.dtype)
            result.append(Range(low, extent))
        return tuple(result)

    def map_shape(self, shape: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        """The extents of the final indices over a buffer or iteration space of `shape`."""
        ranges = [Range(IntImm(0, extent.dtype), extent) for extent in shape]
        return tuple(item.extent for item in self.map_ranges(ranges))

    def inverse(self, shape: Sequence[PrimExpr]) -> IndexMap:
        """The map back from final to initial indices over `shape`; raises IndexMapError
        unless the map is a bijection of the box onto its image."""
        if self.given_inverse is not None:
            return self.given_inverse
        ranges = [Range(IntImm(0, extent.dtype), extent) for extent in shape]
        projection = self._projection_inverse(ranges)
        if projection is not None:
            return projection
        if not all(isinstance(extent, IntImm) for extent in shape):
            split = self._split_inverse(ranges)
            if split is not None:
                return split
        domains = dict(zip(self.initial, ranges, strict=True))
        found = detect_iter_map(list(self.final), domains, None, Level.BIJECTIVE, symbolic=True)
        if found.errors:
            raise IndexMapError(f"it is not a bijective affine map: {found.errors[0]}")
        outputs = tuple(self.output_var(position) for position in range(len(self.final)))
        solved = inverse_iter_map(found.sums, outputs)
        analyzer = Analyzer()  # knows nothing of the outputs' ranges, as TVM's does not
        results = []
        for var, domain in zip(self.initial, ranges, strict=True):
            expr = solved.get(var)
            if expr is None:  # a unit dimension no output reads: it is always its minimum
                expr = domain.min
            results.append(analyzer.simplify(expr))
        return IndexMap(outputs, tuple(results))

    def legalized(self, dtypes: Sequence[DataType]) -> IndexMap:
        """The map over variables of `dtypes` (those of the shape or indices it is applied
        to): constant indices take the first of them, other indices are converted as
        substitution requires. The same map when the dtypes already agree."""
        if len(dtypes) != len(self.initial) or all(
            var.dtype == dtype for var, dtype in zip(self.initial, dtypes, strict=True)
        ):
            return self
        initial = tuple(
            Var(var.name, dtype) for var, dtype in zip(self.initial, dtypes, strict=True)
        )
        mapping = dict(zip(self.initial, initial, strict=True))
        final = tuple(
            IntImm(index.value, dtypes[0])
            if isinstance(index, IntImm) and dtypes[0].is_integer
            else substitute_legalized(index, mapping)
            for index in self.final
        )
        return IndexMap(initial, final, self.given_inverse)

    def _projection_inverse(self, ranges: Sequence[Range]) -> IndexMap | None:
        """The inverse of a map whose indices are distinct initial variables or constants,
        dropping only unit dimensions: no arithmetic needed, so symbolic extents are fine."""
        analyzer = Analyzer()
        outputs = tuple(self.output_var(position) for position in range(len(self.final)))
        solved: dict[Var, PrimExpr] = {}
        for index, output in zip(self.final, outputs, strict=True):
            if isinstance(index, Var) and index in self.initial and index not in solved:
                solved[index] = output
            elif not isinstance(index, IntImm):
                return None
        results = []
        for var, domain in zip(self.initial, ranges, strict=True):
            if var in solved:
                results.append(solved[var])
            elif analyzer.can_prove_equal(domain.extent, IntImm(1, domain.extent.dtype)):
                results.append(domain.min)
            else:
                raise IndexMapError(f"the map drops {var.name}, whose extent is not 1")
        return IndexMap(outputs, tuple(results))

    def _split_inverse(self, ranges: Sequence[Range]) -> IndexMap | None:
        """The inverse of a map whose indices are initial variables, constants, or pairs
        `i // c, i % c` with c dividing i's extent: what symbolic extents allow (the affine
        detector wants constant ones). None when the map has another form."""
        analyzer = Analyzer()
        outputs = tuple(self.output_var(position) for position in range(len(self.final)))
        whole: dict[Var, PrimExpr] = {}
        parts: dict[Var, dict[str, tuple[int, Var]]] = {}
        for index, output in zip(self.final, outputs, strict=True):
            if isinstance(index, Var) and index in self.initial:
                if index in whole or index in parts:
                    return None
                whole[index] = output
            elif isinstance(index, (E.FloorDiv, E.FloorMod)):
                var, factor = index.a, index.b
                if not (
                    isinstance(var, Var) and var in self.initial and isinstance(factor, IntImm)
                ):
                    return None
                kind = "div" if isinstance(index, E.FloorDiv) else "mod"
                found = parts.setdefault(var, {})
                if var in whole or kind in found:
                    return None
                found[kind] = (factor.value, output)
            elif not isinstance(index, IntImm):
                return None
        results: list[PrimExpr] = []
        for var, domain in zip(self.initial, ranges, strict=True):
            if var in whole:
                results.append(whole[var])
                continue
            found = parts.get(var, {})
            if set(found) == {"div", "mod"} and found["div"][0] == found["mod"][0] > 0:
                factor = IntImm(found["div"][0], var.dtype)
                divides = E.EQ(E.FloorMod(domain.extent, factor), IntImm(0, var.dtype))
                if not (analyzer.can_prove(divides) and E.is_const_int(domain.min, 0)):
                    return None
                results.append(E.Add(E.Mul(found["div"][1], factor), found["mod"][1]))
            elif not found and analyzer.can_prove_equal(domain.extent, IntImm(1, var.dtype)):
                results.append(domain.min)
            else:
                return None
        return IndexMap(outputs, tuple(results))

    def output_var(self, position: int) -> Var:
        """An output that is an input variable as it is keeps its name (TVM's naming)."""
        index = self.final[position]
        name = index.name if isinstance(index, Var) and index in self.initial else f"axis{position}"
        return Var(name, index.dtype)

    def __str__(self) -> str:
        names = ", ".join(var.name for var in self.initial)
        finals = ", ".join(_text(expr) for expr in self.final)
        comma = "," if len(self.final) == 1 else ""
        return f"lambda {names}: ({finals}{comma})"


def _plus_one(expr: PrimExpr) -> PrimExpr:
    return E.Add(expr, IntImm(1, expr.dtype))


def _sub(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return arithmetic("-", a, b)


def _text(expr: PrimExpr) -> str:
    return script(expr)


# -- reading ---------------------------------------------------------------------------------


def parse_index_map(
    text: str | IndexMap,
    *,
    name: str = "<plan>",
    dtype_hint: DataType | str | None = None,
    names: Mapping[str, PrimExpr] | None = None,
) -> IndexMap:
    """An IndexMap from `T.index_map(lambda ...: ..., inverse_index_map=..., index_dtype=...)`
    or a bare `lambda ...: ...`; an IndexMap already read (by the plan applier) as it is.

    The variables' dtype is `index_dtype` when written; else int64 in the `T.index_map` form
    (TVMScript's default, which is what TVM's traces mean) and `dtype_hint` (default int32)
    for a bare lambda, as TVM's Python API takes the dtype of the block it is applied to.
    `names` are values the body may use besides the lambda's parameters: a plan's sampled
    expressions (`j // (v4 * v5)`), which TVM's trace writes by name.
    Raises DiagnosticError located in `text` when it is not an index map.
    """
    if isinstance(text, IndexMap):
        return text
    source = Source(name, text)
    module = parse_syntax(source)
    whole = Span(source, 0, len(text))
    if len(module.body) != 1 or not isinstance(module.body[0], tree.ExprStmt):
        raise _error(whole, "an index map is one expression: T.index_map(lambda i, j: (j, i))")
    node = module.body[0].value
    if isinstance(node, tree.Lambda):
        hint = dt.parse_dtype(dtype_hint) if isinstance(dtype_hint, str) else dtype_hint
        return _build(source, node, None, hint or dt.INT32, names)
    if not (isinstance(node, tree.Call) and _is_index_map_call(node.func)):
        raise _error(whole, "an index map is T.index_map(lambda ...: ...) or lambda ...: ...")
    if len(node.args) != 1 or not isinstance(node.args[0], tree.Lambda):
        raise _error(
            _span(source, node), "T.index_map takes one lambda: T.index_map(lambda i: (i,))"
        )
    inverse: tree.Lambda | None = None
    dtype = SCRIPT_DEFAULT_DTYPE
    for keyword in node.keywords:
        if keyword.name == "inverse_index_map" and isinstance(keyword.value, tree.Lambda):
            inverse = keyword.value
        elif keyword.name == "index_dtype" and isinstance(keyword.value, tree.Constant):
            try:
                dtype = dt.parse_dtype(str(keyword.value.value))
            except ValueError:
                raise _error(_span(source, keyword), "index_dtype is not a dtype") from None
        else:
            message = f"T.index_map takes inverse_index_map= and index_dtype=, not {keyword.name}="
            raise _error(_span(source, keyword), message)
    return _build(source, node.args[0], inverse, dtype, names)


def _is_index_map_call(func: tree.Expr) -> bool:

    return (
        isinstance(func, tree.Attribute)
        and func.attr == "index_map"
        and isinstance(func.value, tree.Name)
        and func.value.id == "T"
    )


def _build(
    source: Source,
    node: tree.Lambda,
    inverse: tree.Lambda | None,
    dtype: DataType,
    names: Mapping[str, PrimExpr] | None,
) -> IndexMap:
    initial, final = _evaluate_lambda(source, node, dtype, names)
    given = None
    if inverse is not None:
        given = IndexMap(*_evaluate_lambda(source, inverse, dtype, names))
        if len(given.initial) != len(final) or len(given.final) != len(initial):
            raise _error(_span(source, inverse), "the inverse does not match the map's arity")
    return IndexMap(initial, final, given)


def _evaluate_lambda(
    source: Source, node: tree.Lambda, dtype: DataType, names: Mapping[str, PrimExpr] | None
) -> tuple[tuple[Var, ...], tuple[PrimExpr, ...]]:
    """The lambda's parameters as fresh variables and its body's values over them."""
    # deferred: start-up time (the parser's builder takes ~150 ms to import, 80% on top of
    # this module's; it loads only when a plan's index map is read)
    from tirc.text.builder.context import BuildError, Context
    from tirc.text.builder.namespace import global_names
    from tirc.text.builder.scope import Scope
    from tirc.text.builder.stmt import Builder

    params = tuple(Var(param, dtype) for param in node.params)
    scope = Scope(names=global_names()).child()
    for value_name, value in (names or {}).items():
        scope.bind(value_name, value)
    for var in params:
        scope.bind(var.name, var)
    builder = Builder(Context(source), scope)
    body = node.body
    items = body.items if isinstance(body, tree.Tuple) else (body,)
    try:
        final = tuple(builder.evaluate_expr(item) for item in items)
    except BuildError as error:
        raise DiagnosticError(error.diagnostic) from None
    return params, final


def _span(source: Source, node: tree.Syntax) -> Span:
    return Span(source, node.start, node.end)


def _error(span: Span, message: str) -> DiagnosticError:
    return DiagnosticError(Diagnostic.error(message, span))
