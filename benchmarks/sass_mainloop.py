"""The main k loop of a CUDA GEMM kernel, instruction by instruction, from its SASS: what a
GPU-less session can measure of a tensor-core kernel's speed. Not a test and not run in CI.

    python benchmarks/sass_mainloop.py async2 async3 128x256_async3_raster8   # gemm_mma plans
    python benchmarks/sass_mainloop.py async3 async3_prefetch    # and benchmarks/plans' candidates
    python benchmarks/sass_mainloop.py samples/gpu/gemm_mma_async2.plan.json --size 8192
    python benchmarks/sass_mainloop.py --cu kernel.cu      # CUDA C written or edited by hand
    python benchmarks/sass_mainloop.py async2 --show       # and print the loop's SASS
    python benchmarks/sass_mainloop.py async2 --ptx-via llvm     # tirc's NVPTX path's PTX

Each plan (a path, or NAME for samples/gpu/gemm_mma_NAME.plan.json, else for
benchmarks/plans/gemm_mma_NAME.plan.json) is compiled as `tirc compile --target 'cuda
-arch=ARCH' --emit cu` does, at M = N = K = --size, the CUDA C turned into PTX by NVRTC (as
`tirc run` does) and into a cubin by `ptxas -v`, whose registers and spills are reported;
nvdisasm then gives the SASS. The main loop is the innermost loop (a backward branch) that
holds the HMMAs and the global-to-shared copies (LDGSTS, or LDG and STS), else the innermost
one that holds the HMMAs. Its instructions are counted by class (the opcode; IMAD's idioms
IMAD.MOV, .SHL, .IADD, .WIDE apart), once an iteration: a loop nested in it counts as often as
it runs where its trip count can be read off the SASS (ptxas runs a two-trip loop on a uniform
predicate it flips), else once, and the report says so.

nvdisasm is not part of the CUDA toolkit's compiler: it is found by --nvdisasm, $NVDISASM,
PATH, beside ptxas, or in the pip wheel `nvidia-cuda-nvdisasm` (`pip install
nvidia-cuda-nvdisasm==13.*`); the tool says so and stops where it is missing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tirc.driver import cuda_toolchain  # noqa: E402  (after the path above)
from tirc.driver.kernel_resources import KernelResources, parse_ptxas_log  # noqa: E402

GPU_SAMPLES = ROOT / "samples" / "gpu"
NVDISASM_HINT = (
    "nvdisasm is not found: pass --nvdisasm PATH or set NVDISASM, put it on PATH, or "
    "`pip install nvidia-cuda-nvdisasm==13.*` (it is not in the CUDA compiler wheels)"
)
# the classes reported first, in this order; the rest follow by count
MAIN_CLASSES = ("HMMA", "LDSM", "LDGSTS", "LDG", "STS", "LDS")
_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
_LABEL = re.compile(r"^\s*(\.L\w+):")
_TARGET = re.compile(r"`\((\.L\w+)\)")


class ToolMissing(Exception):
    """A tool the report needs (nvdisasm, ptxas, NVRTC) is not there; the message says how."""


@dataclass(frozen=True)
class Instruction:
    address: int
    predicate: str  # "@P0", "@!UP1" or ""
    opcode: str  # with its modifiers: "LDSM.16.MT88.4"
    operands: str

    @property
    def kind(self) -> str:
        """The class counted: the opcode, IMAD with its idiom (IMAD.MOV, IMAD.WIDE, ...), and
        `@!PT` after an instruction that never runs (ptxas's padding before LDGSTS)."""
        parts = self.opcode.split(".")
        kind = parts[0]
        if kind == "IMAD" and len(parts) > 1 and parts[1] in ("MOV", "SHL", "IADD", "WIDE"):
            kind = f"IMAD.{parts[1]}"
        return f"{kind}@!PT" if self.predicate == "@!PT" else kind


@dataclass
class Loop:
    """The instructions from a branch's target to the backward branch itself."""

    start: int  # index into the function's instructions
    end: int  # the branch, inclusive
    trips: int | None = None  # read off the SASS, where it can be
    inner: list[Loop] = field(default_factory=list)

    def contains(self, other: Loop) -> bool:
        return self.start <= other.start and other.end <= self.end and self is not other


@dataclass
class Report:
    name: str
    resources: list[KernelResources]
    kernel: str = ""
    counts: Counter[str] = field(default_factory=Counter)  # an iteration of the main loop
    static: int = 0  # instructions in the loop's text
    unknown_trips: int = 0  # nested loops counted once, their trip count unknown
    loop_text: list[str] = field(default_factory=list)
    order: str = ""  # the loop text's HMMA, LDSM, copies and waits in order (ORDER_LETTERS)
    exposed_ldsm: int = 0  # LDSM at the loop's head or after a barrier, before any HMMA
    problem: str = ""

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def per_hmma(self, kind: str | None = None) -> float:
        hmma = self.counts["HMMA"]
        if not hmma:
            return 0.0
        count = self.total - hmma if kind is None else self.counts[kind]
        return count / hmma

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kernel": self.kernel,
            "resources": [vars(r) for r in self.resources],
            "counts": dict(self.counts.most_common()),
            "static_instructions": self.static,
            "unknown_trip_counts": self.unknown_trips,
            "non_hmma_per_hmma": round(self.per_hmma(), 3),
            "problem": self.problem,
        }


