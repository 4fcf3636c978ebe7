"""samples/python/: the script that builds a kernel and calls it from Python runs and passes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from tests.api.helpers import SAMPLES


def test_softmax_sample_runs() -> None:
    script = SAMPLES / "python" / "softmax_torch.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    framework = "torch" if importlib.util.find_spec("torch") else "numpy"
    assert f"{framework}: max error" in done.stdout
    if importlib.util.find_spec("tvm_ffi"):
        assert "tvm-ffi: refused a wrong call: main: B.shape[0] is 2, but must be 4" in done.stdout
        assert "tvm-ffi: rows sum to 1.000000" in done.stdout
