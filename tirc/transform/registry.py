"""Pass names to pass classes, found by module name in tirc/transform/passes/.

Each module there defines one ModulePass subclass whose `name` is the module's name with
dashes (`flatten_buffer.py` defines `flatten-buffer`); nothing is listed by hand. Names are
listed from the file names alone, and a module is imported only when its pass is looked up,
so a pipeline pays for the passes it runs, and a broken module breaks only those that use it.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
from functools import cache

from tirc.diagnostics import DiagnosticError, Note
from tirc.diagnostics.span import Span
from tirc.transform import passes as passes_package
from tirc.transform.pass_base import ModulePass


def pass_names() -> list[str]:
    """Every pass name, from the module names (nothing imported)."""
    return list(_names())


@cache
def _names() -> tuple[str, ...]:
    return tuple(
        sorted(
            info.name.replace("_", "-")
            for info in pkgutil.iter_modules(passes_package.__path__)
            if not info.name.startswith("_")
        )
    )


@cache
def _load(name: str) -> type[ModulePass]:
    """The class of pass `name` (a known name), importing its module."""
    module = importlib.import_module(f"{passes_package.__name__}.{name.replace('-', '_')}")
    for _, klass in inspect.getmembers(module, inspect.isclass):
        if issubclass(klass, ModulePass) and klass.__module__ == module.__name__:
            if klass.name == name:
                return klass
    raise RuntimeError(f"{module.__name__} defines no pass named {name!r}")


def lookup_pass(name: str, span: Span | None = None) -> type[ModulePass]:
    """The pass class called `name`; a located error, with the nearest name, otherwise."""
    if name in _names():
        return _load(name)
    notes = []
    close = difflib.get_close_matches(name, pass_names(), n=1)
    if close:
        notes.append(Note(f"did you mean '{close[0]}'?"))
    else:
        notes.append(Note(f"known passes: {', '.join(pass_names())}"))
    raise DiagnosticError.at(span, f"unknown pass '{name}'", *notes)


def registry() -> dict[str, type[ModulePass]]:
    """Every pass, each module imported: for listings and for the registry's tests."""
    return {name: _load(name) for name in pass_names()}
