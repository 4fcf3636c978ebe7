"""The golden folders, by the test file that checks them and the oracle that regenerates
them: plain data, imported by both sides (tests/schedule/test_golden_*.py, which use tirc,
and golden/oracle_*.py, which use TVM), so neither imports the other's world."""

LOOPS = (
    "split",
    "fuse",
    "reorder",
    "merge",
    "add_unit_loop",
    "reorder_block_iter_var",
    "loop_partition",
)
CACHES = (
    "cache_read",
    "cache_write",
    "cache_inplace",
    "set_scope",
    "storage_align",
    "unsafe_set_dtype",
    "reindex",
    "reindex_cache_read",
    "reindex_cache_write",
    "annotate_buffer_access",
    "unsafe_hide_buffer_access",
)
ANNOTATIONS = (
    "parallel",
    "vectorize",
    "unroll",
    "bind",
    "annotate",
    "unannotate",
    "sample_perfect_tile",
    "sample_categorical",
    "sample_compute_location",
    "enter_postproc",
)
REDUCTIONS = ("compute_inline", "reverse_compute_inline", "decompose_reduction", "rfactor")
FUSION = ("fuse_reduction_epilogue", "cache_index", "read_at", "write_at")
LAYOUTS = ("transform_block_layout", "transform_layout", "pad_einsum", "decompose_padding")
PARTITION = ("rolling_buffer", "blockize_blocks")  # loop_partition's pairs are in LOOPS
TENSORIZE = ("blockize", "tensorize")
