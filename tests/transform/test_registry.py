"""The pass registry: names from module names, modules imported only when looked up."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.transform import passes as passes_package
from tirc.transform import registry
from tirc.transform.pass_base import ModulePass


@pytest.fixture
def extra_pass_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A second folder of pass modules, searched after the package's own."""
    monkeypatch.setattr(passes_package, "__path__", [*passes_package.__path__, str(tmp_path)])
    registry._names.cache_clear()
    yield tmp_path
    registry._names.cache_clear()
    registry._load.cache_clear()
    for name in [m for m in sys.modules if m.startswith("tirc.transform.passes.scratch_")]:
        del sys.modules[name]


def test_every_module_defines_the_pass_of_its_name() -> None:
    found = registry.registry()
    assert sorted(found) == registry.pass_names()
    for name, klass in found.items():
        assert issubclass(klass, ModulePass)
        assert klass.name == name
        assert klass.__module__ == f"tirc.transform.passes.{name.replace('-', '_')}"


def test_names_are_listed_without_importing_the_passes() -> None:
    code = (
        "import sys\n"
        "from tirc.transform.registry import pass_names\n"
        "assert 'flatten-buffer' in pass_names()\n"
        "print(sorted(m for m in sys.modules if m.startswith('tirc.transform.passes.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_lookup_imports_only_the_pass_asked_for() -> None:
    code = (
        "import sys\n"
        "from tirc.transform.registry import lookup_pass\n"
        "print(lookup_pass('remove-no-op').name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('tirc.transform.passes.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "remove-no-op"
    assert "tirc.transform.passes.flatten_buffer" not in done.stdout


def test_module_names_with_underscores_are_not_pass_names() -> None:
    with pytest.raises(DiagnosticError) as caught:
        registry.lookup_pass("flatten_buffer")
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.message == "unknown pass 'flatten_buffer'"
    assert [n.message for n in diagnostic.notes] == ["did you mean 'flatten-buffer'?"]


def test_a_broken_pass_module_breaks_only_its_own_lookup(extra_pass_folder: Path) -> None:
    (extra_pass_folder / "scratch_broken.py").write_text("def half_written(:\n")
    assert "scratch-broken" in registry.pass_names()
    assert registry.lookup_pass("simplify").name == "simplify"
    with pytest.raises(SyntaxError):
        registry.lookup_pass("scratch-broken")


def test_a_module_without_its_pass_is_reported(extra_pass_folder: Path) -> None:
    (extra_pass_folder / "scratch_misnamed.py").write_text(
        "from tirc.transform.pass_base import ModulePass\n"
        "class Other(ModulePass):\n"
        "    name = 'scratch-other'\n"
    )
    with pytest.raises(RuntimeError, match="defines no pass named 'scratch-misnamed'"):
        registry.lookup_pass("scratch-misnamed")
