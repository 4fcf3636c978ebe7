"""`tirc compile --target cuda` warns of a kernel that its -arch can never launch (too much
shared memory a block, too many threads), and still writes the code, which compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from tirc.cli.main import main

Capture = pytest.CaptureFixture[str]

BIG_SHARED = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((SIZE,), "float32"), B: T.Buffer((SIZE,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            with T.sblock("stage"):
                S = T.sblock_alloc_buffer((SIZE,), scope="shared")
                for i in range(SIZE // 128):
                    with T.sblock("load"):
                        vi = T.axis.spatial(SIZE, i * 128 + tx)
                        S[vi] = A[vi]
                for i in range(SIZE // 128):
                    with T.sblock("store"):
                        vi = T.axis.spatial(SIZE, i * 128 + tx)
                        B[vi] = S[SIZE - 1 - vi]
"""


def compile_for(tmp_path: Path, size: int, arch: str) -> tuple[int, Path]:
    source = tmp_path / "k.tir"
    source.write_text(BIG_SHARED.replace("SIZE", str(size)))
    out = tmp_path / "k.cu"
    code = main(["compile", str(source), "--target", f"cuda -arch={arch}", "-o", str(out)])
    return code, out


def test_shared_memory_beyond_the_arch_is_a_warning_naming_kernel_bytes_and_limit(
    tmp_path: Path, capsys: Capture
) -> None:
    code, out = compile_for(tmp_path, 32768, "sm_75")  # 128 KiB > sm_75's 64 KiB
    err = capsys.readouterr().err
    assert code == 0 and out.exists()
    assert "warning: kernel main_kernel needs 131072 bytes of shared memory a block" in err
    assert "sm_75 allows at most 65536" in err


def test_shared_memory_within_the_arch_says_nothing(tmp_path: Path, capsys: Capture) -> None:
    code, out = compile_for(tmp_path, 32768, "sm_90")  # 128 KiB <= sm_90's 227 KiB
    assert code == 0 and out.exists()
    assert "warning" not in capsys.readouterr().err
