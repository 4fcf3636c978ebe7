"""What a CPU target can run: a program whose loops are bound to GPU threads (blockIdx,
threadIdx, `T.launch_thread`) is refused before lowering, at the loop, pointing to the GPU
target. Virtual threads (`vthread`, `cthread`) are fine: the CPU pipeline unrolls them."""

from __future__ import annotations

from tirc.diagnostics import Diagnostic, DiagnosticError, Note, Span
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import Visitor

VIRTUAL_THREAD_TAGS = ("vthread", "cthread")


def check_runs_on_cpu(module: IRModule) -> None:
    """Raises DiagnosticError, one error per function, at the first loop or thread launch
    bound to a GPU thread.

        for bx in T.thread_binding(32, thread="blockIdx.x"):   error: the cpu target cannot
            ...                                                 run a loop bound to blockIdx.x
    """
    problems = []
    for _, func in module.functions:
        finder = _FirstGpuThread()
        finder.visit(func.body)
        if finder.found is not None:
            tag, span = finder.found
            problems.append(
                Diagnostic.error(
                    f"the cpu target cannot run a loop bound to {tag}",
                    span,
                    Note("GPU thread bindings need a GPU: compile it with --target cuda"),
                )
            )
    if problems:
        raise DiagnosticError(problems)


def is_gpu_thread(tag: str) -> bool:
    return bool(tag) and not tag.startswith(VIRTUAL_THREAD_TAGS)


class _FirstGpuThread(Visitor):
    """The thread tag and span of the first statement, in program order, that binds a GPU
    thread: a thread_binding loop, or a `thread_extent` attribute of lowered code."""

    def __init__(self) -> None:
        self.found: tuple[str, Span | None] | None = None

    def visit_For(self, stmt: S.For) -> None:
        if self.found is not None:
            return
        binding = stmt.thread_binding
        if binding is not None and is_gpu_thread(binding.thread_tag):
            self.found = (binding.thread_tag, stmt.span)
            return
        self.generic_visit(stmt)

    def visit_AttrStmt(self, stmt: S.AttrStmt) -> None:
        if self.found is not None:
            return
        node = stmt.node
        if stmt.key == "thread_extent" and isinstance(node, S.IterVar):
            if is_gpu_thread(node.thread_tag):
                self.found = (node.thread_tag, stmt.span)
                return
        self.generic_visit(stmt)
