"""The reference interpreter: what a program of either dialect computes, on numpy arrays.

`run(func, args)` compiles the function to Python once (cached) and runs it, updating buffer
arguments in place; `random_inputs(func, seed)` makes arguments. See docs/language.md.

semantics/ says what values and operations mean, for one lane and for numpy lanes; memory/
holds storages, shared scopes and the lockstep lanes' memory. threads/ compiles the function
to Python (each GPU thread a coroutine: the default, and the one that catches data races);
lockstep/ is its lane backend (a race-free launch's threads as numpy lanes, by the same
compilers). runner (compile_function, run) is the top: it hands the thread model
the lockstep launch and the compiler of launched kernels, so imports point one way,
runner -> lockstep -> threads -> semantics | memory.
"""

from __future__ import annotations

from tirc.interp.inputs import random_inputs
from tirc.interp.runner import compile_function, run
from tirc.interp.semantics import llvm_intrinsics as _llvm_intrinsics  # noqa: F401  (registers them)
from tirc.interp.semantics.extensions import EXTERNS, INTRINSICS
from tirc.interp.threads import wmma as _wmma  # noqa: F401  (registers the wmma intrinsics)
from tirc.interp.threads.function import CompiledFunction

__all__ = ["EXTERNS", "INTRINSICS", "CompiledFunction", "compile_function", "random_inputs", "run"]
