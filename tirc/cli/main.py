"""The `tirc` command: options and arguments, handed to tirc.driver.commands.

Only click is imported up front, so `tirc --version` and `tirc --help` start fast; each
command imports the driver (and through it what it needs: numpy, rich, llvmlite...) when
it runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click

from tirc import __version__
from tirc.driver.exit_code import ExitCode

if TYPE_CHECKING:
    from tirc.diagnostics import DiagnosticError
    from tirc.driver.lower import LowerOptions
    from tirc.ir.target import Target


def examples(*lines: str) -> str:
    """An `Examples:` section for a command's --help, its lines kept as written."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


class Choice(click.Choice):
    """click.Choice that suggests the closest choice for a misspelt value (`--emit objj`)."""

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> object:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as error:
            import difflib  # deferred: only a misspelt value pays for it

            close = difflib.get_close_matches(str(value), [str(c) for c in self.choices], n=1)
            if not close:
                raise
            raise click.BadParameter(
                f"{error.message} Did you mean '{close[0]}'?", ctx, param
            ) from None


def complete_passes(
    context: click.Context, parameter: click.Parameter, incomplete: str
) -> list[str]:
    from tirc.driver.explain import pass_names  # deferred: start-up (see the module docstring)

    return [name for name in pass_names() if name.startswith(incomplete)]


def complete_explained(
    context: click.Context, parameter: click.Parameter, incomplete: str
) -> list[str]:
    from tirc.driver.explain import all_names  # deferred: start-up (see the module docstring)

    return [name for name in all_names() if name.startswith(incomplete)]


class TargetError(click.BadParameter):
    """A `--target` tirc does not know: shown as the diagnostic it is, exit status 1."""

    exit_code = 1

    def __init__(self, error: DiagnosticError) -> None:
        super().__init__(str(error))
        self.error = error

    def show(self, file: object = None) -> None:
        from tirc.diagnostics.render import render  # deferred: start-up (see the module docstring)

        render(self.error.diagnostics)


class TargetType(click.ParamType):
    """`--target`, read once here into a Target (tirc.driver.target.parse_target)."""

    name = "target"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> Target:
        # deferred: start-up (see the module docstring)
        from tirc.diagnostics import DiagnosticError
        from tirc.driver.target import parse_target  # deferred: start-up (see the module docstring)
        from tirc.ir.target import Target  # deferred: start-up (see the module docstring)

        if isinstance(value, Target):
            return value
        try:
            return parse_target(str(value))
        except DiagnosticError as error:
            raise TargetError(error) from None

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[click.shell_completion.CompletionItem]:
        from tirc.ir.target import SPELLINGS  # deferred: start-up (see the module docstring)

        return [
            click.shell_completion.CompletionItem(name)
            for name in SPELLINGS
            if name.startswith(incomplete)
        ]


TARGET = TargetType()


# `-D NAME=VALUE`, repeatable: the command's `defines`, for tirc.driver.defines.parse_defines
defines_option = click.option(
    "-D", "defines", multiple=True, metavar="NAME=VALUE", help="Override a module parameter."
)


def program_options(
    *, target: str, target_help: str, func_help: str | None = None
) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """The options that say which program is built and for what, as compile, run and tune
    take them: `--target` (read into a Target, default `target`), `-D NAME=VALUE`
    (defines_option) and, where `func_help` is given, `--func NAME`."""

    def decorate(command: Callable[..., int]) -> Callable[..., int]:
        command = defines_option(command)
        if func_help is not None:
            command = click.option("--func", "func", default=None, metavar="NAME", help=func_help)(
                command
            )
        return click.option(
            "--target", type=TARGET, default=target, show_default=True, help=target_help
        )(command)

    return decorate


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=examples(
        "tirc print samples/matmul.tir",
        "tirc run samples/matmul.tir --plan samples/matmul.cpu.plan.json --target cpu "
        "--check --bench",
        "tirc explain split",
        'eval "$(_TIRC_COMPLETE=bash_source tirc)"    # shell completion (docs/cli.md)',
        "`tirc COMMAND --help` shows each command's options and examples.",
    ),
)
@click.version_option(__version__, "--version", prog_name="tirc", message="%(prog)s %(version)s")
@click.option(
    "--traceback",
    is_flag=True,
    envvar="TIRC_TRACEBACK",
    help="Show the Python trace of an internal error (also TIRC_TRACEBACK=1).",
)
@click.pass_context
def cli(context: click.Context, traceback: bool) -> None:
    """tirc, a TensorIR compiler: parse, check, schedule, lower and emit tensor programs."""
    context.obj = traceback


