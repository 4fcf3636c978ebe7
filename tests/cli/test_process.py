"""The real process: `python -m tirc` starts fast, imports nothing heavy, and exits cleanly."""

from __future__ import annotations

import subprocess
import sys

from tirc import __version__

HEAVY = ("numpy", "lark", "rich", "llvmlite", "ml_dtypes")


def test_version_in_a_fresh_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tirc", "--version"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"tirc {__version__}\n", "")


def test_version_and_help_import_nothing_heavy() -> None:
    probe = (
        "import sys\n"
        "from tirc.cli.main import main\n"
        "assert main(['--version']) == 0 and main(['--help']) == 0\n"
        f"print(sorted(name for name in {HEAVY!r} if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"


def test_usage_error_in_a_fresh_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tirc", "print"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "Missing argument 'FILE'" in done.stderr
