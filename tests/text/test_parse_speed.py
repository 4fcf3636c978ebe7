"""Parsing stays fast on large modules and linear on long lines (lenient bounds: CI machines vary)."""  # noqa: E501

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.text.parse_helpers import FUNCTION_HEAD, parse

CORPUS = Path("/work/shared/conformance/cases")


def big_module(lines: int) -> str:
    """Conformance functions renamed apart, concatenated into one module."""
    import re

    out = ["@I.ir_module", "class Module:"]
    count = 0
    for path in sorted(CORPUS.glob("*/expected.tir")):
        text = path.read_text()
        if "TypeVar" in text or "@I.ir_module" not in text:
            continue
        for function in re.split(
            r"(?m)^(?=    @T\.prim_func)", text.split("class Module:\n", 1)[1]
        ):
            if function.strip():
                renamed = re.sub(
                    r"(?m)^    def (\w+)\(",
                    lambda m, k=count: f"    def {m.group(1)}_{k}(",
                    function,
                    count=1,
                )
                out.append(renamed.rstrip("\n"))
                count += 1
        if sum(chunk.count("\n") + 1 for chunk in out) >= lines:
            break
    return "\n".join(out) + "\n"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the conformance corpus is not here")
def test_large_module_throughput() -> None:
    text = big_module(5000)
    parse(text)  # warm up (grammar tables)
    started = time.process_time()
    module = parse(text)
    elapsed = time.process_time() - started
    lines = text.count("\n")
    assert len(module.functions) > 100
    assert lines / elapsed > 2000, f"{lines / elapsed:.0f} lines/s"


def test_long_lines_are_linear() -> None:
    def seconds(terms: int) -> float:
        text = FUNCTION_HEAD + "    A[0] = A[1]" + " + A[1]" * terms + "\n"
        started = time.process_time()
        parse(text)
        return time.process_time() - started

    seconds(1000)
    small, large = seconds(5_000), seconds(40_000)
    assert large < small * 8 * 3, (small, large)  # 8x the input: far from 64x
