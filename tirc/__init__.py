"""tirc: a standalone TensorIR compiler.

Kept import-light on purpose: `tirc --version` must not pay for numpy or llvmlite.
"""

__version__ = "0.1.0"
