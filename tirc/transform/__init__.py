"""Lowering: the pass manager, pipelines as TOML data, and one pass per module in passes/.

A pass is a frozen dataclass whose fields are its options (`unroll-loop{auto_max_step=16}`);
`run_pipeline` applies a list of them with one hook between passes.
"""

from tirc.transform.pass_base import Dialect, FunctionPass, ModulePass
from tirc.transform.pipeline import Pipeline, default_pipeline, load_pipeline, read_pipeline
from tirc.transform.registry import lookup_pass, pass_names
from tirc.transform.runner import Instruments, run_pipeline

__all__ = [
    "Dialect",
    "FunctionPass",
    "Instruments",
    "ModulePass",
    "Pipeline",
    "default_pipeline",
    "load_pipeline",
    "lookup_pass",
    "pass_names",
    "read_pipeline",
    "run_pipeline",
]
