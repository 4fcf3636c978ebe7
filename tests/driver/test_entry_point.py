"""A private function (`@T.prim_func(private=True)`, as TVM prints many) runs when named."""

from __future__ import annotations

import numpy as np

from tirc.driver.run_cpu import jit_function
from tirc.text import parse

PRIVATE = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = A[i] + T.float32(1.0)
"""


def test_jit_function_runs_a_private_function_by_name() -> None:
    module = parse(PRIVATE)
    assert module["main"].is_private
    call = jit_function(module, "main", "cpu")  # was KeyError: 'main'
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    assert call({"A": a, "B": b}) == 0
    np.testing.assert_array_equal(b, a + 1)
