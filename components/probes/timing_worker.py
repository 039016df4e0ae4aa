"""Time forward+backward and record peak memory over growing T, in a fresh process.

Run as ``python -m components.probes.timing_worker '<json spec>'``; prints one JSON line. With
``--serve`` it imports torch once and forks a child per spec read from stdin (``serve``).
Times and CPU memory are measured in separate processes (see ``EXACT_MALLOC_ENV``).
Peak memory on CPU is the rise of the process's resident high-water mark over its resident size
just before the runs at one T: PyTorch's CPU allocator keeps no statistics and tracemalloc does
not see its allocations, while the kernel counts every touched page (activations kept for
backward included). glibc's cached free memory is trimmed first (``malloc_trim``), so the base
is live memory; on Linux the mark is then reset per T (``/proc/self/clear_refs``) and read back
as ``VmHWM``; elsewhere ``ru_maxrss`` of this fresh process with T ascending stands in. On CUDA
the allocator's own peak (``max_memory_allocated``) is used.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import statistics
import sys
import time

import torch


def _maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # Linux reports KiB


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"/proc/self/status has no {field}")


def _trim() -> None:
    """Return glibc's cached free memory to the OS, so resident size is live memory again."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing cached to drop, or no way to drop it
        pass


class PeakRSS:
    """Peak resident memory above the level at ``reset()``."""

    def __init__(self):
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset the high-water mark (Linux >= 4.0)
            self.method = "VmHWM after malloc_trim + clear_refs (Linux)"
        except OSError:
            self.method = "ru_maxrss (fresh process, T ascending)"
        self.base = 0

    def reset(self) -> None:
        _trim()
        if self.method.startswith("VmHWM"):
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.base = _status_kib("VmRSS") * 1024
        elif not self.base:
            self.base = _maxrss_bytes()

    def peak(self) -> int:
        if self.method.startswith("VmHWM"):
            return _status_kib("VmHWM") * 1024 - self.base
        return _maxrss_bytes() - self.base


# glibc tunables for the memory pass: map every allocation over 64 KiB and unmap it on free.
# Otherwise glibc's adaptive thresholds keep large freed blocks in the heap, and the resident
# size overstates what a step needs at short T, flattening the fitted exponents. Mapping costs
# page faults, so times are measured in another process with the allocator users run.
EXACT_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def _fwd_bwd(model, x) -> None:
    """One training step's work: forward, backward of the summed output, gradients dropped."""
    out = model(x)
    out = out[0] if isinstance(out, (tuple, list)) else out
    out.float().sum().backward()
    model.zero_grad(set_to_none=True)


def _memory_row(model, x, T: int, rss: PeakRSS) -> dict:
    """Peak resident bytes of one step at length T."""
    peaks = []
    for _ in range(2):  # the lower of two: fragmentation only ever adds resident pages
        rss.reset()
        _fwd_bwd(model, x)
        peaks.append(rss.peak())
    return {"T": T, "peak_bytes": min(peaks)}


def _time_row(model, x, T: int, spec: dict, cuda: bool) -> dict:
    """Best, median and spread of the repeats' seconds at length T (on CUDA, the allocator's peak too)."""
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    for _ in range(spec["warmup"]):
        _fwd_bwd(model, x)
    sync()
    times = []
    for _ in range(spec["repeats"]):
        t0 = time.perf_counter()
        _fwd_bwd(model, x)
        sync()
        times.append(time.perf_counter() - t0)
    row = {"T": T, "seconds": min(times), "median_s": statistics.median(times), "times_s": times}
    if len(times) > 1:
        row["sd_s"] = statistics.stdev(times)  # the repeats' spread: the verdicts' timing uncertainty
    if cuda:
        row["peak_bytes"] = torch.cuda.max_memory_allocated() - before
    return row


def _memory_method(cuda: bool, rss: PeakRSS | None) -> str | None:
    """How peak memory was measured (None: a CPU time pass measures none)."""
    if cuda:
        return "cuda.max_memory_allocated"
    if rss is not None:
        exact = all(os.environ.get(k) == v for k, v in EXACT_MALLOC_ENV.items())
        return rss.method + (", glibc mmap threshold 64 KiB" if exact else "")
    return None


def measure(spec: dict) -> dict:
    """Return per-T best and median seconds (``mode: time``) or peak bytes (``mode: memory``) of fwd+bwd.

    ``seconds`` is the best of the repeats, as ``timeit`` reports: on a shared machine other
    processes only ever add time, and the exponents are fitted to it; ``median_s`` is kept beside it.

    On CUDA one ``time`` pass records the allocator's peak as well.
    """
    torch.set_num_threads(spec["threads"])
    from components.probes.common import random_inputs
    from components.train.build import build_model

    device, dtype = spec["device"], getattr(torch, spec["dtype"])
    torch.manual_seed(spec["seed"])
    model = build_model(spec["model"], spec["overrides"]).to(device=device, dtype=dtype).train()
    cuda = device.startswith("cuda")
    rss = None if cuda or spec["mode"] == "time" else PeakRSS()
    rows = []
    for T in sorted(spec["lengths"]):
        x = random_inputs(model, spec["batch"], T, spec["seed"]).to(device)
        x = x.to(dtype) if x.dtype.is_floating_point else x
        rows.append(_memory_row(model, x, T, rss) if rss is not None else _time_row(model, x, T, spec, cuda))
    return {"rows": rows, "memory_method": _memory_method(cuda, rss)}


def serve() -> None:
    """Measure each spec read from stdin (a JSON line) in a child forked from this process, which has
    imported torch and the models and nothing else, so every model still runs in a process of its
    own, as fresh as one started for it, without paying torch's import each time (Linux, CPU).
    Writes one JSON line per spec: ``{"result": ...}``, or ``{"error": ...}`` with the child's
    traceback on stderr."""
    from components.probes.common import random_inputs  # noqa: F401 - imported once, before the forks
    from components.train.build import build_model  # noqa: F401

    for line in sys.stdin:
        spec = json.loads(line)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: measure, send the result through the pipe, leave at once
            os.close(read)
            code = 1
            try:
                os.write(write, json.dumps(measure(spec)).encode())
                code = 0
            except BaseException:  # noqa: BLE001 - any failure is the measurement's, told to the parent
                import traceback

                traceback.print_exc()
                sys.stderr.flush()
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        reply = {"result": json.loads(data)} if code == 0 else {"error": f"the measuring process exited with {code}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(json.dumps(measure(json.loads(sys.argv[1]))))