def guarded(action: Callable[[], int]) -> int:
    from tirc.driver.guard import run_guarded  # deferred: start-up (see the module docstring)
    from tirc.driver.remarks import remark_scope  # deferred: start-up (see the module docstring)

    context = click.get_current_context()
    show_traceback = bool(context.obj)
    with remark_scope(as_errors=bool(context.meta.get(REMARKS_AS_ERRORS))):
        return run_guarded(action, show_traceback=show_traceback)


REMARKS_AS_ERRORS = "tirc.remarks_as_errors"


def remember_remarks(context: click.Context, parameter: click.Parameter, value: object) -> None:
    context.meta[REMARKS_AS_ERRORS] = value == "error"


# `-W error`, for the commands that lower: a remark (a schedule's request that lowering could
# not honour) becomes an error. Not passed to the command: `guarded` reads it.
remarks_option = click.option(
    "-W",
    "remarks",
    type=Choice(["error"]),
    default=None,
    expose_value=False,
    callback=remember_remarks,
    metavar="error",
    help="-W error: a remark (a vectorize, unroll or parallel that lowering cannot honour) "
    "is an error.",
)


@cli.command(
    "print",
    epilog=examples(
        "tirc print samples/matmul.tir                 # the canonical spelling",
        "tirc print samples/gpu/matmul_fp16_tc.tir -D N=64   # with its parameter N set to 64",
        "tirc print samples/matmul.tir --plan samples/matmul.cpu.plan.json",
        "tirc print --lower samples/matmul.tir --print-after flatten-buffer --time-passes",
    ),
)
@click.argument("file")
@click.option("-o", "--output", default="-", metavar="OUT", help="Output file ('-': stdout).")
@defines_option
@click.option("--plan", default=None, metavar="PLAN.json", help="Schedule with this plan first.")
@click.option("--lower", is_flag=True, help="Print the module lowered to tir.")
@click.option(
    "--target",
    type=TARGET,
    default=None,
    help="Target whose pipeline lowers (default cpu); implies nothing without --lower.",
)
@click.option("--pipeline", default=None, metavar="P.toml", help="Lower with this pipeline.")
@click.option(
    "--print-after",
    multiple=True,
    metavar="PASS",
    shell_complete=complete_passes,
    help="Show the module after PASS.",
)
@click.option("--print-after-all", is_flag=True, help="Show the module after every pass.")
@click.option("--time-passes", is_flag=True, help="Report the time each pass took.")
@click.option("--verify-each", is_flag=True, help="Verify the module after every pass.")
@remarks_option
def print_command(
    file: str,
    output: str,
    defines: tuple[str, ...],
    plan: str | None,
    lower: bool,
    target: Target | None,
    pipeline: str | None,
    print_after: tuple[str, ...],
    print_after_all: bool,
    time_passes: bool,
    verify_each: bool,
) -> int:
    """Parse FILE ('-': stdin) and print it in the canonical spelling.

    With --plan, print it scheduled; with --lower, lowered through the target's pipeline
    (or --pipeline), showing intermediate modules on stderr as asked.
    """
    from tirc.driver import commands  # deferred: start-up (see the module docstring)

    lowering: LowerOptions | None = None
    if lower or pipeline or print_after or print_after_all or time_passes or verify_each:
        lowering = {
            "target": target or "cpu",
            "pipeline_path": pipeline,
            "print_after": print_after,
            "print_after_all": print_after_all,
            "time_passes": time_passes,
            "verify_each": verify_each,
        }
    return guarded(
        lambda: commands.print_file(
            file, output, defines, plan=plan, lowering=lowering, target=target
        )
    )


