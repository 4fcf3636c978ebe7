"""The builder: evaluates the syntax tree as TVMScript's Python host would, and builds IR."""

from tirc.text.builder.module import build_module

__all__ = ["build_module"]
