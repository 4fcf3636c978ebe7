"""`make -C samples` builds the whole gallery with tirc (object, header, CUDA C and PTX per
kernel, the C client and, with nvcc, the CUDA client), the C client passes, and the depfiles
make a rebuild exact: touching one plan remakes only what was made from it."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.samples.helpers import SAMPLES, gallery_kernels, tirc_command

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("make") is None or shutil.which("gcc") is None, reason="needs make and gcc"
    ),
]

KERNELS = gallery_kernels()
HAS_NVCC = shutil.which("nvcc") is not None


def make(directory: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["make", "-C", str(directory), f"TIRC={tirc_command()}", "-j2", *targets],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A copy of samples/ after `make -j2` (which builds everything and runs the C client)."""
    copy = tmp_path_factory.mktemp("samples") / "samples"
    shutil.copytree(SAMPLES, copy, ignore=shutil.ignore_patterns("build", "bench"))
    return copy, make(copy).stdout


def test_every_artifact_is_built(built: tuple[Path, str]) -> None:
    directory, _ = built
    build = directory / "build"
    for name in KERNELS:
        for suffix in (".o", ".h", ".cu", ".ptx"):
            artifact = build / f"{name}{suffix}"
            assert artifact.is_file() and artifact.stat().st_size > 0, artifact.name
            rule = (build / f"{name}{suffix}.d").read_text()
            target = "cpu" if suffix in (".o", ".h") else "cuda"
            assert rule.startswith(f"build/{name}{suffix}: {name}.tir {name}.{target}.plan.json ")
            assert f"pipelines/{target}.toml" in rule  # what tirc read, its pipeline included
        header = (build / f"{name}.h").read_text()
        assert f" {name}_main(" in header
        launcher = (build / f"{name}.cu").read_text()
        assert f'extern "C" int {name}_main_launch(' in launcher
        assert f".entry {name}_main_kernel" in (build / f"{name}.ptx").read_text()
    assert (build / "c_client").is_file()
    assert (build / "cuda_client").is_file() == HAS_NVCC


def test_the_c_client_checks_every_kernel(built: tuple[Path, str]) -> None:
    _, out = built
    assert f"all {len(KERNELS)} kernels match" in out
    assert out.count("matches the naive loop") == len(KERNELS)


def test_ptx_assembles(built: tuple[Path, str]) -> None:
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not installed")
    directory, _ = built
    for name in KERNELS:
        ptx = directory / "build" / f"{name}.ptx"
        done = subprocess.run(
            [ptxas, "-arch=sm_90", str(ptx), "-o", str(ptx.with_suffix(".cubin"))],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"{ptx.name}: {done.stderr}"


def _mtimes(build: Path) -> dict[str, int]:
    return {path.name: path.stat().st_mtime_ns for path in build.iterdir()}


def _rebuilt_after_touching(directory: Path, plan: str) -> set[str]:
    build = directory / "build"
    make(directory, "artifacts")  # up to date first, should tirc's own files have changed
    before = _mtimes(build)
    time.sleep(1.1)  # past the file system's timestamp granularity
    (directory / plan).touch()
    make(directory, "artifacts")
    after = _mtimes(build)
    return {name for name, stamp in after.items() if before.get(name) != stamp}


def test_touching_a_plan_rebuilds_only_its_outputs(built: tuple[Path, str]) -> None:
    # the header is made again but, being the same, left untouched (tirc keeps an identical
    # output), so nothing that includes it is rebuilt: the C client does not relink
    directory, _ = built
    header = (directory / "build" / "layernorm.h").read_bytes()
    cpu = _rebuilt_after_touching(directory, "layernorm.cpu.plan.json")
    assert {"layernorm.o"} <= cpu
    assert cpu <= {"layernorm.o", "layernorm.o.d", "layernorm.h.d", "c_client"}
    assert (directory / "build" / "layernorm.h").read_bytes() == header
    cuda = _rebuilt_after_touching(directory, "softmax.cuda.plan.json")
    assert {"softmax.cu", "softmax.ptx"} <= cuda
    linked = {"softmax.cu.o", "cuda_client"} if HAS_NVCC else set()
    assert cuda <= {"softmax.cu", "softmax.ptx", "softmax.cu.d", "softmax.ptx.d", *linked}
    # a build after that changes no file (a kept header's rule runs again, writing nothing)
    build = directory / "build"
    before = _mtimes(build)
    time.sleep(1.1)
    make(directory, "artifacts")
    assert _mtimes(build) == before, "a second build rewrote files"