def parse_sass(text: str) -> dict[str, list[Instruction | str]]:
    """nvdisasm's text: each function's instructions, with its labels as strings in place."""
    functions: dict[str, list[Instruction | str]] = {}
    current: list[Instruction | str] | None = None
    for line in text.splitlines():
        header = re.match(r"^(\w+):\s*$", line)
        if header and not line.startswith("."):
            current = functions.setdefault(header.group(1), [])
            continue
        if current is None:
            continue
        if label := _LABEL.match(line):
            current.append(label.group(1))
        elif match := _INSTRUCTION.search(line):
            address, predicate, opcode, operands = match.groups()
            current.append(
                Instruction(int(address, 16), (predicate or "").strip(), opcode, operands.strip())
            )
    return functions


def find_loops(body: list[Instruction | str]) -> tuple[list[Instruction], list[Loop]]:
    """The instructions of a function and its loops (backward branches), nested."""
    instructions: list[Instruction] = []
    labels: dict[str, int] = {}
    for item in body:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    loops: list[Loop] = []
    for index, instruction in enumerate(instructions):
        if instruction.kind != "BRA":
            continue
        target = _TARGET.search(instruction.operands)
        if target and target.group(1) in labels and labels[target.group(1)] <= index:
            loops.append(Loop(labels[target.group(1)], index))
    for loop in loops:
        loop.trips = _trip_count(instructions, loop)
        parents = [other for other in loops if other.contains(loop)]
        if parents:
            min(parents, key=lambda p: p.end - p.start).inner.append(loop)
    return instructions, loops


def _trip_count(instructions: list[Instruction], loop: Loop) -> int | None:
    """Two, where ptxas runs a two-trip loop on a uniform predicate: set true before the loop,
    copied into the branch's predicate and set false inside it. Else unknown."""
    branch = instructions[loop.end]
    predicate = branch.predicate.lstrip("@")
    if not predicate or predicate.startswith("!"):
        return None
    body = instructions[loop.start : loop.end]
    copied = next(
        (
            i.operands.split(",")[4].strip()
            for i in body
            if i.opcode == "PLOP3.LUT"
            and i.operands.startswith(predicate + ",")
            and i.operands.endswith("0x80, 0x0")
        ),
        None,
    )
    if copied is None or not copied.startswith("UP"):
        return None
    cleared = any(
        i.opcode == "UPLOP3.LUT" and i.operands.startswith(copied + ",") and "0x40" in i.operands
        for i in body
    )
    before = instructions[max(0, loop.start - 8) : loop.start]
    set_true = any(
        i.opcode == "UPLOP3.LUT" and i.operands.startswith(copied + ",") and "0x80" in i.operands
        for i in before
    )
    return 2 if cleared and set_true else None


def main_loop(instructions: list[Instruction], loops: list[Loop]) -> Loop | None:
    """The innermost loop holding HMMAs and global-to-shared copies, else HMMAs."""

    def kinds(loop: Loop) -> set[str]:
        return {i.kind for i in instructions[loop.start : loop.end + 1]}

    def size(loop: Loop) -> int:
        return loop.end - loop.start

    with_hmma = [loop for loop in loops if "HMMA" in kinds(loop)]
    copying = [
        loop for loop in with_hmma if "LDGSTS" in kinds(loop) or {"LDG", "STS"} <= kinds(loop)
    ]
    candidates = copying or with_hmma
    return min(candidates, key=size) if candidates else None


def count_loop(instructions: list[Instruction], loop: Loop) -> tuple[Counter[str], int]:
    """One iteration's instructions by class, nested loops by their trip count (once where
    unknown), and how many nested loops had no known trip count."""
    counts: Counter[str] = Counter()
    unknown = 0
    covered: set[int] = set()
    for inner in loop.inner:
        inner_counts, inner_unknown = count_loop(instructions, inner)
        trips = inner.trips or 1
        unknown += inner_unknown + (inner.trips is None)
        for kind, count in inner_counts.items():
            counts[kind] += count * trips
        covered.update(range(inner.start, inner.end + 1))
    for index in range(loop.start, loop.end + 1):
        if index not in covered:
            counts[instructions[index].kind] += 1
    return counts, unknown


