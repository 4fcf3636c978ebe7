"""Pipelines as TOML: both spellings, the shipped defaults, and errors located at their line;
the runner's hook: --print-after, --time-passes, and --verify-each naming a broken pass."""

from __future__ import annotations

import dataclasses
import gc
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.ir import stmt as S
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator
from tirc.ir.target import read_target
from tirc.text import parse
from tirc.transform import (
    FunctionPass,
    default_pipeline,
    load_pipeline,
    read_pipeline,
    run_pipeline,
)
from tirc.transform.pass_base import Dialect
from tirc.transform.runner import Instruments

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "matmul.tir"


def error_of(text: str) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as caught:
        read_pipeline(text, name="p.toml")
    return caught.value


def test_tables_and_list_spell_the_same_pipeline() -> None:
    tables = read_pipeline(
        '[[pass]]\nname = "lower-init-block"\n[[pass]]\nname = "unroll-loop"\nauto_max_step = 16\n'
    )
    listed = read_pipeline('passes = ["lower-init-block", "unroll-loop{auto_max_step=16}"]')
    assert tables.passes == listed.passes
    assert listed.spelling() == "lower-init-block,unroll-loop{auto_max_step=16}"


@pytest.mark.parametrize("target", ["cpu", "cpu -mcpu=znver4", "llvm", "cuda", "nvptx"])
def test_default_pipelines_load(target: str) -> None:
    assert default_pipeline(read_target(target)).passes


@pytest.mark.parametrize(("name", "leaves"), [("cpu", "tir-c-abi"), ("cuda", "tir-host-device")])
def test_shipped_pipelines_declare_what_they_leave(name: str, leaves: str) -> None:
    assert default_pipeline(name).leaves.value == leaves


def test_unknown_pass_is_located_with_a_suggestion() -> None:
    error = error_of('[[pass]]\nname = "lower-init-block"\n\n[[pass]]\nname = "flaten-buffer"\n')
    (diagnostic,) = error.diagnostics
    assert diagnostic.message == "unknown pass 'flaten-buffer'"
    assert diagnostic.span is not None and diagnostic.span.line == 5
    assert "did you mean 'flatten-buffer'?" in [note.message for note in diagnostic.notes]


def test_unknown_option_and_bad_value_are_located() -> None:
    error = error_of('[[pass]]\nname = "unroll-loop"\nmax_step = 16\nexplicit_unroll = 3\n')
    messages = [(d.message, d.span.line if d.span else None) for d in error.diagnostics]
    assert messages == [  # every problem, not just the first
        ("pass 'unroll-loop' has no option 'max_step'", 3),
        ("option 'explicit_unroll' of pass 'unroll-loop' takes bool, not 3", 4),
    ]
    error = error_of('[[pass]]\nname = "unroll-loop"\nexplicit_unroll = 3\n')
    assert error.diagnostics[0].span is not None and error.diagnostics[0].span.line == 3
    assert "takes bool" in error.diagnostics[0].message


def test_list_form_errors_point_at_the_entry() -> None:
    error = error_of('passes = [\n  "simplify",\n  "unroll-loop{auto_max_stp=1}",\n]\n')
    assert error.diagnostics[0].span is not None and error.diagnostics[0].span.line == 3


def test_toml_syntax_error_has_its_line() -> None:
    error = error_of('[[pass]]\nname = "simplify"\nname = \n')
    assert error.diagnostics[0].message.startswith("invalid TOML")
    assert error.diagnostics[0].span is not None and error.diagnostics[0].span.line == 3


def test_missing_pipeline_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError, match="cannot read pipeline"):
        load_pipeline(tmp_path / "none.toml")


def test_print_after_and_time_passes_write_to_the_stream() -> None:
    stream = io.StringIO()
    module = parse(SAMPLE.read_text())
    lower_module(module, print_after=["lower-init-block"], time_passes=True, stream=stream)
    out = stream.getvalue()
    assert "# after lower-init-block\n" in out and "if vk == 0:" in out
    assert out.count("# after ") == 1
    assert "total" in out.splitlines()[-1]


def test_print_after_unknown_pass_is_an_error() -> None:
    with pytest.raises(DiagnosticError, match="--print-after: unknown pass 'simplfy'") as caught:
        lower_module(parse(SAMPLE.read_text()), print_after=["simplfy"])
    assert "did you mean 'simplify'?" in [n.message for n in caught.value.diagnostics[0].notes]


@dataclass(frozen=True)
class _DropLoopVariable(FunctionPass):
    """Deliberately broken: renames every loop's variable, leaving its uses undefined."""

    name = "drop-loop-variable"
    expects = Dialect.TIR
    leaves = Dialect.TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        class _Rename(Mutator):
            def visit_For(self, node: S.For) -> S.Stmt:
                return dataclasses.replace(
                    node, loop_var=S.Var("fresh"), body=self.visit(node.body)
                )

        return dataclasses.replace(func, body=_Rename().visit(func.body))


def test_verify_each_names_the_broken_pass() -> None:
    module = lower_module(parse(SAMPLE.read_text()))
    with pytest.raises(DiagnosticError) as caught:
        run_pipeline(module, [_DropLoopVariable()], Instruments(verify_each=True))
    message = caught.value.diagnostics[0].message
    assert message.startswith("pass drop-loop-variable produced invalid IR: "), message
    run_pipeline(module, [_DropLoopVariable()], Instruments())  # unchecked: no error


def test_verify_each_checks_the_promised_dialect() -> None:
    @dataclass(frozen=True)
    class _Lazy(FunctionPass):
        name = "lazy"
        leaves = Dialect.TIR

        def run_function(self, func: PrimFunc) -> PrimFunc:
            return func

    with pytest.raises(
        DiagnosticError, match="pass lazy produced invalid IR: block 'root' is left"
    ):
        run_pipeline(parse(SAMPLE.read_text()), [_Lazy()], Instruments(verify_each=True))


@dataclass(frozen=True)
class _Observe(FunctionPass):
    """Records whether the cyclic collector runs during the pass; fails if asked to."""

    name = "observe"
    expects = Dialect.TIR
    leaves = Dialect.TIR
    fail: bool = False
    seen: list[bool] = dataclasses.field(default_factory=list)

    def run_function(self, func: PrimFunc) -> PrimFunc:
        self.seen.append(gc.isenabled())
        if self.fail:
            raise DiagnosticError.at(None, "refused")
        return func


def test_passes_run_without_the_cyclic_collector_and_it_comes_back() -> None:
    module = lower_module(parse(SAMPLE.read_text()))
    observe = _Observe()
    run_pipeline(module, [observe, observe])
    assert observe.seen == [False, False]  # paused for the whole pipeline
    assert gc.isenabled()
    with pytest.raises(DiagnosticError, match="refused"):
        run_pipeline(module, [_Observe(fail=True)])
    assert gc.isenabled()  # back on after a pass that raised
    gc.disable()
    try:
        run_pipeline(module, [observe])
        assert not gc.isenabled()  # a caller's choice is left as it was
    finally:
        gc.enable()
