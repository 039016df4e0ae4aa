"""Components: train (``train.model``) and the checkpoint format probes read.

Where things are: ``config`` the parameters (no torch: `bottlenecks check` reads it); ``trainer``
the component, which runs ``prepare`` (task, model, optimiser, resume), ``loop`` (with ``step``:
the passes and their out-of-memory retry, ``monitor``: divergence and logged means) and
``finish`` (averaging, evaluation, summary); ``tasks`` (one class per task kind), ``build``,
``optim``, ``checkpoint`` and the rest are the pieces they use. Modules are imported as steps need them
(``components/library.py`` lists them).
"""

__all__ = ["load_model"]


def __getattr__(name: str):
    if name == "load_model":  # imported on first use: importing the package must not import torch
        from components.train.checkpoint import load_model

        return load_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
