"""`python -m tests.fuzz --count N [--seed S]`: a fuzzing campaign, with a summary of what
it found; `--save DIR` keeps one input per kind of failure; `--minimize FILE` shrinks a
failing input to a small one that fails the same way (to make a regression file of)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.fuzz.campaign import GENERATED_SHARE, LOWER_SHARE, Report, run_campaign
from tests.fuzz.harness import TIME_LIMIT_S


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--count", type=int, default=1000, help="how many inputs (1000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument(
        "--generated",
        type=float,
        default=GENERATED_SHARE,
        help=f"share of generated inputs ({GENERATED_SHARE})",
    )
    parser.add_argument(
        "--lower",
        type=float,
        default=LOWER_SHARE,
        help=f"share of verified inputs also lowered ({LOWER_SHARE})",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=TIME_LIMIT_S,
        help=f"seconds an input may run before it counts as a hang ({TIME_LIMIT_S:.0f})",
    )
    parser.add_argument("--save", type=Path, help="write each kind of failure's input here")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--minimize", type=Path, metavar="FILE", help="shrink a failing input")
    options = parser.parse_args(argv)
    if options.minimize is not None:
        from tests.fuzz.minimize import minimize, same_failure

        text = options.minimize.read_text()
        print(minimize(text, same_failure(text)))
        return 0

    def progress(report: Report) -> None:
        print(
            f"{report.count} inputs, {report.seconds:.0f} s, {report.failure_count} failures",
            file=sys.stderr,
            flush=True,
        )

    report = run_campaign(
        options.count,
        options.seed,
        generated_share=options.generated,
        lower_share=options.lower,
        time_limit_s=options.time_limit,
        progress=None if options.quiet else progress,
    )
    print(report.summary())
    if options.save is not None and report.failures:
        report.save(options.save)
        print(f"inputs of each kind of failure in {options.save}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
