"""What values and operations mean, once for both executors: rounding and memory's bits
(values), division and casts (arith), math functions, bit intrinsics, and the extension
points for intrinsics and extern functions."""
