"""Where among a loop's children a block can go: after its producers, before its consumers.

The children of the loop (the statements of its body) are scanned in order; the block may be
inserted at any position in (last child holding a producer, first child holding a consumer].
Blocks are looked for directly in each child, not inside other blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tirc.ir.functor import Visitor
from tirc.ir.stmt import SBlock, SBlockRealize, SeqStmt, Stmt
from tirc.schedule.errors import ScheduleError
from tirc.schedule.sref import SRef


@dataclass
class ProducerConsumerSplit:
    last_producer: int  # -1: no child holds a producer
    first_consumer: int  # len(children): no child holds a consumer
    producers_seen: int
    consumers_seen: int
    realizes: dict[int, SBlockRealize] = field(default_factory=dict)  # id(block) -> realize


def loop_children(body: Stmt) -> list[Stmt]:
    return list(body.stmts) if isinstance(body, SeqStmt) else [body]


class _RealizeFinder(Visitor):
    def __init__(self) -> None:
        self.found: list[SBlockRealize] = []

    def visit_SBlockRealize(self, node: SBlockRealize) -> None:
        self.found.append(node)  # not below: nested blocks belong to another scope


def find_split(
    children: list[Stmt], producers: list[SRef], consumers: list[SRef]
) -> ProducerConsumerSplit:
    producer_ids = {id(sref.stmt) for sref in producers}
    consumer_ids = {id(sref.stmt) for sref in consumers}
    split = ProducerConsumerSplit(-1, len(children), 0, 0)
    for position, child in enumerate(children):
        finder = _RealizeFinder()
        finder.visit(child)
        has_producer = has_consumer = False
        for realize in finder.found:
            block: SBlock = realize.block
            split.realizes[id(block)] = realize
            if id(block) in producer_ids:
                split.producers_seen += 1
                has_producer = True
            if id(block) in consumer_ids:
                split.consumers_seen += 1
                has_consumer = True
        if has_producer:
            split.last_producer = position
        if has_consumer and split.first_consumer == len(children):
            split.first_consumer = position
    if split.last_producer >= split.first_consumer:
        raise ScheduleError(
            "cannot find a place under the loop that comes after every producer and before "
            f"every consumer: the last producer is in child {split.last_producer} and the "
            f"first consumer in child {split.first_consumer}"
        )
    return split
