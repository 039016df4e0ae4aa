"""Time forward+backward and record peak memory over growing T, in a fresh process.

Run as ``python -m components.probes.timing_worker '<json spec>'``; prints one JSON line.
Peak memory on CPU is the process's resident high-water mark (``ru_maxrss``) minus the mark
taken after building the model: PyTorch's CPU allocator keeps no statistics and tracemalloc
does not see its allocations, so a fresh process per model with T in ascending order is the
one measurement that counts every byte (activations kept for backward included). On CUDA the
allocator's own peak (``max_memory_allocated``) is used.
"""
from __future__ import annotations

import json
import resource
import statistics
import sys
import time

import torch


def _maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # Linux reports KiB


def measure(spec: dict) -> dict:
    """Return per-T median seconds and peak bytes for fwd+bwd of one model."""
    torch.set_num_threads(spec["threads"])
    from components.probes.common import random_inputs
    from components.train.build import build_model

    device, dtype = spec["device"], getattr(torch, spec["dtype"])
    torch.manual_seed(spec["seed"])
    model = build_model(spec["model"], spec["overrides"]).to(device=device, dtype=dtype).train()
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    base = _maxrss_bytes()
    rows = []
    for T in sorted(spec["lengths"]):
        x = random_inputs(model, spec["batch"], T, spec["seed"]).to(device)
        x = x.to(dtype) if x.dtype.is_floating_point else x

        def step():
            out = model(x)
            out = out[0] if isinstance(out, (tuple, list)) else out
            out.float().sum().backward()
            model.zero_grad(set_to_none=True)

        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        for _ in range(spec["warmup"]):
            step()
        sync()
        times = []
        for _ in range(spec["repeats"]):
            t0 = time.perf_counter()
            step()
            sync()
            times.append(time.perf_counter() - t0)
        peak = torch.cuda.max_memory_allocated() - before if cuda else _maxrss_bytes() - base
        rows.append({"T": T, "seconds": statistics.median(times), "peak_bytes": peak})
    return {"rows": rows, "memory_method": "cuda.max_memory_allocated" if cuda else "ru_maxrss (fresh process)"}


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