@cli.command(
    "check",
    epilog=examples(
        "tirc check samples/*.tir                      # silent when all is well",
        "tirc check -v samples/matmul.tir              # prints `samples/matmul.tir: ok`",
    ),
)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("-v", "--verbose", is_flag=True, help="Say `ok` for each file without errors.")
def check_command(files: tuple[str, ...], verbose: bool) -> int:
    """Parse and verify each FILE; print every diagnostic; exit 1 on any error."""
    from tirc.driver import commands  # deferred: start-up (see the module docstring)

    return guarded(lambda: commands.check_files(files, verbose=verbose))


@cli.command(
    "diff",
    epilog=examples(
        "tirc diff samples/matmul.tir samples/matmul.tir   # equal: exit 0, no output",
        "tirc diff samples/matmul.tir samples/batch_matmul.tir   # differ: exit 1, where and how",
    ),
)
@click.argument("left", metavar="A")
@click.argument("right", metavar="B")
def diff_command(left: str, right: str) -> int:
    """Compare A and B structurally; exit 1 and show the first difference if they differ."""
    from tirc.driver import commands  # deferred: start-up (see the module docstring)

    return guarded(lambda: commands.diff_files(left, right))


@cli.command(
    "schedule",
    epilog=examples(
        "tirc schedule samples/matmul.tir --apply samples/matmul.cpu.plan.json",
        "tirc schedule samples/matmul.tir --apply samples/matmul.cpu.plan.json "
        "--trace applied.json",
        "tirc schedule docs/examples/accumulate.tir --apply docs/examples/accumulate.plan.json "
        "--intrinsics docs/examples/dot4.intrinsics.json -o accumulate.sched.tir",
    ),
)
@click.argument("file")
@click.option(
    "--apply", "plan", required=True, metavar="PLAN.json", help="The plan (either JSON form)."
)
@click.option(
    "--trace", default=None, metavar="OUT.json", help="Write the plan as applied (readable form)."
)
@click.option("--intrinsics", default=None, metavar="JSON", help="Tensor intrinsics for tensorize.")
@click.option("-o", "--output", default="-", metavar="OUT", help="Output file ('-': stdout).")
@defines_option
def schedule_command(
    file: str,
    plan: str,
    trace: str | None,
    intrinsics: str | None,
    output: str,
    defines: tuple[str, ...],
) -> int:
    """Apply the plan PLAN.json to FILE ('-': stdin) and print the scheduled program."""
    from tirc.driver.schedule import schedule_file  # deferred: start-up (see the module docstring)

    return guarded(
        lambda: schedule_file(
            file, plan, output, trace=trace, intrinsics=intrinsics, defines=defines
        )
    )


