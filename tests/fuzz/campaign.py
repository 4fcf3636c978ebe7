"""A fuzzing campaign: `count` inputs from a seed, mostly mutated corpus programs and partly
generated ones, each run through the harness; failures are grouped by signature and saved.
"""

from __future__ import annotations

import collections
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.corpus import seeds
from tests.fuzz.generate import random_program
from tests.fuzz.harness import TIME_LIMIT_S, Outcome, run_input
from tests.fuzz.mutate import mutate

GENERATED_SHARE = 0.25  # of the inputs, generated (generate.py) rather than mutated
LOWER_SHARE = 0.1  # of the inputs that verify, also lowered for the CPU
MUTATED_GENERATED_SHARE = 0.3  # of the generated inputs, mutated before they run
# Lowering a large program takes seconds: a campaign lowers the small ones, which cover the
# same passes (the large ones are lowered whole by the conformance tests).
LOWER_MAX_CHARS = 8000
EXAMPLES_KEPT = 5  # inputs kept per kind of failure


@dataclass
class Report:
    count: int = 0
    seconds: float = 0.0
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    stages: collections.Counter[str] = field(default_factory=collections.Counter)
    lowered: int = 0
    # signature -> (how many inputs, the first input, its outcome)
    failures: dict[str, tuple[int, str, Outcome]] = field(default_factory=dict)
    # signature -> the first few inputs (one signature may have several causes)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def record(self, text: str, outcome: Outcome, lowered: bool) -> None:
        self.count += 1
        self.statuses[outcome.status] += 1
        self.stages[f"{outcome.stage}/{outcome.status}"] += 1
        self.lowered += lowered
        if outcome.is_failure:
            key = outcome.signature()
            seen, first, first_outcome = self.failures.get(key, (0, text, outcome))
            self.failures[key] = (seen + 1, first, first_outcome)
            found = self.examples.setdefault(key, [])
            if len(found) < EXAMPLES_KEPT:
                found.append(text)

    @property
    def failure_count(self) -> int:
        return sum(seen for seen, _, _ in self.failures.values())

    def summary(self) -> str:
        rate = self.count / self.seconds if self.seconds else 0.0
        lines = [
            f"{self.count} inputs in {self.seconds:.1f} s ({rate:.1f}/s), {self.lowered} lowered",
            "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.stages.items())),
            f"failures: {self.failure_count} in {len(self.failures)} kinds "
            f"(internal errors: {self.statuses['crash'] + self.statuses['hang']}, unlocated "
            f"errors: {self.statuses['unlocated']}, broken round trips: "
            f"{self.statuses['roundtrip']})",
        ]
        for key, (seen, _, _) in sorted(self.failures.items(), key=lambda item: -item[1][0]):
            lines.append(f"  {seen:6d}  {key}")
        return "\n".join(lines)

    def save(self, directory: Path) -> None:
        """Each kind of failure's first inputs as NNN.tir, NNN-1.tir..., its first outcome as
        NNN.txt."""
        directory.mkdir(parents=True, exist_ok=True)
        for index, (key, (seen, _, outcome)) in enumerate(sorted(self.failures.items())):
            for number, text in enumerate(self.examples[key]):
                suffix = f"-{number}" if number else ""
                (directory / f"{index:03d}{suffix}.tir").write_text(text)
            (directory / f"{index:03d}.txt").write_text(f"{seen} inputs\n{outcome.describe()}\n")


def run_campaign(
    count: int,
    seed: int = 0,
    *,
    generated_share: float = GENERATED_SHARE,
    lower_share: float = LOWER_SHARE,
    time_limit_s: float | None = TIME_LIMIT_S,
    progress: Callable[[Report], None] | None = None,
) -> Report:
    report = Report()
    start = time.perf_counter()
    rng = random.Random(seed)
    texts = [text for _, text in seeds()]

    def one(text: str) -> None:
        lower = rng.random() < lower_share and len(text) <= LOWER_MAX_CHARS
        outcome = run_input(text, lower=lower, time_limit_s=time_limit_s)
        report.record(text, outcome, lower and outcome.stage == "lower")
        if progress is not None and report.count % 1000 == 0:
            report.seconds = time.perf_counter() - start
            progress(report)

    for index in range(count):
        # Generated inputs spread evenly among the mutated ones (a short run has both).
        if int((index + 1) * generated_share) > int(index * generated_share):
            text = random_program(rng)
            if rng.random() < MUTATED_GENERATED_SHARE:
                text = mutate(text, rng, texts)
        else:
            text = mutate(rng.choice(texts), rng, texts)
        one(text)
    report.seconds = time.perf_counter() - start
    return report
