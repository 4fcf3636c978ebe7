"""Constructs TVM 0.27 prints in its own tests' programs (tools/check_tvm_programs.py).

tvm_constructs/ holds one small program per construct, as TVM prints it: each reads, prints
back byte for byte, reads back to an equal module, and passes the verifier. The tests below
check what each construct reads to, and the located refusal where tirc cannot compile it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tirc.analysis.well_formed import verify_module
from tirc.diagnostics import DiagnosticError, Severity
from tirc.ir.expr import Buffer, Call
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.stmt import AttrStmt, Evaluate, TargetAttr
from tirc.ir.structural import find_difference
from tirc.text import parse, print_module

PROGRAMS = Path(__file__).parent / "tvm_constructs"


def _read(name: str) -> IRModule:
    path = PROGRAMS / f"{name}.tir"
    return parse(path.read_text(), name=str(path))


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("*.tir")), ids=lambda path: path.stem)
def test_program_reads_prints_and_verifies(path: Path) -> None:
    text = path.read_text()
    module = parse(text, name=str(path))
    printed = print_module(module)
    assert printed == text
    difference = find_difference(module, parse(printed, name=f"{path} (printed)"))
    assert difference is None, difference
    errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    assert not errors, errors[0]


def test_target_attribute_keeps_its_config() -> None:
    target = _read("target_attr").functions[0][1].attrs.get("target")
    assert isinstance(target, TargetAttr)
    assert not isinstance(target.config, str)
    assert target.config.get("kind") == "cuda"
    assert target.config.get("keys") == ("cuda", "gpu")
    host = target.config.get("host")
    assert not isinstance(host, str) and host is not None


def _refusal(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    from tirc.cli.main import main

    assert main(args) == 1
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "emit"), [("interp", None), ("cpu", "ll"), ("cuda", "cu")], ids=str
)
def test_vscale_reads_but_no_backend_runs_it(
    target: str, emit: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(PROGRAMS / "vscale.tir")
    if emit is None:
        args = ["run", path, "--target", target]
    else:
        args = ["compile", path, "--target", target, "--emit", emit, "-o", str(tmp_path / "out")]
    message = _refusal(args, capsys)
    assert "T.vscale" in message
    assert "vscale.tir:6:27" in message


def test_ptx_legacy_mma_is_ptx_mma_and_runs() -> None:
    import numpy as np

    from tirc import interp

    func = _read("ptx_legacy_mma")["main"]
    calls = [node for node in _calls(func) if node.op == "ptx_mma"]
    assert len(calls) == 1 and calls[0].dtype.is_void and len(calls[0].args) == 13
    args = interp.random_inputs(func, seed=0)
    interp.run(func, args)
    a, b = (np.asarray(args[name], dtype=np.float32) for name in ("A", "B"))
    np.testing.assert_allclose(args["C"], a @ b, rtol=1e-6)


def test_tvm_async_copy_spellings_read_as_tirc_intrinsics() -> None:
    text = (PROGRAMS / "ptx_namespace.tir").read_text().split("@T.prim_func")[0] + (
        "@T.prim_func\n"
        'def main(A: T.Buffer((128,), "float16"), B: T.Buffer((128,), "float16")):\n'
        '    tx = T.launch_thread("threadIdx.x", 16)\n'
        '    A_shared = T.alloc_shared((128,), "float16")\n'
        '    T.s_tir.cp_async_raw("float16", A_shared.data, tx * 8, A.data, tx * 8, 16)\n'
        '    T.ptx.cp("async", "commit_group", "")\n'
        '    T.ptx.cp(0, "async", "wait_group", "")\n'
        "    B[tx * 8] = A_shared[tx * 8]"
    )
    func = parse(text)["main"]
    found = [(call.op, str(call.dtype), len(call.args)) for call in _calls(func)]
    assert found == [
        ("ptx_cp_async", "float16", 5),
        ("ptx_commit_group", "void", 0),
        ("ptx_wait_group", "void", 1),
    ]


def test_ptx_instruction_reads_but_no_backend_emits_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(PROGRAMS / "ptx_namespace.tir")
    out = str(tmp_path / "out.cu")
    message = _refusal(["compile", path, "--target", "cuda", "--emit", "cu", "-o", out], capsys)
    assert "T.ptx.griddepcontrol" in message and "ptx_namespace.tir:7:5" in message


def _calls(func: object) -> list[Call]:
    found: list[Call] = []
    walk(func, lambda node: found.append(node) if isinstance(node, Call) else None)
    return found


def test_target_attribute_statement_holds_a_target() -> None:
    stmt = _read("target_attr_stmt")["main"].body
    assert isinstance(stmt, AttrStmt) and isinstance(stmt.node, TargetAttr)
    assert stmt.key == "target"


def test_struct_get_writes_its_dtype_last() -> None:
    calls = _calls(_read("host_intrinsics")["main"])
    found = [(str(call.dtype), len(call.args)) for call in calls if call.op == "tvm_struct_get"]
    assert found == [("int32", 3)]
    text = (PROGRAMS / "host_intrinsics.tir").read_text()
    text = text.replace('12, "int32")', "1, T.handle().ty)")
    module = parse(text)
    assert print_module(module) == text
    (call,) = [call for call in _calls(module["main"]) if call.op == "tvm_struct_get"]
    assert call.dtype.is_handle


def test_packed_call_reads_but_the_cpu_backend_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(PROGRAMS / "host_intrinsics.tir")
    out = str(tmp_path / "out.ll")
    message = _refusal(["compile", path, "--target", "cpu", "--emit", "ll", "-o", out], capsys)
    assert "T.call_packed" in message and "host_intrinsics.tir:6:5" in message


def test_subroutine_call_is_typed_by_its_callee() -> None:
    module = _read("subroutine_call")
    found = [(call.op, str(call.dtype)) for call in _calls(module["main"])]
    assert found == [("Module.subroutine", "void"), ("Module.twice", "int32")]
    # a call of a function the module does not have: a located verifier error
    calls = _calls(module["main"])
    orphan = dataclasses.replace(calls[0], op="Module.missing")
    body = Evaluate(orphan, span=calls[0].span)
    broken = IRModule((("main", dataclasses.replace(module["main"], body=body)),))
    assert [d.message for d in verify_module(broken)] == [
        "the module has no function 'missing' to call"
    ]


def test_subroutine_call_of_an_unknown_function_is_a_parse_error() -> None:
    text = (PROGRAMS / "subroutine_call.tir").read_text().replace("Module.twice", "Module.thrice")
    with pytest.raises(DiagnosticError, match="unknown name Module.thrice") as error:
        parse(text, name="calls.tir")
    assert "calls.tir:19:34" in str(error.value)


@pytest.mark.parametrize(
    ("target", "emit"), [("interp", None), ("cpu", "ll"), ("cuda", "cu")], ids=str
)
def test_stored_only_types_are_refused_where_a_run_or_build_starts(
    target: str, emit: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(PROGRAMS / "narrow_types.tir")
    if emit is None:
        args = ["run", path, "--target", target]
    else:
        args = ["compile", path, "--target", target, "--emit", emit, "-o", str(tmp_path / "out")]
    message = _refusal(args, capsys)
    assert "buffer 'A' of type int4: tirc reads and prints int4 but neither" in message
    assert "narrow_types.tir:5:13" in message
    assert "a value of type float4_e2m1fn" in message and "narrow_types.tir:16:5" in message


def test_metal_simdgroup_reads_but_no_backend_emits_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    func = _read("metal_simdgroup")["kernel"]
    ops = [call.op for call in _calls(func) if call.op.startswith("metal.")]
    assert ops == [
        "metal.make_filled_simdgroup_matrix",
        "metal.simdgroup_load",
        "metal.simdgroup_store",
        "metal.simdgroup_multiply_accumulate",
    ]
    path = str(PROGRAMS / "metal_simdgroup.tir")
    out = str(tmp_path / "out.ll")
    message = _refusal(["compile", path, "--target", "cpu", "--emit", "ll", "-o", out], capsys)
    assert "T.metal.make_filled_simdgroup_matrix" in message, message
    assert "metal_simdgroup.tir:14:" in message, message


def test_void_pointer_keeps_its_storage_scope() -> None:
    """`T.handle(storage_scope="shared")`: a buffer declared over it is shared (it was global:
    the scope went with the untyped pointer)."""
    func = _read("void_pointer_scope")["kernel"]
    scopes: dict[str, str] = {}
    walk(func, lambda n: scopes.update({n.name: n.scope}) if isinstance(n, Buffer) else None)
    assert scopes["void_buffer"] == "shared" and scopes["typed_buffer"] == "shared"
