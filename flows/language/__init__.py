"""The pipeline language: what a pipeline file may say, and where it went wrong.

    yamlload.py     ``safe_load`` semantics with the line and column of every key and value
    yamlcompose.py  the composer that bounds values, nesting and alias expansion
    errors.py       ``Located`` errors (``FILE:LINE:COL: message``) and ``PipelineInvalid``
    spec.py         top-level, profile, schedule and step keys, checked with their positions
    refs.py         the reference grammar: ``${params.x}``, ``${matrix.x}``, ``${step.output}``
    schema.py       the JSON Schema editors use

Nothing here imports planning, execution, tracking or a server: checking a file is cheap.
"""

from flows.language.errors import Located, PipelineInvalid
from flows.language.spec import Pipeline, Step, parse

__all__ = ["Located", "PipelineInvalid", "Pipeline", "Step", "parse"]