@cli.command(
    "run",
    epilog=examples(
        "tirc run samples/matmul.tir                   # in the reference interpreter",
        "tirc run samples/matmul.tir --plan samples/matmul.cpu.plan.json --target cpu "
        "--check --bench",
        "tirc run samples/matmul.tir --target cpu --save out.npz   # every buffer after the run",
        "tirc run samples/matmul.tir --target cpu --inputs out.npz # arguments by parameter name",
        "tirc run docs/examples/scale.tir --target cpu --size n=1024 --check   # shapes over n",
        "tirc run samples/gpu/matmul_fp16_tc.tir --plan samples/gpu/matmul_fp16_tc.plan.json "
        "--target cuda -D N=4096 --check --bench",
    ),
)
@click.argument("file")
@program_options(
    target="interp",
    target_help="interp, cpu, 'cpu -mcpu=NAME', cuda or 'cuda -arch=sm_XX' (a GPU here).",
    func_help="Function to run.",
)
@click.option("--plan", default=None, metavar="PLAN.json", help="Schedule with this plan first.")
@click.option("--inputs", default=None, metavar="IN.npz", help="Arguments by parameter name.")
@click.option("--save", default=None, metavar="OUT.npz", help="Write every buffer after the run.")
@click.option(
    "--seed",
    default=0,
    show_default=True,
    help="Seed for the arguments not given, drawn small and exact: floats k/8 with k in "
    "+-[1, 8], integers in [0, 3] (in [1, 4] for a buffer the program divides by), bools 0 or 1.",
)
@click.option(
    "--size",
    "sizes",
    multiple=True,
    metavar="NAME=VALUE",
    help="A symbolic shape variable's value, for the arguments drawn at random (repeatable).",
)
@click.option("--check", is_flag=True, help="Compare the results with the interpreter's.")
@remarks_option
@click.option(
    "--bench",
    is_flag=True,
    help="Report the median time over repeats, as GB/s moved (the bytes of each buffer "
    "parameter the function reads, plus those it writes: an in-place buffer counts twice) "
    "and, for a GEMM-like program or with --flops, TFLOP/s (counted: 2 x the iterations of "
    "each block that reduces with a multiply-add, C = C + A * B; a matmul's 2MNK).",
)
@click.option(
    "--flops",
    type=click.FloatRange(min=1),
    default=None,
    metavar="N",
    help="With --bench: the float operations of one call, for TFLOP/s (e.g. 1.1e12).",
)
@click.option(
    "-O",
    "opt_level",
    type=click.IntRange(0, 3),
    default=None,
    help="LLVM optimization level (default 3; cpu, and cuda where LLVM makes the PTX).",
)
@click.option(
    "--ptx-via",
    type=Choice(["nvrtc", "llvm"]),
    default=None,
    help="cuda: how the PTX is made (default: NVRTC where cuda-python has it, else LLVM).",
)
@click.option(
    "--gpu-model",
    type=Choice(["threads", "lockstep", "auto"]),
    default=None,
    help="How the interpreter runs GPU kernels: one thread at a time, checking for data races "
    "(threads, the default), or every thread as a numpy lane, far faster (lockstep); auto "
    "picks lockstep for large launches.",
)
def run_command(
    file: str,
    target: Target,
    plan: str | None,
    func: str | None,
    inputs: str | None,
    save: str | None,
    seed: int,
    sizes: tuple[str, ...],
    check: bool,
    bench: bool,
    flops: float | None,
    opt_level: int | None,
    ptx_via: str | None,
    defines: tuple[str, ...],
    gpu_model: str | None,
) -> int:
    """Run a function of FILE on given or random inputs and summarize the result."""
    from tirc.driver.defines import parse_defines  # deferred: start-up (see the module docstring)
    from tirc.driver.inputs import parse_sizes
    from tirc.driver.run import run_file

    return guarded(
        lambda: run_file(
            file,
            target=target,
            func=func,
            inputs=inputs,
            save=save,
            seed=seed,
            defines=parse_defines(defines),
            plan=plan,
            check=check,
            bench=bench,
            opt_level=opt_level,
            ptx_via=ptx_via,
            gpu_model=gpu_model,
            sizes=parse_sizes(sizes),
            flops=None if flops is None else round(flops),
        )
    )


