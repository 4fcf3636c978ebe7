"""tirc from Python: the command line's pipeline (tirc.driver) as functions, and compiled
functions callable on numpy arrays and DLPack tensors (docs/python.md).

    import tirc
    mod = tirc.build("samples/softmax.tir", plan="samples/softmax.cpu.plan.json")
    mod.main(a, b)                    # numpy arrays, torch CPU tensors, any DLPack tensor
    mod.export("softmax.so")          # a library tvm_ffi.load_module loads

Every error tirc diagnoses is raised as CompileError, which carries the diagnostics.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tirc.codegen.ffi_signature import ffi_signature
from tirc.codegen.header import exported_functions, header_text
from tirc.diagnostics import Diagnostic, DiagnosticError
from tirc.diagnostics import Source as Text
from tirc.diagnostics.render import format_plain
from tirc.driver.compile import check_abi, link_shared
from tirc.driver.host_threads import check_runs_on_cpu
from tirc.driver.output import write_output
from tirc.driver.program import parse_source, verify_program
from tirc.driver.schedule import apply_plan_source
from tirc.driver.source import read_source
from tirc.driver.target import parse_target
from tirc.ir.function import IRModule
from tirc.runtime.tvm_ffi_library import build_and_load, device_arch, import_tvm_ffi

if TYPE_CHECKING:
    from tirc.codegen.ffi_signature import FfiSignature


class CompileError(DiagnosticError):
    """A program, plan, pipeline or target that tirc refused. `diagnostics` holds each
    error (its `message`, `span` with `file:line:col`, `notes`); str() is the rendered text
    the command line prints, with the source line and a caret."""

    def __init__(self, diagnostics: tuple[Diagnostic, ...]) -> None:
        super().__init__(diagnostics)

        self.args = ("".join(format_plain(d) for d in diagnostics).rstrip("\n"),)

    @property
    def locations(self) -> list[str]:
        """`file:line:col` of each located diagnostic."""
        return [str(d.span) for d in self.diagnostics if d.span is not None]


@contextmanager
def _diagnosed() -> Iterator[None]:
    try:
        yield
    except CompileError:
        raise
    except DiagnosticError as error:
        raise CompileError(error.diagnostics) from None


def parse(
    source: str | os.PathLike[str], *, defines: Mapping[str, object] | None = None
) -> IRModule:
    """The module in `source`: TVMScript text, or the path of a .tir file. `defines`
    overrides module-level parameters (`-D N=64`: `defines={"N": 64}`). The module is
    verified (docs/validity.md)."""

    with _diagnosed():
        text = str(source) if not isinstance(source, os.PathLike) else None
        if text is not None and _is_program_text(text):
            read = Text("<string>", text)
        else:
            read = read_source(os.fspath(source))
        values = {name: str(value) for name, value in (defines or {}).items()}
        module = parse_source(read, values)
        verify_program(module)
    return module


def schedule(
    module: str | os.PathLike[str] | IRModule,
    plan: str | os.PathLike[str] | list[Any] | dict[str, Any],
    *,
    intrinsics: str | os.PathLike[str] | None = None,
) -> IRModule:
    """`module` scheduled by `plan`: the path of a plan file, or the plan itself as a JSON
    value (either form, docs/plans.md). `intrinsics` names a JSON file of tensor intrinsics."""

    module = _module(module)
    with _diagnosed():
        if isinstance(plan, (list, dict)):
            plan_source = Text("<plan>", json.dumps(plan))
        else:
            plan_source = read_source(os.fspath(plan))
        scheduled, _ = apply_plan_source(module, plan_source, _path(intrinsics))
    return scheduled


def lower(
    module: str | os.PathLike[str] | IRModule,
    *,
    target: str = "cpu",
    pipeline: str | os.PathLike[str] | None = None,
) -> IRModule:
    """`module` lowered by the target's pipeline, or by the pipeline file `pipeline`."""
    from tirc.driver.lower import lower_module  # deferred: the transform layer, only when lowering

    module = _module(module)
    with _diagnosed():
        path = os.fspath(pipeline) if pipeline is not None else None
        return lower_module(module, target=target, pipeline_path=path)


def build(
    module: str | os.PathLike[str] | IRModule,
    *,
    target: str = "cpu",
    plan: str | os.PathLike[str] | list[Any] | dict[str, Any] | None = None,
    intrinsics: str | os.PathLike[str] | None = None,
    pipeline: str | os.PathLike[str] | None = None,
    opt_level: int = 3,
) -> Module:
    """`module` (scheduled by `plan` first, with the tensor intrinsics in the JSON file
    `intrinsics`, as `tirc compile --plan --intrinsics` does) compiled and loaded into this
    process.

    `target="cpu"` (or `cpu -mcpu=...`) compiles with LLVM and calls through the JIT, with
    numpy arrays or any CPU DLPack tensor; `target="cuda"` compiles the CUDA C with nvcc into
    a tvm-ffi library and calls it through tvm_ffi (apache-tvm-ffi), with CUDA tensors.
    """
    module = _module(module)
    if plan is not None:
        module = schedule(module, plan, intrinsics=intrinsics)
    with _diagnosed():
        kind = parse_target(target)
        if kind.backend == "cuda":
            return _build_cuda(module, target, _path(pipeline))
        if kind.backend != "llvm":
            raise DiagnosticError.at(None, f"tirc.build compiles for cpu or cuda, not '{target}'")
        return _build_cpu(module, target, _path(pipeline), opt_level)


