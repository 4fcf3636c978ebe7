"""What a schedule primitive's analyzer knows of the function's symbolic shapes.

A buffer's extent is never negative, so each variable that stands alone as a dimension of a
parameter buffer is at least 0 (TVM's rule for the analyzers of its schedule primitives):

    def main(A: T.Buffer((n, 32)))      ->   n >= 0, so  i in [0, n * 32)  gives  i // n < 32
"""

from __future__ import annotations

from tirc.analysis.arith import Analyzer
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc


def mark_shape_vars(analyzer: Analyzer, func: PrimFunc) -> None:
    """Record `v >= 0` for every variable that is a whole dimension of a parameter buffer."""
    for _, buffer in func.buffer_map:
        for extent in buffer.shape:
            if isinstance(extent, Var):
                analyzer.mark_non_negative(extent)