# the letters of Report.order: ldmatrix, mma, cp.async and its commit and wait, barrier
ORDER_LETTERS = {"LDSM": "L", "HMMA": "H", "LDGSTS": "G", "LDGDEPBAR": "C", "DEPBAR": "W"}
ORDER_LETTERS["BAR"] = "|"


def placement(kinds: list[str]) -> tuple[str, int]:
    """The loop text's main instructions in order, runs counted (`H3 L H3 W |`), and how
    many ldmatrix come at the loop's head or after a barrier before any HMMA: loads the next
    HMMAs wait for, where a prefetching loop has loaded them an HMMA run earlier."""
    letters: list[str] = []
    counts: list[int] = []
    exposed, ahead = 0, True
    for kind in kinds:
        letter = ORDER_LETTERS.get(kind)
        if letter is None:
            continue
        if kind == "BAR":
            ahead = True
        elif kind == "HMMA":
            ahead = False
        elif kind == "LDSM" and ahead:
            exposed += 1
        if letters and letters[-1] == letter:
            counts[-1] += 1
        else:
            letters.append(letter)
            counts.append(1)
    runs = zip(letters, counts, strict=True)
    return " ".join(letter + (str(count) if count > 1 else "") for letter, count in runs), exposed


def analyze_sass(name: str, sass: str, resources: list[KernelResources]) -> Report:
    """The report for the kernel of `sass` that has a main loop (the first such)."""
    report = Report(name, resources)
    for kernel, body in parse_sass(sass).items():
        instructions, loops = find_loops(body)
        loop = main_loop(instructions, loops)
        if loop is None:
            continue
        report.kernel = kernel
        report.counts, report.unknown_trips = count_loop(instructions, loop)
        report.static = loop.end - loop.start + 1
        report.loop_text = [
            f"{i.address:06x}  {i.predicate:6} {i.opcode} {i.operands}".rstrip()
            for i in instructions[loop.start : loop.end + 1]
        ]
        kinds = [i.kind for i in instructions[loop.start : loop.end + 1]]
        report.order, report.exposed_ldsm = placement(kinds)
        return report
    report.problem = "no loop with HMMA instructions in the SASS"
    return report


def find_nvdisasm(explicit: str | None) -> str:
    candidates = [explicit, os.environ.get("NVDISASM"), shutil.which("nvdisasm")]
    for tool in ("ptxas", "nvcc"):
        found = shutil.which(tool)
        if found:
            candidates.append(str(Path(os.path.realpath(found)).parent / "nvdisasm"))
    # the pip wheel (the dev extra's nvidia-cuda-nvdisasm): a file in the `nvidia` namespace
    wheels = importlib.util.find_spec("nvidia")
    roots = (wheels.submodule_search_locations or []) if wheels is not None else []
    for root in roots:
        candidates += [str(p) for p in sorted(Path(root).glob("*/bin/nvdisasm"))]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    if explicit:
        raise ToolMissing(f"--nvdisasm {explicit}: no such executable. {NVDISASM_HINT}")
    raise ToolMissing(NVDISASM_HINT)


def cuda_source(
    program: Path, plan: Path | None, arch: str, defines: list[str], emit: str = "cu"
) -> str:
    """The CUDA C `tirc compile --emit cu` writes (with `emit="ptx"`, the PTX of tirc's
    NVPTX path, `--emit ptx --ptx-via llvm`)."""
    command = [sys.executable, "-m", "tirc", "compile", str(program), "--emit", emit, "-o", "-"]
    command += ["--target", f"cuda -arch={arch}"]
    if emit == "ptx":
        command += ["--ptx-via", "llvm"]
    if plan is not None:
        command += ["--plan", str(plan)]
    for define in defines:
        command += ["-D", define]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"tirc compile failed:\n{done.stderr}")
    return done.stdout


def ptx_of(source: str, arch: str) -> tuple[str, str]:
    """The PTX of `source` and what made it: NVRTC as `tirc run` uses it, else nvcc (the same
    NVVM front end, with NVRTC's options)."""
    if cuda_toolchain.has_nvrtc():
        return cuda_toolchain.ptx_from_cuda(source, arch), "NVRTC"
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise ToolMissing(f"NVRTC or nvcc is needed for the PTX: {cuda_toolchain.NVRTC_INSTALL}")
    with tempfile.TemporaryDirectory(prefix="tirc-sass-") as directory:
        path = Path(directory) / "kernel.cu"
        path.write_text(source)
        command = [nvcc, "-ptx", f"-arch={arch.replace('sm_', 'compute_')}", "-std=c++17"]
        command += ["-o", str(path.with_suffix(".ptx")), str(path)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"nvcc failed:\n{done.stderr}")
        return path.with_suffix(".ptx").read_text(), "nvcc"


