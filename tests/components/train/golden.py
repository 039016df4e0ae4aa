"""Tiny training runs whose results must not change when the trainer's code is reorganised.

Each case trains through the ``train.model`` component on a fixed seed. Its record holds what
every CPU must reproduce: the data's digest, the logged parameters (exactly), and the final weights,
summary (less its timing fields) and logged metric values as numbers compared within ``TOLERANCE``.
Float results are not the same bits on every CPU (the kernels torch picks for AVX2, AVX512 or
AVX512-BF16 sum in different orders, fp32 included), so the bit-for-bit digests of the weights and
metrics are recorded per CPU fingerprint and compared where the running CPU's fingerprint has one.

``python tests/components/train/golden.py`` rewrites ``golden_training.json``: do that only for a
change that is meant to alter training. ``--add-cpu`` keeps the record and adds this CPU's digests.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "golden_training.json"
TIMING = {"seconds", "cpu_seconds", "eval_seconds", "tokens_per_s", "train/tokens_per_s"}  # vary run to run
TIMING |= {f"run/{k}" for k in TIMING}  # the summary's names, and the metrics' (as recorded: see _as_recorded)
COPIES = {"train/lr_x1000"}  # another metric in other units (train/lr in thousandths): the record has the metric
# Measured between CPU capabilities (AVX2, AVX512, AVX512-BF16; fp32 and bf16): weights moved by at
# most 6.3e-7 and metrics by 2e-7 relative; a 10% learning rate or one step fewer moves the weights
# by 4e-3 to 1e-2 (test_train_golden.py shows each change is caught).
TOLERANCE = {"weights_rms": 1e-4, "values_rel": 1e-5}
PROJECTIONS = 4  # fixed random +-1 directions per tensor: a change anywhere in a tensor moves them
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16")

sys.path.insert(0, str(HERE))
from test_train_standins import write_sequence_data  # noqa: E402

MODEL = "test_train_standins:tiny_rnn"


def _tensors_digest(state: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for k in sorted(state):
        v = state[k].detach().cpu().contiguous()
        h.update(f"{k}:{v.dtype}:{tuple(v.shape)}".encode())
        h.update(v.view(torch.uint8).numpy().tobytes() if v.numel() else b"")
    return h.hexdigest()[:16]


def cpu_fingerprint() -> str:
    """What decides which float kernels run: vendor, torch's capability, the CPU's relevant flags."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    vendor = next((ln.split(":")[1].strip() for ln in info.splitlines() if ln.startswith("vendor_id")), "")
    flags = set(next((ln.split(":")[1].split() for ln in info.splitlines() if ln.startswith("flags")), []))
    have = "+".join(f for f in CPU_FLAGS if f in flags)
    cap = torch.backends.cpu.get_cpu_capability()
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "")
    return f"{vendor or platform.machine()}/{cap}/{have}/torch-{torch.__version__}/onednn-{isa or 'all'}"


def weight_summary(state: dict[str, torch.Tensor]) -> dict[str, list[float]]:
    """Per tensor: its size and its projections on fixed +-1 directions, scaled to an RMS."""
    out = {}
    for k in sorted(state):
        v = state[k].detach().double().flatten()
        g = torch.Generator().manual_seed(len(v))
        signs = torch.randint(0, 2, (PROJECTIONS, len(v)), generator=g, dtype=torch.float64) * 2 - 1
        out[k] = [float(len(v)), *(signs @ v / max(len(v), 1) ** 0.5).tolist()]
    return out


