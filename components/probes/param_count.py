"""probe.param_count (B1): one parameter set serves every length, or the size depends on T."""

from __future__ import annotations

from typing import Any

import torch

from components import Context, component
from components.bounds import Count, Sizes
from components.model_names import ModelName
from components.probes import common as P
from components.train.build import accepted_fields, build_model


@component(
    "probe.param_count",
    outputs=["summary"],
    bottleneck="B1",
    logged_before=["params/", "runs", "runs_all", "params_spread", "params_constant"],  # a bare params: train.model's
    summary=["params/T_{lengths}", "runs/T_{lengths}", "params_spread", "params_constant", "runs_all"],
)
def param_count(
    ctx: Context,
    *,
    model: ModelName,
    overrides: dict[str, Any] | None = None,
    lengths: Sizes = [8, 16, 32, 64, 128],  # noqa: B006
    length_field: str | None = None,  # config field set to T before building (e.g. max_len, seq_len)
    seed: Count = 0,
) -> dict:
    """Count a model's parameters when built for each length T, and check it runs at T.

    Returns:
        ``summary``: ``params/T_<T>``, ``runs/T_<T>`` (1 if a forward pass at length T works),
        ``params_spread`` (max - min) and ``params_constant`` (1 when equal for every T).
    """
    fields = accepted_fields(model)
    if length_field and fields is not None and length_field not in fields:
        raise P.ProbeError(f"model {model!r} has no config field {length_field!r}; fields: {sorted(fields)}")
    summary: dict[str, Any] = {}
    counts = []
    for T in lengths:
        ov = dict(overrides or {}) | ({length_field: T} if length_field else {})
        torch.manual_seed(seed)
        net = build_model(model, ov).eval()
        n = sum(p.numel() for p in net.parameters())
        counts.append(n)
        try:
            with torch.no_grad():
                net(P.random_inputs(net, 2, T, seed))
            runs = 1
        except Exception as e:  # a fixed-window model cannot take other lengths: that is the finding
            ctx.log.info("%s does not run at T=%d: %s", model, T, e)
            runs = 0
        summary[f"params/T_{T}"] = n
        summary[f"runs/T_{T}"] = runs
        ctx.log_metrics({"params": n, "runs": runs}, T)
    summary["params_spread"] = max(counts) - min(counts)
    summary["params_constant"] = int(summary["params_spread"] == 0)
    summary["runs_all"] = int(all(summary[f"runs/T_{T}"] for T in lengths))
    P.log_summary(ctx, summary)
    return {"summary": summary}