def cubin_of(ptx: str, arch: str) -> tuple[bytes, list[KernelResources]]:
    """`ptxas -v`'s cubin of `ptx` and each kernel's account."""
    cubin, log = cuda_toolchain.assemble_ptx(ptx, arch, verbose=True, purpose="sass_mainloop")
    return cubin, parse_ptxas_log(log)


def disassemble(cubin: bytes, nvdisasm: str) -> str:
    with tempfile.TemporaryDirectory(prefix="tirc-sass-") as directory:
        path = Path(directory) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([nvdisasm, "-c", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nvdisasm failed:\n{done.stderr}")
    return done.stdout


def resolve_plan(name: str) -> Path:
    path = Path(name)
    if path.suffix == ".json":
        return path
    sample = GPU_SAMPLES / f"gemm_mma_{name}.plan.json"
    candidate = ROOT / "benchmarks" / "plans" / f"gemm_mma_{name}.plan.json"
    return candidate if not sample.exists() and candidate.exists() else sample


def format_report(report: Report) -> str:
    lines = [f"{report.name}: kernel {report.kernel or '?'}"]
    for kernel in report.resources:
        lines.append(f"  ptxas: {kernel.summary()}")
    if report.problem:
        lines.append(f"  {report.problem}")
        return "\n".join(lines)
    hmma = report.counts["HMMA"]
    lines.append(
        f"  main loop: {report.total} instructions an iteration ({report.static} in its text), "
        f"{hmma} HMMA; {report.total - hmma} others = {report.per_hmma():.2f} per HMMA"
    )
    if report.unknown_trips:
        lines.append(
            f"  ({report.unknown_trips} nested loop(s) of unknown trip count counted once)"
        )
    lines.append(
        f"  order (L ldmatrix, H mma, G cp.async, C commit, W wait, | barrier): {report.order}"
    )
    lines.append(
        f"  ldmatrix before any HMMA at the loop's head or after a barrier: {report.exposed_ldsm}"
    )
    ordered = [k for k in MAIN_CLASSES if report.counts[k]]
    ordered += [k for k, _ in report.counts.most_common() if k not in MAIN_CLASSES]
    for kind in ordered:
        count = report.counts[kind]
        lines.append(f"    {kind:10} {count:5}  {count / hmma if hmma else 0:6.3f} per HMMA")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("plans", nargs="*", help="plan files, or NAME for gemm_mma_NAME")
    parser.add_argument("--program", type=Path, default=GPU_SAMPLES / "gemm_mma.tir")
    parser.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=V")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--cu", type=Path, action="append", default=[], help="CUDA C to read")
    parser.add_argument("--nvdisasm", help="the nvdisasm executable")
    parser.add_argument("--show", action="store_true", help="print the main loop's SASS")
    parser.add_argument(
        "--ptx-via", choices=("cuda", "llvm"), default="cuda", help="llvm: tirc's NVPTX path"
    )
    parser.add_argument("--json", type=Path, help="write the reports here")
    args = parser.parse_args()
    if not args.plans and not args.cu:
        parser.error("name a plan or a --cu file")
    try:
        nvdisasm = find_nvdisasm(args.nvdisasm)
    except ToolMissing as missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    defines = [f"{d}={args.size}" for d in "MNK"] + args.defines
    sources: list[tuple[str, str]] = [(str(path), path.read_text()) for path in args.cu]
    emit = "ptx" if args.ptx_via == "llvm" else "cu"
    for name in args.plans:
        plan = resolve_plan(name)
        sources.append((plan.name, cuda_source(args.program, plan, args.arch, defines, emit)))
    reports = []
    for name, source in sources:
        try:
            ptx, front = (source, "LLVM") if emit == "ptx" else ptx_of(source, args.arch)
        except ToolMissing as missing:
            print(f"error: {missing}", file=sys.stderr)
            return 2
        cubin, resources = cubin_of(ptx, args.arch)
        report = analyze_sass(f"{name} ({front})", disassemble(cubin, nvdisasm), resources)
        reports.append(report)
        print(format_report(report))
        if args.show:
            print("\n".join("    " + line for line in report.loop_text))
    if args.json:
        args.json.write_text(json.dumps([r.as_json() for r in reports], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
