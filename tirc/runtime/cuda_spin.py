"""A kernel that keeps the GPU busy while the host queues the calls it is about to time.

Python takes tens of microseconds to queue a call (tirc's host statements run in Python);
timed one at a time, a call of a few microseconds would be timed with that gap in it. Queued
behind this kernel, which spins for as long as the host needs to queue all of them, the calls
then run back to back, and a pair of CUDA events around each one measures the GPU alone.

    spin = Spinner.load(device, releases)
    spin.launch(stream, seconds=2e-3)   # then queue the timed calls on the same stream
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from tirc.runtime.cuda_driver import CudaError, Device, Releases

PTX = """\
.version 7.0
.target sm_70
.address_size 64

.visible .entry tirc_spin(.param .u64 cycles)
{
    .reg .pred %p;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [cycles];
    mov.u64 %rd2, %clock64;
SPIN:
    mov.u64 %rd3, %clock64;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.s64 %p, %rd4, %rd1;
    @%p bra SPIN;
    ret;
}
"""

FALLBACK_HERTZ = 2.5e9  # above any GPU's clock: spinning longer than needed is harmless


@dataclass(frozen=True)
class Spinner:
    """The spinning kernel, loaded on a device, and the device's clock rate."""

    device: Device
    function: Any
    hertz: float

    @classmethod
    def load(cls, device: Device, releases: Releases) -> Spinner:
        """Loads the kernel (the driver compiles its PTX); `releases` unloads it."""
        module = device.call("cuModuleLoadData", PTX.encode() + b"\0")
        releases.add("cuModuleUnload", module)
        function = device.call("cuModuleGetFunction", module, b"tirc_spin")
        try:
            hertz = device.attribute("CLOCK_RATE") * 1e3  # the attribute is in kHz
        except (AttributeError, CudaError):  # an attribute a CUDA release may retire
            hertz = FALLBACK_HERTZ
        return cls(device, function, hertz)

    def launch(self, stream: Any, seconds: float) -> None:
        """Queues on `stream` one thread that spins for about `seconds`."""
        cycles = max(1, int(seconds * self.hertz))
        self.device.call(
            "cuLaunchKernel",
            self.function,
            1, 1, 1, 1, 1, 1,
            0,
            stream,
            ((cycles,), (ctypes.c_uint64,)),
            0,
        )  # fmt: skip
