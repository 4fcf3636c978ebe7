"""The architecture's rules (docs/architecture.md), checked on the package's source by
tools/architecture_report.py: no import cycle between tirc's modules, every import deferred
into a function body named with its reason (`# deferred: ...`), and few `# type: ignore`,
each with its reason after it (issue #20)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
MOST_IGNORES = 50  # fewer than this in tirc/, each one explained


@pytest.fixture(scope="module")
def report() -> Any:
    spec = importlib.util.spec_from_file_location(
        "architecture_report", ROOT / "tools" / "architecture_report.py"
    )
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = tool  # its dataclasses look their module up there
    spec.loader.exec_module(tool)
    return tool.build_report()


def test_no_import_cycles(report: Any) -> None:
    assert report.modules > 300  # the graph really was built from the package
    assert report.cycles == []


def test_every_deferred_import_says_why(report: Any) -> None:
    assert [f"{item.path}:{item.line}: {item.text}" for item in report.uncommented] == []
    assert sum(layer.deferred_commented for layer in report.layers.values()) > 0


def test_type_ignores_are_few_and_explained(report: Any) -> None:
    layers = report.layers
    unexplained = {name: n.ignores_without_reason for name, n in layers.items()}
    assert {name: count for name, count in unexplained.items() if count} == {}
    total = sum(n.ignores_with_reason + n.ignores_without_reason for n in layers.values())
    assert total < MOST_IGNORES
