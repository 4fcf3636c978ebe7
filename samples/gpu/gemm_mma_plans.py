"""Writes samples/gpu/gemm_mma*.plan.json: the plans for samples/gpu/gemm_mma.tir, each a step
or a variant of a fast mma.sync GEMM (docs/gpu.md walks through them, with what each step
measured). The plans are plain JSON data; this script only spares writing ten of them by hand.

    python samples/gpu/gemm_mma_plans.py        # rewrites the plan files beside it

Every plan tiles C by (bm x bn) blocks of (wm x wn) warps, each warp a (bm/wm x bn/wn) tile of
16 x 16 mma fragments in registers, and K by bk:

- A and B tiles are copied to shared memory by 16-byte vectors (8 halves a thread), their rows
  padded (storage_align) or their 16-byte chunks XOR-swizzled (permuted_layout), so that ldmatrix
  (and the copies) hit 32 different banks;
- each warp loads its fragments with ldmatrix (trans for B), multiplies with mma.sync m16n8k16
  (float32 accumulators) and stores C from registers (mma_store);
- `stages`: the k loop is software-pipelined, the copies `stages - 1` iterations ahead, with
  cp.async (async_); `kpipe` double-buffers the fragments across the k steps of a tile;
- `prefetch` (with stages): the fragment pipeline's parts go into the k tile's pipeline, so
  that the next tile's first fragments load before the last k step's products (CUTLASS's
  multistage mainloop: register double buffering across the k tile boundary);
- `raster`: blocks go in groups of `raster` block rows down one block column, for L2 reuse;
- `ws`: the pipelined k loop is warp-specialized (inject-warp-specialization, sm_90): `ws`
  more threads a block copy the tiles (synchronously) into a ring of `stages` versions that
  mbarriers hand to the warps, which only compute. Such a plan schedules the same GEMM written
  for Hopper, gemm_wgmma_tensorize.tir (its comment names the sm_90a target).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# lanes (i, j) of a 16 x 16 tile -> (tile row, tile column, lane, register): the mma layout
MMA_LAYOUT = (
    "lambda i, j: (i // 16, j // 16, 4 * (i % 8) + j % 8 // 2, "
    "4 * (j % 16 // 8) + i % 16 // 8 * 2 + j % 2)"
)


def plan(
    bm: int = 128,
    bn: int = 128,
    wm: int = 2,
    wn: int = 2,
    bk: int = 32,
    stages: int = 1,
    async_: bool = False,
    kpipe: bool = False,
    swizzle: bool = False,
    raster: int = 0,
    ws: int = 0,
    prefetch: bool = False,
) -> dict[str, object]:
    steps: list[dict[str, object]] = []

    def op(primitive: str, /, **fields: object) -> None:
        steps.append({"op": primitive, **fields})

    warps = wm * wn
    outer = ["b"] if raster else ["bi", "bj"]  # the block loops, once bound
    op("get_sblock", name="C", out="C")
    op("get_loops", block="C", out=["i", "j", "k"])
    op("split", loop="i", factors=[None, wm, bm // wm // 16, 16], out=["i0", "i1", "i2", "i3"])
    op("split", loop="j", factors=[None, wn, bn // wn // 16, 16], out=["j0", "j1", "j2", "j3"])
    op("split", loop="k", factors=[None, bk // 16, 16], out=["k0", "k1", "k2"])
    op("reorder", ordered_loops=["i0", "j0", "i1", "j1", "k0", "k1", "i2", "j2", "i3", "j3", "k2"])
    if raster:
        op("split", loop="i0", factors=[None, raster], out=["i0o", "i0i"])
        op("reorder", ordered_loops=["i0o", "j0", "i0i"])
        op("fuse", loops=["i0o", "j0", "i0i"], out="b")
        op("bind", loop="b", thread="blockIdx.x")
    else:
        op("bind", loop="i0", thread="blockIdx.y")
        op("bind", loop="j0", thread="blockIdx.x")
    op("fuse", loops=["i1", "j1"], out="w")
    op("bind", loop="w", thread="threadIdx.y")
    # C in the warps' registers; A and B through shared memory into registers
    op("cache_write", block="C", write_buffer_index=0, storage_scope="warp", out="C_warp")
    op("reverse_compute_at", block="C_warp", loop="w")
    op("cache_read", block="C", read_buffer_index=0, storage_scope="shared", out="A_shared")
    op("cache_read", block="C", read_buffer_index=1, storage_scope="shared", out="B_shared")
    op("cache_read", block="C", read_buffer_index=0, storage_scope="warp", out="A_warp")
    op("cache_read", block="C", read_buffer_index=1, storage_scope="warp", out="B_warp")
    op("compute_at", block="A_warp", loop="k1")
    op("compute_at", block="B_warp", loop="k1")
    op("compute_at", block="A_shared", loop="k0")
    op("compute_at", block="B_shared", loop="k0")
    for block, kind in (("A_warp", "write"), ("B_warp", "write"), ("C_warp", "read")):
        op(
            "transform_layout",
            block=block,
            buffer_index=0,
            buffer_index_type=kind,
            index_map=MMA_LAYOUT,
        )
    op("decompose_reduction", block="C", loop="k0", out="C_init")
    # the copies: every thread of the block, 8 halves (16 bytes) at a time
    for name, p in (("A_shared", "a"), ("B_shared", "b")):
        if not swizzle:
            op("storage_align", block=name, buffer_index=0, axis=0, factor=32, offset=8)
        loops = [p + o for o in outer] + [p + "w", p + "k0", p + "0", p + "1"]
        op("get_loops", block=name, out=loops)
        op("fuse", loops=[p + "0", p + "1"], out=p + "f")
        parts = [p + "o", p + "ty", p + "tx", p + "v"]
        op("split", loop=p + "f", factors=[None, warps, 32, 8], out=parts)
        op("bind", loop=p + "ty", thread="threadIdx.y")
        op("bind", loop=p + "tx", thread="threadIdx.x")
        op("vectorize", loop=p + "v")
    # the tensor-core instructions
    op("get_loops", block="A_warp", out=["x" + o for o in outer] + ["xw", "xk0", "xk1", "xa", "xb"])
    op("split", loop="xa", factors=[None, 16], out=["xao", "xai"])
    op("tensorize", target="xai", intrin="mma_ldmatrix_f16_a")
    op("get_loops", block="B_warp", out=["y" + o for o in outer] + ["yw", "yk0", "yk1", "ya", "yb"])
    op("split", loop="yb", factors=[None, 16], out=["ybo", "ybi"])
    op("reorder", ordered_loops=["ybo", "ya", "ybi"])
    op("tensorize", target="ya", intrin="mma_ldmatrix_f16_b")
    loops = ["c" + o for o in outer] + ["cw", "ci2", "cj2", "ci3", "cj3"]
    op("get_loops", block="C_init", out=loops)
    op("tensorize", target="ci3", intrin="mma_fill_16x16_f32")
    loops = ["u" + o for o in outer] + ["uw", "uk0", "uk1", "ui2", "uj2", "ui3", "uj3", "uk2"]
    op("get_loops", block="C", out=loops)
    op("tensorize", target="ui3", intrin="mma_f16f16f32")
    op("get_loops", block="C_warp", out=["s" + o for o in outer] + ["sw", "s0", "s1"])
    op("split", loop="s0", factors=[None, 16], out=["s0o", "s0i"])
    op("split", loop="s1", factors=[None, 16], out=["s1o", "s1i"])
    op("reorder", ordered_loops=["s0o", "s1o", "s0i", "s1i"])
    op("tensorize", target="s0i", intrin="mma_store_16x16_f32_global_")
    if swizzle:
        for block in ("A_shared", "B_shared"):
            op("annotate", target=block, key="permuted_layout", value=1)
        for block in ("A_shared_warp_o", "B_shared_warp_o"):  # the tensorized ldmatrix blocks
            op("get_sblock", name=block, out=block)
            op("annotate", target=block, key="permuted_layout", value=1)
    if stages > 1:
        # the k loop's body: copy A, copy B, the k steps; the copies run stages - 1 ahead.
        # With `prefetch`, the fragment pipeline (below) has split the k steps into three
        # parts: the prologue (the first k step's loads), the body and the epilogue (the last
        # k step's products), and the next tile's prologue goes before this tile's epilogue,
        # so that no k step waits on its own ldmatrix
        stage, order = [0, 0, stages - 1], [0, 1, 2]
        if prefetch:
            stage, order = [0, 0, stages - 1, stages, stages], [1, 2, 3, 0, 4]
        op("annotate", target="uk0", key="software_pipeline_stage", value=stage)
        op("annotate", target="uk0", key="software_pipeline_order", value=order)
        if async_:
            op("annotate", target="uk0", key="software_pipeline_async_stages", value=[0])
        if ws:
            op("annotate", target="uk0", key="software_pipeline_warp_specialize", value=ws)
    if kpipe or prefetch:
        # a k step's body: ldmatrix A, ldmatrix B, the products; loads one step ahead
        op("annotate", target="uk1", key="software_pipeline_stage", value=[0, 0, 1])
        op("annotate", target="uk1", key="software_pipeline_order", value=[0, 1, 2])
    return {"version": 1, "func": "main", "steps": steps}


PLANS: dict[str, dict[str, Any]] = {
    # the steps of docs/gpu.md, each on the one before
    "gemm_mma": {},
    "gemm_mma_swizzle": {"swizzle": True},
    "gemm_mma_async2": {"swizzle": True, "stages": 2, "async_": True},
    "gemm_mma_async3": {"swizzle": True, "stages": 3, "async_": True},
    "gemm_mma_async4": {"swizzle": True, "stages": 4, "async_": True},
    "gemm_mma_async2_regpipe": {"swizzle": True, "stages": 2, "async_": True, "kpipe": True},
    "gemm_mma_async3_raster8": {"swizzle": True, "stages": 3, "async_": True, "raster": 8},
    # other depths and shapes
    "gemm_mma_bk64_async2_regpipe": {
        "bk": 64,
        "swizzle": True,
        "stages": 2,
        "async_": True,
        "kpipe": True,
    },
    "gemm_mma_8warps_bk64_async3": {
        "wn": 4,
        "bk": 64,
        "swizzle": True,
        "stages": 3,
        "async_": True,
    },
    "gemm_mma_128x256_async3_raster8": {
        "bn": 256,
        "wn": 4,
        "swizzle": True,
        "stages": 3,
        "async_": True,
        "raster": 8,
    },
    # the fastest on an H200 (docs/gpu.md): 128 x 256 tiles, 4 stages, grouped order, and the
    # next k tile's first fragments loaded before the last k step's products
    "gemm_mma_128x256_async4_raster8_prefetch": {
        "bn": 256,
        "wn": 4,
        "swizzle": True,
        "stages": 4,
        "async_": True,
        "raster": 8,
        "prefetch": True,
    },
    # warp-specialized: 128 copying threads beside the 4 computing warps (64 x 128 tiles, the
    # Hopper program's test shape)
    "gemm_wgmma_tensorize.mma_ws": {
        "bm": 64,
        "swizzle": True,
        "stages": 3,
        "ws": 128,
    },
}


def main() -> None:
    here = Path(__file__).parent
    for name, options in PLANS.items():
        text = json.dumps(plan(**options), indent=1)
        (here / f"{name}.plan.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
