"""`tirc compile`'s flags in front of `tirc.driver.compile.compile_file`, run as a script, so
that the C client's Makefile can be tested before (and independently of) the CLI wiring."""

from __future__ import annotations

import argparse
import sys

from tirc.driver.compile import compile_file, depfile_path
from tirc.driver.guard import run_guarded


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tirc")
    parser.add_argument("command", choices=["compile"])
    parser.add_argument("file")
    parser.add_argument("--plan")
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--emit", default="obj")
    parser.add_argument("--prefix", default="")
    parser.add_argument("-o", "--output")
    parser.add_argument("-D", dest="defines", action="append", default=[])
    parser.add_argument("-MD", dest="md", action="store_true")
    parser.add_argument("-MF", dest="mf")
    parser.add_argument("-O", dest="opt_level", type=int, default=3)
    args = parser.parse_args(argv)
    depfile = depfile_path(args.output, args.file, args.emit, args.md, args.mf)
    return run_guarded(
        lambda: compile_file(
            args.file,
            plan=args.plan,
            target=args.target,
            emit=args.emit,
            output=args.output,
            defines=args.defines,
            depfile=depfile,
            opt_level=args.opt_level,
            prefix=args.prefix,
        ),
        show_traceback=True,
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
