"""The tuning loop: propose a batch, measure it, record it, until the trials or the time run out.

The first candidate of a new workload is the empty plan (the program as written), so there
is always a correct plan to compare with; rows already in the database for the workload are
read back first and count as measured (a second run resumes). The best plan is the fastest
one whose outputs matched the reference; for CUDA without a GPU nothing is timed, and the
best is the first candidate that built and matched in the interpreter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field

from tirc.analysis.well_formed import verify_module
from tirc.diagnostics import Severity
from tirc.runtime.cuda_driver import Device
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import Plan, read_plan
from tirc.tune.cost_model import CostModel
from tirc.tune.database import Database, Row
from tirc.tune.measure import BUILT, OK, Gpu, Job, Result, make_reference
from tirc.tune.search import Measured, Search, candidate_features
from tirc.tune.space import Candidate
from tirc.tune.task import Task
from tirc.tune.workers import Workers, make_runner

INTERPRETED_CUDA_CANDIDATES = 3
MIN_BATCH, MAX_BATCH = 4, 16  # candidates measured between two rounds of search
SEARCH_ROUNDS = 16  # a large trial budget still gets this many rounds of the cost model
MAX_EMPTY_ROUNDS = 50  # proposals in a row the verifier rejected entirely before giving up


@dataclass
class Progress:
    """What the display shows after each batch."""

    trials: int
    total: int
    best_seconds: float | None
    flops: int | None
    nbytes: int
    failed: int
    elapsed: float
    new: int

    def throughput(self) -> str:
        if not self.best_seconds:
            return ""
        if self.flops:
            return f"{self.flops / self.best_seconds / 1e9:.2f} GFLOP/s"
        return f"{self.nbytes / self.best_seconds / 1e9:.2f} GB/s"


@dataclass
class Outcome:
    plan: str | None  # the best plan, readable JSON
    seconds: float | None
    flops: int | None
    nbytes: int
    trials: int  # measured in all, this run and earlier ones
    new: int  # measured by this run
    failures: dict[str, int] = field(default_factory=dict)
    pruned: int = 0  # candidates the verifier rejected
    first_failure: str = ""
    notes: list[str] = field(default_factory=list)


def tune(
    task: Task,
    *,
    trials: int,
    time_budget: float | None,
    workers: Workers,
    database: Database,
    scratch: str,
    timeout: float = 120.0,
    seed: int = 0,
    report: Callable[[Progress], None] | None = None,
    model: CostModel | None = None,
    open_gpu: Callable[[], Device] | None = None,
) -> Outcome:
    """Tunes `task`; for CUDA, candidates are timed on the GPU that `open_gpu` opens (default:
    this machine's first, or a Ray node's; tests pass a fake) where there is one."""
    started = time.monotonic()
    reference = make_reference(task, scratch, max(timeout * 4, 120.0))
    model = model or CostModel()
    search = Search(task.module, task.func, task.kind, model, seed)
    outcome = Outcome(None, None, reference.flops, reference.nbytes, 0, 0)
    outcome.notes.append(f"reference: {reference.source}; cost model: {model.name}")
    _resume(task, database, search, outcome)
    with closing(make_runner(workers, task, reference, timeout)) as runner:
        outcome.notes.append(f"workers: {runner.description}")
        if task.kind == "cuda":
            outcome.notes.append(_gpu_note(runner.find_gpu(open_gpu or Device)))
        # a round of search costs about the same whatever its batch (it generates, lowers and
        # scores ~100 candidates): large budgets measure more per round, small ones keep 4
        per_round = min(MAX_BATCH, max(MIN_BATCH, trials // SEARCH_ROUNDS))
        batch_size = max(runner.parallelism * 2, per_round)
        first = not search.seen and task.kind == "cpu"  # the program as written: a baseline
        interpreted = 0
        while outcome.new < trials:
            if time_budget is not None and time.monotonic() - started > time_budget:
                outcome.notes.append(f"stopped at the time budget ({time_budget:g} s)")
                break
            wanted = min(batch_size, trials - outcome.new)
            candidates = search.propose(wanted - 1 if first else wanted)
            if first:
                candidates.insert(0, _empty(task))
                first = False
            candidates = [c for c in candidates if _is_valid(c, search, outcome)]
            if not candidates:
                if outcome.pruned and search.proposals < MAX_EMPTY_ROUNDS:
                    continue
                outcome.notes.append("the design space has no candidate left to measure")
                break
            best = database.best(task.key)
            jobs = []
            for candidate in candidates:
                # without a GPU, the first few CUDA candidates of a small program run in the
                # interpreter (quick there)
                interpret = (
                    task.kind == "cuda"
                    and runner.gpu is None
                    and reference.source == "interpreter"
                    and interpreted < INTERPRETED_CUDA_CANDIDATES
                )
                interpreted += interpret
                seconds = best.seconds if best else None
                jobs.append(Job(candidate.plan.to_json(), interpret, seconds))
            results = runner.run(jobs)
            for candidate, result in zip(candidates, results, strict=True):
                _record(task, database, search, candidate, result, outcome)
            model.fit()
            if report is not None:
                report(_progress(task, database, outcome, trials, started))
    _finish(task, database, outcome)
    return outcome


def _gpu_note(found: Gpu | str) -> str:
    if isinstance(found, Gpu):
        return f"timed on the GPU ({found.arch}) by CUDA events, one candidate at a time"
    return f"no GPU was measured ({found}): candidates were built and checked only"


def _is_valid(candidate: Candidate, search: Search, outcome: Outcome) -> bool:
    """The verifier's verdict on the scheduled program: a candidate it rejects is pruned (and
    never proposed again) before anything is built."""
    assert candidate.module is not None
    if any(d.severity is Severity.ERROR for d in verify_module(candidate.module)):
        search.seen.add(candidate.key)
        outcome.pruned += 1
        return False
    return True


def _empty(task: Task) -> Candidate:
    module = task.module
    return Candidate(Plan([], task.func), [], module=module)


def _record(
    task: Task,
    database: Database,
    search: Search,
    candidate: Candidate,
    result: Result,
    outcome: Outcome,
) -> None:
    plan = candidate.plan.to_json()
    timed = result.seconds if result.status == OK else None
    database.add(
        Row(
            task.key,
            task.target.spelling,
            plan,
            candidate.decisions,
            result.status,
            timed,
            outcome.flops,
            result.message,
        )
    )
    search.record(
        candidate.key,
        candidate_features(candidate, task.func),
        Measured(candidate.decisions, timed),
    )
    outcome.new += 1
    outcome.trials += 1
    if result.status not in (OK, BUILT):
        outcome.failures[result.status] = outcome.failures.get(result.status, 0) + 1
        if not outcome.first_failure:
            outcome.first_failure = f"{result.status}: {result.message}"


def _resume(task: Task, database: Database, search: Search, outcome: Outcome) -> None:
    rows = database.rows(task.key)
    for row in rows:
        try:
            module, _ = apply_plan(task.module, read_plan(row.plan, "<database>"))
        except Exception:  # a plan an older tirc wrote: it still counts as seen
            search.seen.add(row.plan)
            continue
        candidate = Candidate(read_plan(row.plan), row.decisions, module=module)
        search.record(
            row.plan, candidate_features(candidate, task.func), Measured(row.decisions, row.seconds)
        )
        outcome.trials += 1
    if rows:
        outcome.notes.append(f"resumed: {len(rows)} candidates measured before")
        search.model.fit()


def _progress(
    task: Task, database: Database, outcome: Outcome, trials: int, started: float
) -> Progress:
    best = database.best(task.key)
    failed = sum(outcome.failures.values())
    return Progress(
        outcome.new,
        trials,
        best.seconds if best else None,
        outcome.flops,
        outcome.nbytes,
        failed,
        time.monotonic() - started,
        outcome.new,
    )


def _finish(task: Task, database: Database, outcome: Outcome) -> None:
    best = database.best(task.key)
    if best is not None:
        outcome.plan, outcome.seconds = best.plan, best.seconds
        return
    if task.kind == "cuda":
        rows = [r for r in database.rows(task.key) if r.status == BUILT]
        matched = [r for r in rows if r.message == "matches in the interpreter"]
        if matched or rows:
            outcome.plan = (matched or rows)[0].plan
