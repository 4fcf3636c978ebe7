"""Pass names to pass classes, discovered from the modules of tirc/transform/passes/.

Each module there defines one ModulePass subclass whose `name` is the module's name with
dashes (`flatten_buffer.py` defines `flatten-buffer`); nothing is listed by hand.
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


@cache
def registry() -> dict[str, type[ModulePass]]:
    found: dict[str, type[ModulePass]] = {}
    for info in sorted(pkgutil.iter_modules(passes_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{passes_package.__name__}.{info.name}")
        expected = info.name.replace("_", "-")
        for _, klass in inspect.getmembers(module, inspect.isclass):
            if issubclass(klass, ModulePass) and klass.__module__ == module.__name__:
                if klass.name == expected:
                    found[expected] = klass
        if expected not in found and not info.name.startswith("_"):
            raise RuntimeError(f"{module.__name__} defines no pass named {expected!r}")
    return found


def pass_names() -> list[str]:
    return sorted(registry())


def lookup_pass(name: str, span: Span | None = None) -> type[ModulePass]:
    """The pass class called `name`; a located error, with the nearest name, otherwise."""
    klass = registry().get(name)
    if klass is not None:
        return klass
    notes = []
    close = difflib.get_close_matches(name, pass_names(), n=1)
    if close:
        notes.append(Note(f"did you mean '{close[0]}'?"))
    else:
        notes.append(Note(f"known passes: {', '.join(pass_names())}"))
    raise DiagnosticError.at(span, f"unknown pass '{name}'", *notes)
