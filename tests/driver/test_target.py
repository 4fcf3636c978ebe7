"""The Target value: read once from its spelling (tirc.driver.target.parse_target), with
errors located in the spelling that say what is accepted and what was probably meant."""

from __future__ import annotations

import io

import llvmlite.binding as llvm
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.diagnostics.render import render
from tirc.driver.target import parse_target
from tirc.ir.target import DEFAULT_CUDA_ARCH, KINDS, read_target


def rendered(spelling: str) -> str:
    with pytest.raises(DiagnosticError) as caught:
        parse_target(spelling)
    stream = io.StringIO()
    render(caught.value.diagnostics, stream=stream, color=False)
    return stream.getvalue()


@pytest.mark.parametrize(
    ("spelling", "kind", "backend", "pipeline", "emit"),
    [
        ("interp", "interp", "interp", None, None),
        ("cpu", "cpu", "llvm", "cpu", "obj"),
        ("llvm", "cpu", "llvm", "cpu", "obj"),
        ("cuda", "cuda", "cuda", "cuda", "cu"),
        ("nvptx", "cuda", "cuda", "cuda", "cu"),
    ],
)
def test_kinds_and_what_serves_them(
    spelling: str, kind: str, backend: str, pipeline: str | None, emit: str | None
) -> None:
    target = parse_target(spelling)
    assert (target.name, target.backend, target.pipeline) == (kind, backend, pipeline)
    assert (target.emits[0] if target.emits else None) == emit
    assert str(target) == spelling


def test_the_host_cpu_is_resolved() -> None:
    host = parse_target("cpu")
    assert host.arch == llvm.get_host_cpu_name() and host.triple == llvm.get_process_triple()
    assert parse_target("cpu -mcpu=native").arch == host.arch
    assert parse_target("cpu -mcpu=native").features == host.features


def test_cpu_options() -> None:
    target = parse_target("cpu -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4 -mattr=+avx2")
    assert (target.arch, target.triple, target.features) == (
        "znver4",
        "x86_64-unknown-linux-gnu",
        "+avx2",
    )
    assert target.cache_bytes == 0  # another CPU: no streaming stores unless -llc says
    assert parse_target("cpu -mcpu=znver4 -llc=32M").cache_bytes == 32 << 20


def test_a_target_value_passes_through() -> None:
    target = parse_target("cuda -arch=sm_80")
    assert parse_target(target) is target


def test_cuda_arch() -> None:
    assert parse_target("cuda").arch == ""  # the device's when run, DEFAULT_CUDA_ARCH compiled
    assert DEFAULT_CUDA_ARCH == "sm_90"
    assert parse_target("cuda -arch=sm_80").arch == "sm_80"
    assert parse_target("cuda -mcpu=sm_86").arch == "sm_86"  # TVM's spelling of the same
    assert parse_target("cuda").with_arch("sm_89").arch == "sm_89"
    assert parse_target("cuda -arch=sm_80").with_arch("sm_80").arch == "sm_80"
    with pytest.raises(DiagnosticError, match="disagrees"):
        parse_target("cuda -arch=sm_80").with_arch("sm_90")
    with pytest.raises(DiagnosticError, match="is a CUDA architecture, but the target is 'cpu'"):
        parse_target("cpu").with_arch("sm_80")


def test_an_unknown_kind_is_located_with_a_suggestion() -> None:
    text = rendered("cdua -arch=sm_80")
    assert "error: unknown target 'cdua'" in text
    assert " --> --target:1:1" in text and "^~~~" in text
    assert "note: did you mean 'cuda'?" in text
    assert "note: accepted: interp; cpu [-mcpu=NAME|native]" in text


def test_an_unknown_option_is_located_at_itself() -> None:
    text = rendered("cpu -mcpu=znver4 -march=x")
    assert "error: unknown target option '-march=x' for cpu" in text
    assert " --> --target:1:18" in text
    assert "note: did you mean '-mattr='?" in text
    assert "accepted: cpu [-mcpu=NAME|native] [-mtriple=T] [-mattr=+a,-b] [-llc=SIZE]" in text


@pytest.mark.parametrize(
    ("spelling", "message", "column"),
    [
        ("cpu -mcpu=foo", "unknown CPU 'foo' for", 5),
        ("cpu -llc=lots", "-llc wants a size in bytes", 5),
        ("cpu -mtriple=nonsense-x-y", "unknown target triple 'nonsense-x-y'", 5),
        ("cuda -arch=sm_42", "unknown CUDA architecture 'sm_42'", 12),
        ("cuda -mcpu", "unknown target option '-mcpu' for cuda", 6),
        ("interp -O3", "unknown target option '-O3' for interp", 8),
    ],
)
def test_bad_values_are_located(spelling: str, message: str, column: int) -> None:
    text = rendered(spelling)
    assert f"error: {message}" in text
    assert f" --> --target:1:{column}" in text


def test_empty_and_unreadable_spellings() -> None:
    assert "error: empty target" in rendered("  ")
    assert "cannot read target" in rendered("cpu -mattr='+avx2")


def test_every_kind_names_a_shipped_pipeline_or_none() -> None:
    from tirc.transform.pipeline import SHIPPED

    for kind in KINDS.values():
        assert kind.pipeline is None or kind.pipeline in SHIPPED
    assert read_target("cuda").kind.reads == "tir-host-device"