@cli.command(
    "compile",
    epilog=examples(
        "tirc compile samples/matmul.tir --plan samples/matmul.cpu.plan.json -o mm.o --prefix mm_",
        "tirc compile samples/matmul.tir --emit header -o mm.h --prefix mm_",
        "tirc compile samples/matmul.tir --target 'cpu -mcpu=znver4' --emit asm -o mm.s",
        "tirc compile samples/softmax.tir --plan samples/softmax.cpu.plan.json --emit so "
        "-o libsoftmax.so   # links libgomp itself",
        "tirc compile samples/softmax.tir -o softmax.o -MD   # and softmax.o.d for make",
        "tirc compile samples/softmax.tir --plan samples/softmax.cuda.plan.json --target cuda "
        "--emit cu -o softmax.cu",
        "tirc compile samples/softmax.tir --plan samples/softmax.cuda.plan.json --target cuda "
        "--emit ptx --arch sm_80 -o softmax.ptx",
    ),
)
@click.argument("file")
@click.option("--plan", default=None, metavar="PLAN.json", help="Schedule with this plan first.")
@program_options(target="cpu", target_help="cpu, 'cpu -mcpu=NAME', cuda or 'cuda -arch=sm_XX'.")
@click.option(
    "--emit",
    type=Choice(["obj", "so", "ll", "asm", "header", "cu", "ptx", "cubin"]),
    default=None,
    help="What to write (cpu: obj so ll asm header; cuda: cu ptx cubin).",
)
@click.option("-o", "--output", default=None, metavar="OUT", help="Output file ('-': stdout).")
@click.option("-MD", "md", is_flag=True, help="Write a make depfile next to the output.")
@remarks_option
@click.option("-MF", "mf", default=None, metavar="DEPFILE", help="Write the depfile here.")
@click.option(
    "-O",
    "opt_level",
    type=click.IntRange(0, 3),
    default=None,
    help="LLVM optimization level (default 3; cuda: of --ptx-via llvm).",
)
@click.option("--pipeline", default=None, metavar="P.toml", help="Lower with this pipeline.")
@click.option("--intrinsics", default=None, metavar="JSON", help="Tensor intrinsics for the plan.")
@click.option("--prefix", default="", help="Prefix for exported symbols (e.g. matmul_).")
@click.option(
    "--arch", default=None, metavar="SM", help="CUDA architecture (default sm_90; cuda only)."
)
@click.option("--ptx-via", type=Choice(["nvrtc", "llvm"]), default=None, help="How to make PTX.")
@click.option(
    "--abi",
    type=Choice(["c", "tvm-ffi"]),
    default="c",
    show_default=True,
    help="tvm-ffi: also a packed function __tvm_ffi_NAME per function, which tvm_ffi.load_module "
    "finds and calls on DLPack tensors (docs/python.md).",
)
@click.option(
    "--resources",
    is_flag=True,
    help="cuda: report each kernel's registers, spills and shared memory (ptxas -v) and "
    "its shared-memory bank conflicts on stderr; warn of spills and conflicts.",
)
def compile_command(
    file: str,
    plan: str | None,
    target: Target,
    emit: str | None,
    output: str | None,
    defines: tuple[str, ...],
    md: bool,
    mf: str | None,
    opt_level: int | None,
    pipeline: str | None,
    intrinsics: str | None,
    prefix: str,
    arch: str | None,
    ptx_via: str | None,
    abi: str,
    resources: bool,
) -> int:
    """Compile FILE: schedule (--plan), lower, and emit code for --target."""
    # deferred: start-up (see the module docstring)
    from tirc.driver.compile import compile_file, default_emit, depfile_path

    return guarded(
        lambda: compile_file(
            file,
            plan=plan,
            target=target,
            emit=emit,
            output=output,
            defines=defines,
            depfile=depfile_path(output, file, emit or default_emit(target), md, mf, target),
            opt_level=opt_level,
            pipeline=pipeline,
            intrinsics=intrinsics,
            prefix=prefix,
            arch=arch,
            ptx_via=ptx_via,
            abi=abi,
            resources=resources,
        )
    )


@cli.command(
    "tune",
    epilog=examples(
        "tirc tune samples/matmul.tir --target cpu --trials 4 --db tune.db -o mm.plan.json",
        "tirc tune samples/softmax.tir --threads 1 --trials 4 --time-budget 60 --db tune.db "
        "-o softmax.tuned.plan.json",
        "tirc tune --report --db tune.db                # the best plan of each workload",
        "tirc compile samples/matmul.tir --plan mm.plan.json -o matmul.o",
    ),
)
@click.argument("file", required=False)
@program_options(
    target="cpu",
    target_help="cpu, 'cpu -mcpu=NAME', cuda or 'cuda -arch=sm_XX' (timed on a GPU here, if any).",
    func_help="The function to tune (default: the only one, or main).",
)
@click.option(
    "--trials", type=int, default=64, show_default=True, help="Candidates to measure this run."
)
@click.option(
    "--time-budget", type=float, default=None, metavar="S", help="Stop after about S seconds."
)
@click.option(
    "--workers",
    default=None,
    metavar="SPEC",
    help="local or local:K: K candidate processes on this machine (default: one per core); "
    "ray or ray:ADDRESS: Ray tasks on a Ray cluster (pip install 'tirc[ray]').",
)
@click.option(
    "--db", default=None, metavar="DB", help="The tuning database (default: tirc-tune.db)."
)
@click.option("-o", "--output", default=None, metavar="PLAN.json", help="Write the best plan here.")
@click.option(
    "--threads",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="CPU threads each candidate runs on (0: OpenMP's default).",
)
@click.option(
    "--timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds a candidate may take to build, and again to run and be timed.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the search.")
