"""Generated s-tir programs for the random-plan differential: elementwise chains, reductions,
matmuls and padded convolutions, with constant shapes or one symbolic dimension.

Each generator takes a seeded `random.Random` and returns TVMScript text that both tirc and
TVM 0.27 parse; the same seed gives the same text.
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable

EXTENTS = (1, 7, 16, 24, 32, 64)


Param = tuple[str, tuple[str, ...], str]  # name, shape, dtype


def _function(params: list[Param], symbolic: bool, body: str) -> str:
    """A prim_func over buffer parameters (name, shape, dtype); `n` is bound through
    match_buffer where a shape names it."""
    head = []
    if symbolic:
        head.append("n = T.int32()")
        for name, shape, dtype in params:
            head.append(
                f'{name} = T.match_buffer({name.lower()}, ({", ".join(shape)},), "{dtype}")'
            )
        signature = ", ".join(f"{name.lower()}: T.handle" for name, _, _ in params)
    else:
        signature = ", ".join(
            f'{name}: T.Buffer(({", ".join(shape)},), "{dtype}")' for name, shape, dtype in params
        )
    lines = ["@T.prim_func(s_tir=True)", f"def main({signature}):"]
    lines += ["    " + line for line in head]
    lines += textwrap.indent(textwrap.dedent(body).strip("\n"), "    ").splitlines()
    return "\n".join(lines) + "\n"


def _dim(rng: random.Random, symbolic: bool, first: bool) -> str:
    return "n" if symbolic and first else str(rng.choice(EXTENTS[1:]))


def elementwise(rng: random.Random, symbolic: bool) -> str:
    """Two or three stages, each reading the last: B = A * 2, C = B + 1, D = exp(C)."""
    rank = rng.choice([1, 2, 2, 3])
    shape = tuple(_dim(rng, symbolic, axis == 0) for axis in range(rank))
    iters = ["i", "j", "k"][:rank]
    vs = ", ".join(f"v{i}" for i in iters)
    grid = f"T.grid({', '.join(shape)})" if rank > 1 else f"T.serial({shape[0]})"
    loops = ", ".join(iters)
    stages = rng.randint(2, 3)
    ops = ["{} * T.float32(2.0)", "{} + T.float32(1.0)", "T.exp({})", "T.max({}, T.float32(0.0))"]
    names = ["A", "B", "C", "D"][: stages + 1]
    body = [f"{name} = T.sblock_alloc_buffer(({', '.join(shape)},))" for name in names[1:-1]]
    for src, dst in zip(names[:-1], names[1:], strict=True):
        body += [
            f"for {loops} in {grid}:",
            f'    with T.sblock("{dst}"):',
            f'        {vs} = T.axis.remap("{"S" * rank}", [{loops}])',
            f"        {dst}[{vs}] = {rng.choice(ops).format(f'{src}[{vs}]')}",
        ]
    params = [(names[0], shape, "float32"), (names[-1], shape, "float32")]
    return _function(params, symbolic, "\n".join(body))


def reduction(rng: random.Random, symbolic: bool) -> str:
    """B[i] = sum or max over k of A[i, k], then an optional epilogue C[i] = sqrt(B[i])."""
    rows, cols = _dim(rng, symbolic, True), str(rng.choice(EXTENTS[1:]))
    maximum = rng.random() < 0.3
    init = "T.float32(-3.4028234663852886e38)" if maximum else "T.float32(0.0)"
    update = "T.max(B[vi], A[vi, vk])" if maximum else "B[vi] + A[vi, vk]"
    epilogue = rng.random() < 0.5
    body = ["B = T.sblock_alloc_buffer((" + rows + ",))"] if epilogue else []
    body += [
        f"for i, k in T.grid({rows}, {cols}):",
        '    with T.sblock("B"):',
        '        vi, vk = T.axis.remap("SR", [i, k])',
        "        with T.init():",
        f"            B[vi] = {init}",
        f"        B[vi] = {update}",
    ]
    params: list[Param] = [("A", (rows, cols), "float32")]
    if epilogue:
        body += [
            f"for i in range({rows}):",
            '    with T.sblock("C"):',
            "        vi = T.axis.spatial(" + rows + ", i)",
            "        C[vi] = T.sqrt(B[vi])",
        ]
        params.append(("C", (rows,), "float32"))
    else:
        params.append(("B", (rows,), "float32"))
    return _function(params, symbolic, "\n".join(body))


def matmul(rng: random.Random, symbolic: bool) -> str:
    """C = A @ B, optionally through a relu epilogue D = max(C, 0)."""
    m = _dim(rng, symbolic, True)
    n, k = (str(rng.choice(EXTENTS[2:])) for _ in range(2))
    dtype, acc = rng.choice([("float32", "float32"), ("float16", "float32"), ("int8", "int32")])

    def cast(value: str) -> str:
        return f'T.Cast("{acc}", {value})' if dtype != acc else value

    epilogue = rng.random() < 0.4
    out = "C" if not epilogue else "D"
    body = [f'C = T.sblock_alloc_buffer(({m}, {n}), "{acc}")'] if epilogue else []
    body += [
        f"for i, j, k in T.grid({m}, {n}, {k}):",
        '    with T.sblock("C"):',
        '        vi, vj, vk = T.axis.remap("SSR", [i, j, k])',
        "        with T.init():",
        f"            C[vi, vj] = T.{acc}(0)",
        f"        C[vi, vj] = C[vi, vj] + {cast('A[vi, vk]')} * {cast('B[vk, vj]')}",
    ]
    if epilogue:
        body += [
            f"for i, j in T.grid({m}, {n}):",
            '    with T.sblock("D"):',
            '        vi, vj = T.axis.remap("SS", [i, j])',
            f"        D[vi, vj] = T.max(C[vi, vj], T.{acc}(0))",
        ]
    params: list[Param] = [("A", (m, k), dtype), ("B", (k, n), dtype), (out, (m, n), acc)]
    return _function(params, symbolic, "\n".join(body))


def conv(rng: random.Random, symbolic: bool) -> str:
    """A 3x3 stride-1 convolution (NCHW) over a zero-padded copy of its input."""
    batch = "n" if symbolic else str(rng.choice([1, 2]))
    channels, filters = rng.choice([4, 8, 16]), rng.choice([4, 8, 16])
    size = rng.choice([7, 8, 14])
    pad = size + 2
    body = [
        f"P = T.sblock_alloc_buffer(({batch}, {channels}, {pad}, {pad}))",
        f"for b, c, h, w in T.grid({batch}, {channels}, {pad}, {pad}):",
        '    with T.sblock("P"):',
        '        vb, vc, vh, vw = T.axis.remap("SSSS", [b, c, h, w])',
        f"        P[vb, vc, vh, vw] = T.if_then_else(1 <= vh and vh < {size + 1} and 1 <= vw"
        f" and vw < {size + 1}, X[vb, vc, vh - 1, vw - 1], T.float32(0.0))",
        f"for b, f, h, w, c, r, s in T.grid({batch}, {filters}, {size}, {size}, {channels}, 3, 3):",
        '    with T.sblock("Y"):',
        '        vb, vf, vh, vw, vc, vr, vs = T.axis.remap("SSSSRRR", [b, f, h, w, c, r, s])',
        "        with T.init():",
        "            Y[vb, vf, vh, vw] = T.float32(0.0)",
        "        Y[vb, vf, vh, vw] = Y[vb, vf, vh, vw] + P[vb, vc, vh + vr, vw + vs]"
        " * W[vf, vc, vr, vs]",
    ]
    params: list[Param] = [
        ("X", (batch, str(channels), str(size), str(size)), "float32"),
        ("W", (str(filters), str(channels), "3", "3"), "float32"),
        ("Y", (batch, str(filters), str(size), str(size)), "float32"),
    ]
    return _function(params, symbolic, "\n".join(body))


GENERATORS: dict[str, Callable[[random.Random, bool], str]] = {
    "elementwise": elementwise,
    "reduction": reduction,
    "matmul": matmul,
    "conv": conv,
}