def _folder_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(str(p.relative_to(folder)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _record(ctx, out: dict, data: Path) -> dict[str, Any]:
    """What a case leaves behind, without paths of this machine or timings."""
    saved = torch.load(out["checkpoint"], weights_only=False)
    params = {k: ("<data>" if k == "data" else v) for k, v in ctx.params.items()}
    logged = {_as_recorded(k): [[s, v] for s, v in pts] for k, pts in ctx.metrics.items()}
    metrics = {k: logged[k] for k in sorted(logged) if k not in TIMING | COPIES}
    summary = {k: v for k, v in out["summary"].items() if k not in TIMING}
    exact = {"weights": _tensors_digest(saved["state_dict"]), "values": _json_digest([summary, metrics])}
    return {
        "data": _folder_digest(Path(data)),
        "weights": weight_summary(saved["state_dict"]),
        "summary": summary,
        "params": params,
        "metrics": metrics,
        "exact": {cpu_fingerprint(): exact},
    }


def _as_recorded(key: str) -> str:
    """A metric's name as the fixture recorded it: a namespace renamed since (``components.context.MOVED``,
    a declared rename such as run/ -> vitals/) is read back to its old name, so a rename is not taken
    for a change of what the trainer computes, and the recorded runs stay as they were."""
    from components.context import MOVED

    for old, new in MOVED.items():
        if key.startswith(new):
            return old + key[len(new) :]
    return key


def _json_digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _train(root: Path, run: str, **params) -> dict[str, Any]:
    from components import Context, get

    ctx = Context(root / run)
    out = get("train.model")(ctx, **params)
    return _record(ctx, out, params["data"])


def _translation(root: Path) -> str:
    from components import Context, get

    return get("data.synthetic_translation")(
        Context(root / "mt"), vocab=8, min_len=2, max_len=8, n_train=64, n_valid=8, n_test=8
    )["dataset"]


def cases(root: Path) -> dict[str, dict[str, Any]]:
    """Run every case in ``root`` and return their records by name."""
    torch.set_num_threads(1)
    seq = str(write_sequence_data(root / "seq", n=96))
    mt = _translation(root)
    out: dict[str, dict[str, Any]] = {}
    out["classify_eval_average"] = _train(
        root,
        "classify",
        data=seq,
        model=MODEL,
        overrides={"dropout": 0.3},
        steps=20,
        batch_size=16,
        lr=1e-2,
        seed=2,
        eval_every=5,
        log_every=4,
        checkpoint_every=5,
        average_last=3,
    )
    out["classify_adadelta_clip_value_bf16"] = _train(
        root,
        "adadelta",
        data=seq,
        model=MODEL,
        steps=8,
        batch_size=8,
        optimizer="adadelta",
        lr=1.0,
        clip="value",
        clip_value=0.5,
        bf16=True,
        log_every=3,
        deterministic=True,
    )
    out["translation_accumulate"] = _train(
        root,
        "mt",
        data=mt,
        model="luong-tiny",
        overrides={"dropout": 0.2},
        steps=6,
        max_tokens=40,
        accumulate=3,
        optimizer="adamw",
        weight_decay=0.01,
        betas=[0.9, 0.98],
        schedule="inverse_sqrt",
        warmup=2,
        label_smoothing=0.1,
        eval_every=3,
        log_every=2,
        seed=5,
    )
    out["translation_two_passes"] = _train(
        root,
        "mt2",
        data=mt,
        model="transformer-tiny",
        overrides={"dropout": 0.0},
        steps=3,
        batch_size=4,
        accumulate=4,
        passes=2,
        optimizer="sgd",
        lr=0.5,
        momentum=0.9,
        clip="none",
        log_every=1,
        seed=3,
    )
    out["diverged_no_clip"] = _train(
        root, "diverged", data=seq, model=MODEL, steps=50, batch_size=16, optimizer="sgd", lr=1e38, clip="none"
    )
    out["diverged_max_loss"] = _train(
        root,
        "max_loss",
        data=seq,
        model=MODEL,
        steps=20,
        batch_size=16,
        optimizer="sgd",
        lr=1e3,
        clip="none",
        max_loss=100.0,
        log_every=1,
    )
    resume = dict(data=seq, model=MODEL, overrides={"dropout": 0.3}, batch_size=16, seed=4, checkpoint_every=3)
    out["resume_first_part"] = _train(root, "resume", steps=7, **resume)
    out["resume_extended"] = _train(root, "resume", steps=15, eval_every=5, **resume)
    out["resume_other_params_restart"] = _train(root, "resume", steps=6, lr=2e-3, **resume)
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        records = json.loads(json.dumps(cases(Path(tmp))))
    if "--add-cpu" in sys.argv[1:]:
        old = json.loads(FIXTURE.read_text())
        for name, rec in old.items():
            rec["exact"] |= records[name]["exact"]
        records = old
    FIXTURE.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(records)} cases to {FIXTURE.name}")


if __name__ == "__main__":
    main()
