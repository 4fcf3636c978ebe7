"""tirc: a standalone TensorIR compiler.

Kept import-light on purpose: `tirc --version` must not pay for numpy or llvmlite. The Python
API (tirc.api: parse, schedule, lower, build, CompileError) is imported on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = ("parse", "schedule", "lower", "build", "CompileError", "Module", "Function")
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from tirc import api  # deferred: start-up, as the docstring says

        return getattr(api, name)
    raise AttributeError(f"module 'tirc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
