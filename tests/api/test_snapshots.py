"""Snapshots of the tvm-ffi wrappers, so that a change shows its effect on real output: the
CUDA C of docs/examples/scale.tir (symbolic shapes) and of a declared stride, and the LLVM IR
of the CPU wrapper before optimization. Regenerate with TIRC_UPDATE_SNAPSHOTS=1 and review
the diff."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest

from tests.api.helpers import SCALE, STRIDED
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.header import exported_functions
from tirc.codegen.llvm.module import build_ir
from tirc.codegen.llvm.target import target_machine
from tirc.codegen.llvm.tvm_ffi import add_tvm_ffi_wrappers
from tirc.driver.lower import lower_module
from tirc.driver.target import parse_target
from tirc.text import parse

SNAPSHOTS = Path(__file__).parent / "snapshots"
PROGRAMS = {"scale": SCALE.read_text(), "strided": STRIDED}


def check(got: str, name: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("TIRC_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(got)
    want = path.read_text()
    if got != want:
        diff = "".join(
            difflib.unified_diff(want.splitlines(True), got.splitlines(True), "snapshot", "emitted")
        )
        pytest.fail(f"{path.name} changed (TIRC_UPDATE_SNAPSHOTS=1 to accept):\n{diff}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cuda_wrapper_snapshot(name: str) -> None:
    lowered = lower_module(parse(PROGRAMS[name], name=f"{name}.tir"), target="cuda")
    text = emit_cuda(lowered, abi="tvm-ffi")
    wrapper = text[text.index('extern "C" int __tvm_ffi_main') :]
    check(wrapper, f"{name}.tvm_ffi.cu")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_llvm_wrapper_snapshot(name: str) -> None:
    lowered = lower_module(parse(PROGRAMS[name], name=f"{name}.tir"), target="cpu")
    target = parse_target("cpu")
    module, _ = build_ir(lowered, target, target_machine(target, 3))
    add_tvm_ffi_wrappers(module, lowered, exported_functions(lowered))
    found = re.search(r'^define i32 @"__tvm_ffi_main".*?^}$', str(module), re.M | re.S)
    assert found, "no __tvm_ffi_main in the module"
    check(found.group(0) + "\n", f"{name}.tvm_ffi.ll")
