"""docs/plans.md and docs/pipelines.md list every registered primitive and pass, and their
generated sections (entries and examples run through tirc) are what docs/generate.py makes."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from tirc.driver.explain import pass_names, primitive_names

DOCS = Path(__file__).resolve().parents[2] / "docs"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def headings(path: Path) -> set[str]:
    return set(re.findall(r"^### (\S+)$", path.read_text(), re.M))


def test_every_primitive_has_an_entry() -> None:
    missing = sorted(set(primitive_names()) - headings(DOCS / "plans.md"))
    assert not missing, f"docs/plans.md lacks {missing}: run `python docs/generate.py`"


def test_every_pass_has_an_entry() -> None:
    missing = sorted(set(pass_names()) - headings(DOCS / "pipelines.md"))
    assert not missing, f"docs/pipelines.md lacks {missing}: run `python docs/generate.py`"


def test_every_primitive_has_an_example() -> None:
    import json

    examples = json.loads((DOCS / "examples" / "primitives.json").read_text())
    missing = sorted(set(primitive_names()) - set(examples))
    assert not missing, f"docs/examples/primitives.json has no example for {missing}"


@pytest.mark.slow
def test_generated_sections_are_up_to_date() -> None:
    for path, text in generator().regenerated().items():
        if path.read_text() != text:
            pytest.fail(f"{path.name} is out of date: run `python docs/generate.py`")


def test_links_between_documents_resolve() -> None:
    for document in [DOCS.parent / "README.md", *DOCS.glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", document.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if target == "../samples/README.md" or target == "samples/README.md":
                continue  # written by the samples gallery
            assert (document.parent / target).exists(), f"{document.name} links to {target}"
