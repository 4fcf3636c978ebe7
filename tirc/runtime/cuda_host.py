"""The host statements of a lowered CUDA function, run here against a device: scalars
evaluated, host loops and conditions followed, each KernelLaunch given its grid, block,
dynamic shared memory and arguments and checked against the device's limits before it goes."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

from tirc.analysis.arith import Analyzer
from tirc.codegen.cuda.kernel import dynamic_shared_layout
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.cluster import grid_remainder
from tirc.ir.substitute import substitute
from tirc.ir.tma import tensor_maps
from tirc.runtime.cuda_driver import COMPUTE_SANITIZER, CudaError, Device
from tirc.runtime.cuda_tensor_map import encode_tensor_map


@dataclass(frozen=True)
class Pointer:
    address: Any  # CUdeviceptr


Value = int | float | bool | Pointer


@dataclass
class _KernelFacts:
    """What the driver says of a loaded kernel, asked once."""

    static_shared: int  # bytes of its __shared__ arrays
    max_threads: int  # threads a block it can run with (its registers may lower the device's)
    registers: int
    dynamic_shared: int  # the MAX_DYNAMIC_SHARED_SIZE_BYTES set so far (0: not set)


@dataclass
class HostRun:
    """The host statements of one lowered function, run against the device. With
    `synchronize_each`, each launch is waited for, so that a fault names its kernel."""

    device: Device
    program: Any  # tirc.codegen.cuda.kernels.DeviceProgram
    functions: list[Any]  # CUfunction per kernel
    name: str = "the function"
    values: dict[E.Var, Value] = field(default_factory=dict)  # scalars, and device pointers
    synchronize_each: bool = False
    launches: int = 0  # launches made by this call
    facts: dict[int, _KernelFacts] = field(default_factory=dict)
    shared_sizes: dict[int, E.PrimExpr] = field(default_factory=dict)  # per kernel, found once
    maps: dict[int, list[Any]] = field(default_factory=dict)  # TMA loads per kernel, found once

    def evaluate(self, expr: E.PrimExpr, what: str) -> int | float | bool:
        if isinstance(expr, (E.IntImm, E.FloatImm)):
            return expr.value

        known = {
            var: _literal(var, value)
            for var, value in self.values.items()
            if not var.dtype.is_handle and not isinstance(value, Pointer)
        }
        folded = Analyzer().simplify(substitute(expr, known))
        if isinstance(folded, (E.IntImm, E.FloatImm)):
            return folded.value
        raise DiagnosticError.at(
            getattr(expr, "span", None), f"--target cuda: cannot evaluate {what} on the host"
        )

    def run(self, stmt: S.Stmt, stream: Any) -> None:
        if isinstance(stmt, S.SeqStmt):
            for child in stmt.stmts:
                self.run(child, stream)
        elif type(stmt).__name__ == "KernelLaunch":
            self.launch(stmt, stream)
        elif isinstance(stmt, S.Bind):
            self.values[stmt.var] = self.evaluate(stmt.value, f"'{stmt.var.name}'")
        elif isinstance(stmt, S.AssertStmt):
            if not self.evaluate(stmt.condition, "an assertion"):
                message = getattr(stmt.message, "value", "an assertion failed")
                raise DiagnosticError.at(stmt.span, f"the function's check failed: {message}")
        elif isinstance(stmt, S.For):
            start = int(self.evaluate(stmt.min, "a host loop"))
            for value in range(start, start + int(self.evaluate(stmt.extent, "a host loop"))):
                self.values[stmt.loop_var] = value
                self.run(stmt.body, stream)
        elif isinstance(stmt, S.IfThenElse):
            if self.evaluate(stmt.condition, "a host condition"):
                self.run(stmt.then_case, stream)
            elif stmt.else_case is not None:
                self.run(stmt.else_case, stream)
        elif isinstance(stmt, S.AttrStmt):
            self.run(stmt.body, stream)
        elif isinstance(stmt, S.DeclBuffer):
            if stmt.data is not None and stmt.data is not stmt.buffer.data:
                if not isinstance(stmt.data, E.Var) or stmt.data not in self.values:
                    raise DiagnosticError.at(stmt.span, "--target cuda: a view the host lacks")
                self.values[stmt.buffer.data] = self.values[stmt.data]
        elif isinstance(stmt, (S.AllocBuffer, S.Evaluate)):
            pass  # host allocations happen first; constants do nothing
        else:
            raise DiagnosticError.at(
                stmt.span, f"--target cuda: cannot run a {type(stmt).__name__} on the host"
            )

    def launch(self, node: Any, stream: Any) -> None:
        """Launches a KernelLaunch: its kernel, with its arguments evaluated here, after
        checking its grid, block and shared memory against the device's limits."""
        kernel = self.program.kernels[node.index]

        def extent(tag: str) -> int:
            value = kernel.dims.get(tag)
            if value is None:
                return 1
            return int(self.evaluate(kernel.at_launch(value, node), f"the launch of {kernel.name}"))

        grid = (extent("blockIdx.x"), extent("blockIdx.y"), extent("blockIdx.z"))
        block = (extent("threadIdx.x"), extent("threadIdx.y"), extent("threadIdx.z"))
        if 0 in grid or 0 in block:
            return  # an empty grid: nothing to do
        cluster = kernel.cluster  # compiled into the kernel (__cluster_dims__): the launch
        reason = None if cluster is None else grid_remainder(grid, cluster)  # needs no more
        if reason is not None:
            raise DiagnosticError.at(
                None,
                f"kernel {kernel.name} runs in clusters of {_dims(cluster)} blocks, but {reason}",
            )
        if node.index not in self.shared_sizes:  # a walk of the kernel: once, not per launch
            self.shared_sizes[node.index] = dynamic_shared_layout(kernel)[1]
        shared_bytes = kernel.at_launch(self.shared_sizes[node.index], node)
        shared = int(self.evaluate(shared_bytes, f"the shared memory of {kernel.name}"))
        function = self.functions[node.index]
        self._check_launch(node.index, kernel.name, grid, block, shared)
        values: list[object] = []
        kinds: list[Any] = []
        for var, arg in zip(kernel.params, node.args, strict=True):
            if isinstance(arg, E.Var) and arg in self.values:
                value = self.values[arg]
            elif var.dtype.is_handle:
                raise DiagnosticError.at(
                    arg.span, f"--target cuda: {kernel.name} gets a pointer the host lacks"
                )
            else:
                value = self.evaluate(arg, f"an argument of {kernel.name}")
            if isinstance(value, Pointer):
                values.append(int(value.address))
                kinds.append(ctypes.c_void_p)
            else:
                values.append(value)
                kinds.append(_ctype(var))
        for load in self._tensor_maps(node.index):
            values.append(self._tensor_map(kernel, node, load))
            kinds.append(None)  # a CUtensorMap: cuda-python passes its bytes
        self.launches += 1
        self.device.call(
            "cuLaunchKernel",
            function,
            *grid,
            *block,
            shared,
            stream,
            (tuple(values), tuple(kinds)),
            0,
        )
        if self.synchronize_each:
            try:
                self.device.call("cuStreamSynchronize", stream)
            except CudaError as error:
                if not error.is_fault:
                    raise
                raise DiagnosticError.at(
                    None,
                    f"kernel {kernel.name} faulted on the GPU (launch {self.launches} of "
                    f"{self.name}, grid {_dims(grid)}, block {_dims(block)}): {error.text}",
                    Note(COMPUTE_SANITIZER),
                ) from None

    def _tensor_maps(self, index: int) -> list[Any]:
        """The TMA loads of kernel `index`, one per tensor map it takes (found once)."""
        if index not in self.maps:
            self.maps[index] = tensor_maps(self.program.kernels[index].body)
        return self.maps[index]

    def _tensor_map(self, kernel: Any, node: Any, load: Any) -> Any:
        """The tensor map of a TMA load at this launch (tirc.runtime.cuda_tensor_map)."""
        tensor = kernel.at_launch(load.tensor, node)
        pointer = self.values.get(tensor) if isinstance(tensor, E.Var) else None
        if not isinstance(pointer, Pointer):
            raise DiagnosticError.at(
                load.call.span, f"--target cuda: {kernel.name} reads a tensor the host lacks"
            )
        shape = [
            int(self.evaluate(kernel.at_launch(extent, node), f"the tensor map of {kernel.name}"))
            for extent in load.shape
        ]
        return encode_tensor_map(self.device, load, int(pointer.address), shape)

    def _check_launch(
        self,
        index: int,
        name: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared: int,
    ) -> None:
        """A DiagnosticError naming the kernel when its launch asks for more than the device
        has; opts in to more than the default shared memory when it needs it."""
        limits = self.device.limits
        facts = self._facts(index)
        for kind, sizes, most in (
            ("blockIdx", grid, limits.grid),
            ("threadIdx", block, limits.block),
        ):
            for axis, size, limit in zip("xyz", sizes, most, strict=True):
                if size < 0 or size > limit:
                    raise DiagnosticError.at(
                        None,
                        f"kernel {name} launches {size} along {kind}.{axis}, but the device "
                        f"allows at most {limit}",
                    )
        threads = block[0] * block[1] * block[2]
        if threads > facts.max_threads:
            reason = (
                f"the device allows {limits.threads_per_block}"
                if facts.max_threads >= limits.threads_per_block
                else f"with its {facts.registers} registers a thread it can run "
                f"{facts.max_threads} (the device allows {limits.threads_per_block})"
            )
            raise DiagnosticError.at(
                None,
                f"kernel {name} launches {threads} threads a block ({_dims(block)}), but {reason}",
            )
        total = facts.static_shared + shared
        if total > limits.shared_optin:
            raise DiagnosticError.at(
                None,
                f"kernel {name} needs {total} bytes of shared memory a block "
                f"({facts.static_shared} static + {shared} dynamic), but the device "
                f"({self.device.arch}) allows at most {limits.shared_optin}",
                Note("stage smaller tiles in shared memory, or fewer of them"),
            )
        if total > limits.shared_per_block and shared > facts.dynamic_shared:
            attribute = self.device.driver.CUfunction_attribute
            self.device.call(
                "cuFuncSetAttribute",
                self.functions[index],
                attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared,
            )
            facts.dynamic_shared = shared

    def _facts(self, index: int) -> _KernelFacts:
        if index not in self.facts:
            function = self.functions[index]
            self.facts[index] = _KernelFacts(
                self.device.function_attribute(function, "SHARED_SIZE_BYTES"),
                self.device.function_attribute(function, "MAX_THREADS_PER_BLOCK"),
                self.device.function_attribute(function, "NUM_REGS"),
                0,
            )
        return self.facts[index]


def _dims(sizes: tuple[int, int, int]) -> str:
    return " x ".join(str(size) for size in sizes)


def _literal(var: E.Var, value: int | float | bool) -> E.PrimExpr:
    if var.dtype.is_float:
        return E.FloatImm(float(value), var.dtype)
    return E.IntImm(int(value), var.dtype)


_CTYPES = {
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "bool": ctypes.c_bool,
}


def _ctype(var: E.Var) -> Any:
    found = _CTYPES.get(str(var.dtype))
    if found is None:
        raise DiagnosticError.at(
            var.span, f"--target cuda: cannot pass a {var.dtype} scalar to a kernel"
        )
    return found
