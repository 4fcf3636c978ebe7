"""The commands of the `tirc` tool, each returning its exit status.

Errors travel as DiagnosticError; driver.guard renders them and exits 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, DiagnosticError, Note, Severity
from tirc.diagnostics.render import render
from tirc.driver.defines import parse_defines
from tirc.driver.difference import difference_report
from tirc.driver.exit_code import ExitCode
from tirc.driver.output import write_output
from tirc.driver.program import module_text, parse_source
from tirc.driver.source import STDIN, STDIN_NAME, check_stdin_once, read_source
from tirc.ir.structural import find_difference

if TYPE_CHECKING:
    from tirc.driver.lower import LowerOptions
    from tirc.ir import IRModule
    from tirc.ir.target import Target


def print_file(
    path: str,
    output: str,
    defines: Sequence[str] = (),
    *,
    plan: str | None = None,
    lowering: LowerOptions | None = None,
    target: Target | str | None = None,
) -> int:
    """`tirc print`: parse FILE, apply `plan`, lower with the `lowering` options of
    `tirc.driver.lower.lower_module` when given, and print the result. `target` is the
    command line's --target, which chooses a pipeline: an error without `lowering`."""
    if target is not None and lowering is None:
        raise DiagnosticError.at(
            None,
            f"--target {target} chooses the pipeline that lowers, but nothing is lowered",
            Note("add --lower, or drop --target"),
        )
    check_stdin_once([p for p in (path, plan) if p is not None])
    values = parse_defines(defines)
    module = parse_source(read_source(path), values)
    if plan is not None:
        from tirc.driver.schedule import apply_plan_file  # deferred: the schedule layer

        module, _ = apply_plan_file(module, plan)
    if lowering is not None:
        from tirc.driver.lower import lower_module  # deferred: the transform layer, for --lower

        module = lower_module(module, **lowering)
    write_output(output, module_text(module), keep_identical=True)
    return ExitCode.OK


def check_files(paths: Sequence[str], *, verbose: bool = False) -> int:
    """`tirc check`: parse and verify every file, report every diagnostic, fail on an error."""
    check_stdin_once(paths)
    diagnostics: list[Diagnostic] = []
    failed = False
    for path in paths:
        found = check_file(path)
        diagnostics += found
        if any(d.severity is Severity.ERROR for d in found):
            failed = True
        elif verbose:
            print(f"{display_name(path)}: ok")
    if diagnostics:
        render(diagnostics)
    return ExitCode.USER_ERROR if failed else ExitCode.OK


def check_file(path: str) -> list[Diagnostic]:
    try:
        module = parse_source(read_source(path))
    except DiagnosticError as error:
        return list(error.diagnostics)
    from tirc.analysis.well_formed import verify_module  # deferred: for `tirc check` only

    return list(verify_module(module))


def diff_files(left: str, right: str) -> int:
    """`tirc diff`: exit 0 when the modules are structurally equal, else show where they differ."""
    check_stdin_once([left, right])
    left_module, right_module = parse_files([left, right])
    difference = find_difference(left_module, right_module)
    if difference is None:
        return ExitCode.OK
    report = difference_report(difference, display_name(left), display_name(right))
    render([report], stream=sys.stdout, label=False)
    return ExitCode.USER_ERROR


def parse_files(paths: Sequence[str]) -> list[IRModule]:
    """Parse every file, or raise one DiagnosticError with the diagnostics of all of them."""
    modules: list[IRModule] = []
    diagnostics: list[Diagnostic] = []
    for path in paths:
        try:
            modules.append(parse_source(read_source(path)))
        except DiagnosticError as error:
            diagnostics += error.diagnostics
    if diagnostics:
        raise DiagnosticError(diagnostics)
    return modules


def display_name(path: str) -> str:
    return STDIN_NAME if path == STDIN else path
