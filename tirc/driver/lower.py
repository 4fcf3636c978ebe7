"""Lowering a module through a pipeline, with the instruments of `tirc print --lower`.

Intermediate modules and the timing table go to stderr, so stdout keeps the lowered module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO, TypedDict

from tirc.analysis.stored_types import refuse_stored_only
from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.driver import remarks
from tirc.driver.target import parse_target
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.stmt import SBlock
from tirc.ir.target import Target

if TYPE_CHECKING:
    from tirc.ir.function import IRModule
    from tirc.transform.pass_base import ModulePass
    from tirc.transform.pipeline import Pipeline


class LowerOptions(TypedDict, total=False):
    """The options of `lower_module` that `tirc print --lower` passes on."""

    target: Target | str
    pipeline_path: str | None
    print_after: Sequence[str]
    print_after_all: bool
    time_passes: bool
    verify_each: bool


def lower_module(
    module: IRModule,
    *,
    target: Target | str = "cpu",
    pipeline_path: str | None = None,
    for_backend: bool = False,
    print_after: Sequence[str] = (),
    print_after_all: bool = False,
    time_passes: bool = False,
    verify_each: bool = False,
    stream: TextIO | None = None,
) -> IRModule:
    """`module` lowered by the pipeline in `pipeline_path`, or the target's default one.
    For a backend (`for_backend`): the pipeline must leave the dialect the target's
    backend reads, and the module is checked against it. (`print --lower` lowers with any
    pipeline, a part of one too: nothing reads what it prints.)

    Raises DiagnosticError for a bad pipeline, an unknown pass in `print_after`, a program a
    pass cannot lower, or (with `verify_each`) a pass that produced invalid IR.
    """
    # deferred: the transform layer (0.2 s), only when lowering
    from tirc.transform import Instruments, default_pipeline, load_pipeline, run_pipeline
    from tirc.transform.registry import lookup_pass  # deferred: the transform layer

    target = parse_target(target)
    pipeline = load_pipeline(pipeline_path) if pipeline_path else default_pipeline(target)
    if for_backend:
        check_backend_reads(pipeline, target)
        refuse_stored_only(module)  # int4, float4_e2m1fn, ...: no backend computes with them
    problems: list[Diagnostic] = []
    for name in print_after:
        try:
            lookup_pass(name)
        except DiagnosticError as error:
            problems += [
                Diagnostic.error(f"--print-after: {d.message}", d.span, *d.notes)
                for d in error.diagnostics
            ]
    if problems:
        raise DiagnosticError(problems)
    instruments = Instruments(
        print_after=frozenset(print_after),
        print_after_all=print_after_all,
        time_passes=time_passes,
        verify_each=verify_each,
        stream=stream,
    )

    if not remarks.is_listening():
        lowered = run_pipeline(module, pipeline.passes, instruments)
    else:
        watch = remarks.LoopWatch(module)

        def hook(pass_: ModulePass, result: IRModule, seconds: float) -> None:
            instruments(pass_, result, seconds)
            watch(pass_, result)

        lowered = run_pipeline(module, pipeline.passes, hook)
        remarks.report(watch.finish(lowered, target))
    instruments.report()
    if for_backend:
        from tirc.transform.dialects import require_dialect  # deferred: the transform layer

        name, leaves = pipeline.name, pipeline.leaves.value
        require_dialect(lowered, pipeline.leaves, f"pipeline {name} declares it leaves {leaves}")
    return without_s_tir_mark(lowered)


def check_backend_reads(pipeline: Pipeline, target: Target) -> None:
    """A DiagnosticError unless `pipeline` leaves what the target's backend reads."""
    from tirc.transform.pass_base import Dialect  # deferred: the transform layer

    reads = Dialect(target.kind.reads)
    if pipeline.leaves.rank >= reads.rank:
        return
    raise DiagnosticError.at(
        None,
        f"pipeline {pipeline.name} leaves {pipeline.leaves.value}, but the {target.name} "
        f"backend reads {reads.value}",
        Note(
            f"end it as tirc's {target.pipeline} pipeline does and declare "
            f'`leaves = "{reads.value}"` (docs/pipelines.md)'
        ),
    )


def without_s_tir_mark(module: IRModule) -> IRModule:
    """`module` with each function that no longer has a block marked tir, not s-tir.

    TVM's passes, and tirc's after them, keep the `s_tir` mark on the functions they lower
    (the pass goldens are TVM's); a lowered function is no longer schedulable, so the
    result of a whole pipeline says so (`tirc print --lower` prints `@T.prim_func`).
    """

    def has_block(func: object) -> bool:
        found: list[Node] = []

        def collect(node: Node) -> None:
            if not found and isinstance(node, SBlock):
                found.append(node)

        walk(func, collect)
        return bool(found)

    result = module
    for name, func in module.functions:
        if func.is_s_tir and not has_block(func.body):
            result = result.with_function(name, dataclasses.replace(func, is_s_tir=False))
    return result