@click.option("--report", "show_report", is_flag=True, help="List the best plans in the database.")
def tune_command(
    file: str | None,
    target: Target,
    defines: tuple[str, ...],
    func: str | None,
    trials: int,
    time_budget: float | None,
    workers: str | None,
    db: str | None,
    output: str | None,
    threads: int,
    timeout: float,
    seed: int,
    show_report: bool,
) -> int:
    """Search for a fast plan for FILE and write it (the readable form) to -o (docs/tune.md)."""
    if show_report:
        from tirc.tune.command import report  # deferred: start-up (see the module docstring)

        return guarded(lambda: report(db))
    if file is None or output is None:
        raise click.UsageError("tirc tune needs FILE and -o PLAN.json (or --report)")
    from tirc.driver.defines import parse_defines  # deferred: start-up (see the module docstring)
    from tirc.tune.command import tune_file  # deferred: start-up (see the module docstring)

    return guarded(
        lambda: tune_file(
            file,
            target=target,
            defines=parse_defines(defines),
            func=func,
            trials=trials,
            time_budget=time_budget,
            workers=workers,
            db=db,
            output=output,
            threads=threads,
            timeout=timeout,
            seed=seed,
        )
    )


@cli.command(
    "intrinsics",
    epilog=examples(
        "tirc intrinsics                               # the built-in library",
        "tirc intrinsics --intrinsics docs/examples/dot4.intrinsics.json",
    ),
)
@click.option(
    "--intrinsics", "extra", default=None, metavar="JSON", help="Also list these user intrinsics."
)
def intrinsics_command(extra: str | None) -> int:
    """List the tensor intrinsics tensorize can use (built-in, and from --intrinsics)."""
    # deferred: start-up (see the module docstring)
    from tirc.driver.intrinsics import list_intrinsics

    return guarded(lambda: list_intrinsics(extra))


@cli.command(
    "explain",
    epilog=examples(
        "tirc explain                                  # every primitive and pass, one line each",
        "tirc explain compute_at                       # a schedule primitive",
        "tirc explain ComputeAt                        # the same, by its TVM trace name",
        "tirc explain flatten-buffer                   # a lowering pass",
    ),
)
@click.argument("name", required=False, shell_complete=complete_explained)
def explain_command(name: str | None) -> int:
    """Show what a schedule primitive or a lowering pass does, its parameters or options.

    With no NAME, list every primitive and pass.
    """
    from tirc.driver.explain import explain  # deferred: start-up (see the module docstring)

    return guarded(lambda: explain(name))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status; never raises."""
    try:
        result = cli.main(
            args=list(argv) if argv is not None else None, prog_name="tirc", standalone_mode=False
        )
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except (click.Abort, KeyboardInterrupt):
        return int(ExitCode.INTERRUPTED)
    except Exception as error:
        # deferred: start-up (see the module docstring)
        from tirc.driver.guard import report_internal_error

        # Outside a command, so --traceback was not parsed; the variable still counts.
        wanted = os.environ.get("TIRC_TRACEBACK", "").lower() not in ("", "0", "false", "no")
        report_internal_error(error, show_traceback=wanted)
        return int(ExitCode.INTERNAL_ERROR)
    return int(result) if isinstance(result, int) else int(ExitCode.OK)


if __name__ == "__main__":
    raise SystemExit(main())
