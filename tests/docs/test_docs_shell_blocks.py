"""Every shell command in README.md and docs/*.md runs as written, from a copy of the
repository's samples and docs, and exits as the document says (0 unless `# exits N`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.shell_blocks import Command, commands_of

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# What the commands may read, copied to a scratch directory that stands for the root.
NEEDED = ("samples", "docs", "tirc/transform/pipelines")

pytestmark = pytest.mark.slow


def copy_tree(target: Path) -> None:
    for name in NEEDED:
        shutil.copytree(ROOT / name, target / name)


def run(command: Command, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    environment["OMP_WAIT_POLICY"] = "passive"  # a shared machine: no spinning threads
    environment["OMP_NUM_THREADS"] = "2"
    environment.pop("NO_COLOR", None)
    return subprocess.run(
        ["bash", "-c", command.text],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_shell_blocks_run(document: Path, tmp_path: Path) -> None:
    commands = commands_of(document, ROOT)
    if not commands:
        pytest.skip(f"{document.name} has no shell blocks")
    copy_tree(tmp_path)
    for command in commands:  # in order: a later command may use an earlier one's output
        result = run(command, tmp_path)
        assert result.returncode == command.exit_status, (
            f"{command.document}:{command.line}: `{command.text}` exited {result.returncode}, "
            f"expected {command.exit_status}\nstdout:\n{result.stdout[-2000:]}\n"
            f"stderr:\n{result.stderr[-2000:]}"
        )


def test_blocks_are_found(tmp_path: Path) -> None:
    document = tmp_path / "d.md"
    document.write_text(
        "text\n```sh\ntirc print a.tir\n# a comment\n\ntirc diff a b  # exits 1\n```\n"
        "```console\n$ tirc check a.tir\nerror: ...\n```\n```python\nx = 1\n```\n"
    )
    found = [(c.line, c.text, c.exit_status) for c in commands_of(document, tmp_path)]
    assert found == [
        (3, "tirc print a.tir", 0),
        (6, "tirc diff a b  # exits 1", 1),
        (9, "tirc check a.tir", 0),
    ]