class Function:
    """One compiled function: call it with the C ABI's parameters in order (docs/abi.md), an
    array for each buffer; the shape parameters may be left out, and are then told from the
    arrays. Arrays are updated in place. Raises TypeError or ValueError, naming the
    parameter, for a wrong argument, and RuntimeError when an assertion of the program
    fails."""

    def __init__(self, signature: FfiSignature, call: Callable[..., None], code: object) -> None:
        self.signature = signature
        self._call = call
        self._code = code  # what the code lives in, kept as long as the function is
        self.__doc__ = signature.describe()

    def __call__(self, *args: object) -> None:
        self._call(*args)

    def __repr__(self) -> str:
        return f"<tirc.Function {self.signature.describe()}>"


class Module:
    """The compiled functions of a module, by name (`mod.main`, `mod["main"]`), and the
    lowered module they came from."""

    def __init__(
        self,
        lowered: IRModule,
        functions: dict[str, Function],
        export: Callable[[str, str], bytes | str],
    ) -> None:
        self.lowered = lowered
        self.functions = functions
        self._export = export

    def __getitem__(self, name: str) -> Function:
        return self.functions[name]

    def __getattr__(self, name: str) -> Function:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(f"the module has no function {name!r} (it has {', '.join(functions)})")

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.functions]

    def export(self, path: str | os.PathLike[str], *, abi: str = "tvm-ffi") -> None:
        """Writes the module to `path`, by its suffix: `.so` a shared library (with
        `abi="tvm-ffi"` one `tvm_ffi.load_module` loads, `abi="c"` the plain C ABI), `.o` an
        object, `.h` the C header (cpu); `.so` or `.cu` (cuda)."""

        with _diagnosed():
            data = self._export(Path(path).suffix, abi)
            write_output(os.fspath(path), data)


def _build_cpu(module: IRModule, target: str, pipeline: str | None, opt_level: int) -> Module:
    # deferred: llvmlite (about a second), only when building for the CPU
    from tirc.codegen.llvm import compile_module
    from tirc.driver.lower import lower_module  # deferred: the transform layer, only when lowering
    from tirc.runtime.arguments import call_jit

    # deferred: llvmlite (about a second), only when building for the CPU
    from tirc.runtime.jit import JitModule

    check_runs_on_cpu(module)
    lowered = lower_module(module, target=target, pipeline_path=pipeline)
    cpu = parse_target(target)
    compiled = compile_module(lowered, cpu, opt_level)
    exported = exported_functions(lowered)
    jit = JitModule(compiled, {symbol: lowered[name] for symbol, name in exported})
    functions: dict[str, Function] = {}
    for symbol, name in exported:
        signature = ffi_signature(symbol, lowered[name])
        entry = jit[symbol]

        def call(*args: object, entry: Any = entry, signature: FfiSignature = signature) -> None:
            status = call_jit(entry, signature, args)
            if status != 0:
                raise RuntimeError(f"{signature.name}: an assertion of the program failed")

        functions[name] = Function(signature, call, jit)

    def export(suffix: str, abi: str) -> bytes | str:

        check_abi(abi)
        if suffix == ".h":
            return header_text(lowered, "tirc")
        code = compile_module(lowered, cpu, opt_level, "", abi)
        if suffix == ".o":
            return code.object_code()
        if suffix == ".so":
            return link_shared(code)
        raise DiagnosticError.at(None, f"cannot export a cpu module as '{suffix}' (.so, .o or .h)")

    return Module(lowered, functions, export)


def _build_cuda(module: IRModule, target: str, pipeline: str | None) -> Module:
    """`module` lowered for cuda, its CUDA C with the tvm-ffi functions compiled by nvcc,
    and loaded through tvm_ffi."""
    # deferred: the CUDA backend (half a second), only when building for CUDA
    from tirc.codegen.cuda import emit_cuda

    # deferred: the CUDA backend (half a second), only when building for CUDA
    from tirc.codegen.cuda.kernels import device_programs
    from tirc.driver.lower import lower_module  # deferred: the transform layer, only when lowering

    import_tvm_ffi()  # before the build, which is no use without it
    lowered = lower_module(module, target=target, pipeline_path=pipeline)
    arch = parse_target(target).arch or device_arch("sm_90")
    library, loaded = build_and_load(emit_cuda(lowered, abi="tvm-ffi"), arch)
    functions = {}
    for name, program in device_programs(lowered):
        if not program.func.is_private:
            signature = ffi_signature(name, program.func)
            functions[name] = Function(signature, loaded[name], loaded)

    def export(suffix: str, abi: str) -> bytes | str:
        if suffix == ".cu":
            return emit_cuda(lowered, abi=abi)
        if suffix == ".so" and abi == "tvm-ffi":
            return library
        raise DiagnosticError.at(
            None, f"cannot export a cuda module as '{suffix}' with abi {abi} (.so or .cu)"
        )

    return Module(lowered, functions, export)


def _module(module: str | os.PathLike[str] | IRModule) -> IRModule:

    return module if isinstance(module, IRModule) else parse(module)


def _path(path: str | os.PathLike[str] | None) -> str | None:
    return os.fspath(path) if path is not None else None


def _is_program_text(text: str) -> bool:
    """Text, rather than a path: a path has no line break and no decorator."""
    return "\n" in text or text.lstrip().startswith("@")
