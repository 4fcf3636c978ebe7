"""Tensor intrinsics for tensorize: the built-in library and user intrinsics, by name."""

from tirc.schedule.intrinsics.registry import TensorIntrin, builtin_intrinsics, lookup

__all__ = ["TensorIntrin", "builtin_intrinsics", "lookup"]
