"""Parsing stays fast on large modules and linear on long lines (lenient bounds: CI machines
vary), and starts fast: the shipped parse tables are current, so a run never imports Lark."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.text.parse_helpers import FUNCTION_HEAD, parse
from tirc.text.syntax.tables import TABLES_PATH, compute_tables, grammar_path, load_tables

CORPUS = Path("/work/shared/conformance/cases")
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "matmul.tir"
HEAVY = ("lark", "numpy", "rich", "llvmlite", "ml_dtypes")


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


@pytest.mark.slow  # a speed check: 5,000 lines parsed twice
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


@pytest.mark.slow  # a speed check: lines of 5,000 and 40,000 terms
def test_long_lines_are_linear() -> None:
    def seconds(terms: int) -> float:
        text = FUNCTION_HEAD + "    A[0] = A[1]" + " + A[1]" * terms + "\n"
        started = time.process_time()
        parse(text)
        return time.process_time() - started

    seconds(1000)
    small, large = seconds(5_000), seconds(40_000)
    assert large < small * 8 * 3, (small, large)  # 8x the input: far from 64x


def test_shipped_tables_are_current() -> None:
    """After a grammar change: `python -m tirc.text.syntax.tables` rewrites tables.json."""
    grammar_text = grammar_path().read_text(encoding="utf-8")
    shipped = json.loads(TABLES_PATH.read_text(encoding="utf-8"))
    assert shipped["grammar"] == grammar_text, "stale: run python -m tirc.text.syntax.tables"
    assert shipped == compute_tables(grammar_text), "run python -m tirc.text.syntax.tables"


def test_an_edited_grammar_gets_fresh_tables() -> None:
    grammar_text = grammar_path().read_text(encoding="utf-8") + "\n// an edit\n"
    tables = load_tables(grammar_text)
    assert tables["grammar"] == grammar_text
    shipped = json.loads(TABLES_PATH.read_text(encoding="utf-8"))
    assert tables["states"] == shipped["states"]  # a comment changes no table


def test_print_imports_nothing_heavy() -> None:
    """`tirc print` runs on the shipped tables: no Lark, and no numpy or rich either."""
    probe = (
        "import sys\n"
        "from tirc.cli.main import main\n"
        f"assert main(['print', {str(SAMPLE)!r}, '-o', '-']) == 0\n"
        f"print(sorted(name for name in {HEAVY!r} if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"
