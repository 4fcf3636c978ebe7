"""`-D NAME=VALUE` parsing."""

from __future__ import annotations

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.driver.defines import parse_defines


def test_definitions_last_one_wins_and_values_keep_their_equals_signs() -> None:
    assert parse_defines(["N=1024", "dtype=float16", "N=2048", "s=a=b", "e="]) == {
        "N": "2048",
        "dtype": "float16",
        "s": "a=b",
        "e": "",
    }


@pytest.mark.parametrize("item", ["N", "=1", "1N=2", "a-b=1", "for=1", " N=1", ""])
def test_malformed_definitions(item: str) -> None:
    with pytest.raises(DiagnosticError) as caught:
        parse_defines([item])
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.message == f"invalid -D definition '{item}': expected NAME=VALUE"
    assert diagnostic.span is None
