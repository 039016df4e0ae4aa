"""Benchmark train.model against a bare PyTorch loop on the same model, batches and device.

Usage: python benchmarks/train.py [--model lstm-small] [--steps 300] [--repeats 3] [--threads 1]
       python benchmarks/train.py --families [--only lstm,gru] [--steps 200] [--repeats 5] [--clock cpu]
       python benchmarks/train.py --families --translation [--steps 100]   (Multi30k at the standard profile's size)
       python benchmarks/train.py --translation [--model transformer-small] [--max-tokens 2000]
       python benchmarks/train.py --projection [--model seq2seq-small] [--overrides '{"hidden_size": 256}']

``--projection`` times teacher-forced translation training with the output layer applied only to
the scored (non-padding) target positions, as the models do, against the full (B, T, V) projection,
on Multi30k with a joint BPE of ``--vocab`` (default 8,000, the standard profile's) and batches of
``--batch-size`` random sentences (pass 32, the standard profile's); it prints seconds per step of each
and their ratio.

``--translation`` compares the trainer's translation path as it was by default (random batches of
``batch_size`` sentences, ids as Python lists, collation on the training thread) with the new one
(token-budget buckets, memory-mapped uint16 arrays, a prefetching thread) on the same model, the
same Multi30k sample and the same sentences per step on average; it prints real (non-padding)
tokens per second of each and their ratio.

``--families`` trains every model family the shipped pipelines train (recurrent cells, a 1D
convolution, seq2seq, Luong and Bahdanau attention, the Transformer, the Transformer tagger, ViT,
the CNN and the captioner), each on its quick-profile data and size, under ``train.model`` and under
a bare loop that does the same work per step (the same batches, teacher forcing and the loss on
real target tokens for translation, Adam and clipping at norm 1), and prints one table of trainer /
bare-loop throughput (target >= 0.95). ``--clock cpu`` times both with the process's CPU time
(every thread of this process, so a prefetching thread counts) instead of the wall clock: on a
shared machine other processes then add less noise; on a quiet one the two agree. With
``--translation`` the table is the translation families at the standard profile's real-text size
(Multi30k, BPE 8,000, batches of 32, hidden 256, transformer-medium).

Prints the trainer's training-loop throughput relative to the bare loop (target >= 0.95) and the
cost of one checkpoint (model, optimiser, scheduler and RNG state, written atomically). Ratios
use the best of the interleaved repeats (as ``timeit`` does: other processes only ever add
time); medians are printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from components import Context, get
from components.train.build import build_model, data_overrides
from components.train.data import TensorBatches, load_meta, load_split


def bare_loop(data: str, model_name: str, steps: int, batch_size: int, lr: float) -> float:
    """Train with the plainest loop that does the same work; return seconds."""
    meta = load_meta(data)
    torch.manual_seed(0)
    model = build_model(model_name, data_overrides(meta, model_name))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    batches = TensorBatches(load_split(data, "train"), batch_size, seed=0)
    model.train()
    t0 = time.perf_counter()
    for step in range(steps):
        b = batches(step)
        loss = F.cross_entropy(model(b["x"], lengths=b["lengths"]), b["y"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return time.perf_counter() - t0


def trainer(data: str, model_name: str, steps: int, batch_size: int, lr: float, checkpoint_every: int) -> float:
    """Train with train.model in a fresh work dir; return its training-loop seconds."""
    with tempfile.TemporaryDirectory() as work:
        out = get("train.model")(
            Context(Path(work)),
            data=data,
            model=model_name,
            steps=steps,
            batch_size=batch_size,
            lr=lr,
            checkpoint_every=checkpoint_every,
            eval_every=0,  # the loop alone, as the bare loop: no learning-curve points
        )
    return out["summary"]["seconds"]


def checkpoint_cost(model_name: str, data: str, repeats: int = 20) -> tuple[float, int]:
    """Time one resumable checkpoint write directly; return (median ms, bytes)."""
    from components.train import checkpoint as C
    from components.train.optim import make_optimizer, make_scheduler

    meta = load_meta(data)
    model = build_model(model_name, data_overrides(meta, model_name))
    opt = make_optimizer(model, "adam", 1e-3, 0.0, (0.9, 0.999), 0.0)
    sched = make_scheduler(opt, "constant", 0)
    b = TensorBatches(load_split(data, "train"), 64, seed=0)(0)
    F.cross_entropy(model(b["x"]), b["y"]).backward()
    opt.step()  # optimiser state exists, as in a real checkpoint
    times = []
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "last.pt"
        for _ in range(repeats):
            t0 = time.perf_counter()
            C.atomic_save(
                {
                    **C.model_record(model, model_name, {}),
                    "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(),
                    "rng": C.rng_state(),
                    "step": 0,
                },
                path,
            )
            times.append(time.perf_counter() - t0)
        size = path.stat().st_size
    return 1000 * statistics.median(times), size


def translation_ratio(args) -> dict:
    """Real tokens/s of the old-default and new translation paths, interleaved repeats."""
    import shutil

    from components.train.tasks import Task, TranslationBatches

    base = Path(args.data_dir) / "multi30k"
    with tempfile.TemporaryDirectory() as root:
        data = get("data.wmt")(
            Context(Path(root) / "d"),
            source="files",
            vocab_size=4000,
            max_pairs=args.pairs,
            files={"train": [[str(base / "train.en.gz"), str(base / "train.de.gz")]]},
        )["dataset"]
        lists = Path(root) / "lists"
        shutil.copytree(data, lists, ignore=shutil.ignore_patterns("arrays"))  # an older folder: lists only
        task = Task(data, "cpu")
        src, tgt = task.split("train")
        buckets = TranslationBatches(src, tgt, task.pad_id, 0, 1, args.max_tokens)
        buckets(0)
        per_batch = round(len(src) / len(buckets.batches))  # same sentences per step on average

        def real_tokens(batches) -> int:
            return sum(
                int(b["src_lengths"].sum() + (b["tgt_out"] != -100).sum()) for b in map(batches, range(args.steps))
            )

        tok_old = real_tokens(TranslationBatches(src, tgt, task.pad_id, 0, per_batch, None))
        tok_new = real_tokens(TranslationBatches(src, tgt, task.pad_id, 0, 1, args.max_tokens))
        kw = dict(model=args.model, steps=args.steps, lr=1e-3, checkpoint_every=0, eval_every=0)
        old, new = [], []
        for i in range(args.repeats + 1):  # the first round warms up (imports, allocator) and is dropped
            with tempfile.TemporaryDirectory() as work:
                o = get("train.model")(
                    Context(Path(work) / "o"), data=str(lists), batch_size=per_batch, prefetch=0, **kw
                )["summary"]["seconds"]
                n = get("train.model")(
                    Context(Path(work) / "n"), data=data, max_tokens=args.max_tokens, prefetch=2, **kw
                )["summary"]["seconds"]
            if i:
                old.append(o)
                new.append(n)
    rate_old, rate_new = tok_old / min(old), tok_new / min(new)
    return {
        "model": args.model,
        "steps": args.steps,
        "pairs": len(src),
        "max_tokens": args.max_tokens,
        "sentences_per_step": per_batch,
        "threads": args.threads,
        "torch": torch.__version__,
        "old_real_tokens": tok_old,
        "new_real_tokens": tok_new,
        "old_s": min(old),
        "new_s": min(new),
        "old_real_tokens_per_s": round(rate_old),
        "new_real_tokens_per_s": round(rate_new),
        "ratio": round(rate_new / rate_old, 3),
        "ratio_median": round((tok_new / statistics.median(new)) / (tok_old / statistics.median(old)), 3),
    }


def projection_ratio(args) -> dict:
    """Seconds per step with the output layer on the scored positions only vs on every position."""
    from components.models import decoding

    base = Path(args.data_dir) / "multi30k"
    overrides = json.loads(args.overrides) if args.overrides else {}
    families = [c for c in _subclasses(decoding.Generates) if c.__dict__.get("projects_kept")]
    with tempfile.TemporaryDirectory() as root:
        data = get("data.wmt")(
            Context(Path(root) / "d"),
            source="files",
            vocab_size=args.vocab,
            max_pairs=args.pairs,
            files={"train": [[str(base / "train.en.gz"), str(base / "train.de.gz")]]},
        )["dataset"]
        kw = dict(
            data=data,
            model=args.model,
            overrides=overrides,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=1e-3,
            checkpoint_every=0,
            eval_every=0,
            prefetch=0,
        )
        kept, full = [], []
        try:
            for i in range(args.repeats + 1):  # the first round warms up and is dropped
                for on, into in ((True, kept), (False, full)):
                    for cls in families:
                        cls.projects_kept = on
                    with tempfile.TemporaryDirectory() as work:
                        seconds = get("train.model")(Context(Path(work)), **kw)["summary"]["seconds"]
                    if i:
                        into.append(seconds / args.steps)
        finally:
            for cls in families:
                cls.projects_kept = True
    return {
        "model": args.model,
        "overrides": overrides,
        "vocab": args.vocab,
        "pairs": args.pairs,
        "batch_size": args.batch_size,
        "steps": args.steps,
        "threads": args.threads,
        "torch": torch.__version__,
        "kept_s_per_step": round(min(kept), 4),
        "full_s_per_step": round(min(full), 4),
        "speedup": round(min(full) / min(kept), 3),
        "speedup_median": round(statistics.median(full) / statistics.median(kept), 3),
    }


# -- every family at its quick-profile size ---------------------------------------------------------
# (label, data step and its arguments, model, train.model arguments): the quick profile's settings
_RECALL = ("data.delayed_recall", {"lag": 50, "vocab": 8})
_MT = ("data.synthetic_translation", {"vocab": 20, "min_len": 4, "max_len": 24, "n_train": 20000, "n_test": 600})
_MT_RNN = {"batch_size": 32, "lr": 3e-3, "overrides": {"hidden_size": 128, "embed_dim": 64}}
FAMILIES = [
    ("rnn", _RECALL, "rnn-small", {"lr": 3e-3}),
    ("lstm", _RECALL, "lstm-small", {"lr": 3e-3, "overrides": {"forget_bias": 3.0}}),
    ("gru", _RECALL, "gru-small", {"lr": 3e-3, "overrides": {"update_bias": 3.0}}),
    ("conv1d", _RECALL, "conv1d-small", {"lr": 3e-3}),
    ("seq2seq", _MT, "seq2seq-small", _MT_RNN),
    ("luong", _MT, "luong-dot-small", _MT_RNN),
    ("bahdanau", _MT, "bahdanau-small", _MT_RNN),
    ("transformer", _MT, "transformer-small", {"batch_size": 32, "lr": 3e-3, "warmup": 200, "betas": [0.9, 0.98]}),
    (
        "tagger",
        ("data.multi_lookup", {}),
        "transformer-tagger-small",
        {"lr": 3e-3, "overrides": {"num_layers": 1, "n_heads": 4, "positions": "sinusoidal"}},
    ),
    ("vit", ("data.digits", {}), "vit-small", {"lr": 1e-3, "overrides": {"patch": 2, "num_layers": 2}}),
    ("cnn", ("data.digits", {}), "cnn-small", {"lr": 1e-3}),
    ("captioner", ("data.digit_strips", {"digits": 3, "n_train": 3000}), "captioner-small", {"lr": 3e-3}),
]


# the standard profile's real-text translation size: Multi30k, a joint BPE of 8,000, batches of 32
_MT_REAL = ("data.wmt", {"source": "files", "vocab_size": 8000, "max_len": 100, "max_pairs": 8000})
_MT_REAL_RNN = {"batch_size": 32, "lr": 3e-3, "overrides": {"hidden_size": 256, "embed_dim": 64}}
TRANSLATION_FAMILIES = [
    ("seq2seq", _MT_REAL, "seq2seq-small", _MT_REAL_RNN),
    ("luong", _MT_REAL, "luong-dot-small", _MT_REAL_RNN),
    ("bahdanau", _MT_REAL, "bahdanau-small", _MT_REAL_RNN),
    (
        "transformer",
        _MT_REAL,
        "transformer-medium",
        {"batch_size": 32, "lr": 1e-3, "warmup": 400, "betas": [0.9, 0.98]},
    ),
]


def _family_data(root: Path, spec: tuple, made: dict, data_dir: str = "") -> str:
    """Make (once) the data folder a family trains on."""
    name, kw = spec
    key = json.dumps([name, kw], sort_keys=True)
    if key not in made:
        if name == "data.digit_strips":
            kw = {**kw, "images": _family_data(root, ("data.digits", {}), made)}
        if name == "data.wmt":
            base = Path(data_dir) / "multi30k"
            if not (base / "train.en.gz").exists():
                raise SystemExit(f"--translation needs {base}/train.en.gz: pass --data-dir (or set BOTTLENECKS_DATA)")
            kw = {**kw, "files": {"train": [[str(base / "train.en.gz"), str(base / "train.de.gz")]]}}
        made[key] = get(name)(Context(root / f"data{len(made)}"), **kw)["dataset"]
    return made[key]


def bare_family_loop(data: str, model_name: str, kw: dict, steps: int, clock, keep: list | None = None) -> float:
    """The plainest loop doing the trainer's per-step work for this data kind; return seconds of ``clock``.

    ``keep``: a list that receives the trained model (tests compare its weights with the trainer's).
    """
    from components.train.tasks import Task

    task = Task(data, "cpu")
    torch.manual_seed(0)
    model = build_model(model_name, {**data_overrides(task.meta, model_name), **kw.get("overrides", {})})
    opt = torch.optim.Adam(model.parameters(), lr=kw["lr"], betas=tuple(kw.get("betas", (0.9, 0.999))))
    warmup = kw.get("warmup", 0)  # the trainer's constant schedule with a linear warm-up
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup)) if warmup else None
    batches = task.train_batches(0, kw.get("batch_size", 64), None)
    torch.manual_seed(0)  # dropout draws start from the seed, as the trainer's do
    kind = task.kind
    bos, eos = task.meta.get("bos_id"), task.meta.get("eos_id")
    model.train()

    def loss_of(b: dict) -> torch.Tensor:
        if kind == "translation":  # teacher forcing; only the real target tokens reach the output layer
            keep = (b["tgt_out"].reshape(-1) != -100).nonzero().squeeze(1)
            out = model(b["src"], b["src_lengths"], b["tgt_in"], keep=keep)
            out = out[0] if isinstance(out, tuple) else out
            return F.cross_entropy(out, b["tgt_out"].reshape(-1)[keep])
        if kind == "image_seq":  # the caption between BOS and EOS, teacher-forced
            y = b["y"]
            tgt = torch.cat([torch.full_like(y[:, :1], bos), y, torch.full_like(y[:, :1], eos)], dim=1)
            out = model(b["x"], None, tgt[:, :-1])
            out = out[0] if isinstance(out, tuple) else out
            return F.cross_entropy(out.reshape(-1, out.size(-1)), tgt[:, 1:].reshape(-1))
        out = model(b["x"], lengths=b["lengths"]) if "lengths" in b else model(b["x"])
        out = out[0] if isinstance(out, tuple) else out
        if b["y"].dim() == 3:  # several lookups per position: (B, T, J * C) -> (B, T, J, C)
            out = out.reshape(*out.shape[:2], b["y"].shape[2], -1)
        return F.cross_entropy(out.reshape(-1, out.size(-1)), b["y"].reshape(-1), ignore_index=-100)

    t0 = clock()
    for step in range(steps):
        loss = loss_of(batches(step))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if sched is not None:
            sched.step()
    seconds = clock() - t0
    if keep is not None:
        keep.append(model)
    return seconds


def trainer_family(data: str, model_name: str, kw: dict, steps: int, cpu: bool) -> tuple[float, float]:
    """Train with train.model; return its training loop's wall (or process CPU) seconds and the rest of the call's.

    The rest is the fixed cost of a run: building the model and optimiser, reading the data,
    evaluating on the valid and test splits, saving the model and its input example.
    """
    clock = time.process_time if cpu else time.perf_counter
    with tempfile.TemporaryDirectory() as work:
        t0 = clock()
        out = get("train.model")(
            Context(Path(work)), data=data, model=model_name, steps=steps, checkpoint_every=0, eval_every=0, **kw
        )
        total = clock() - t0
    loop = out["summary"]["cpu_seconds" if cpu else "seconds"]
    return loop, total - loop


def families_table(args) -> list[dict]:
    """Trainer / bare-loop throughput for every family, interleaved repeats, best and median."""
    cpu = args.clock == "cpu"
    clock = time.process_time if cpu else time.perf_counter
    only = set(args.only.split(",")) if args.only else None
    rows = []
    with tempfile.TemporaryDirectory() as root:
        made: dict = {}
        for label, spec, model_name, kw in TRANSLATION_FAMILIES if args.translation else FAMILIES:
            if only and label not in only:
                continue
            data = _family_data(Path(root), spec, made, args.data_dir)
            trainer_family(data, model_name, kw, 5, cpu)  # warm-up: imports, allocator, first-call paths
            bare, ours, fixed = [], [], []
            for _ in range(args.repeats):  # interleaved, so drift in machine load hits both alike
                bare.append(bare_family_loop(data, model_name, kw, args.steps, clock))
                loop, rest = trainer_family(data, model_name, kw, args.steps, cpu)
                ours.append(loop)
                fixed.append(rest)
            rows.append(
                {
                    "family": label,
                    "model": model_name,
                    "steps": args.steps,
                    "bare_ms_per_step": round(1000 * min(bare) / args.steps, 2),
                    "trainer_ms_per_step": round(1000 * min(ours) / args.steps, 2),
                    "ratio_best": round(min(bare) / min(ours), 3),
                    "ratio_median": round(statistics.median(bare) / statistics.median(ours), 3),
                    "fixed_s": round(min(fixed), 2),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def print_table(rows: list[dict], args) -> None:
    print(
        f"\n{args.steps} steps, best / median of {args.repeats} interleaved repeats, {args.clock} clock, "
        f"{args.threads} torch thread(s), torch {torch.__version__}, load {os.getloadavg()[0]:.2f}"
    )
    print("| family | model | bare ms/step | trainer ms/step | trainer / bare loop (best / median) | fixed s per run |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['family']} | {r['model']} | {r['bare_ms_per_step']} | {r['trainer_ms_per_step']} | "
            f"{r['ratio_best']:.2f} / {r['ratio_median']:.2f} | {r['fixed_s']} |"
        )
    worst = min(rows, key=lambda r: r["ratio_best"]) if rows else None
    if worst is not None:
        verdict = "meets" if worst["ratio_best"] >= 0.95 else "misses"
        print(f"lowest: {worst['family']} at {worst['ratio_best']:.2f}x the bare loop ({verdict} the 0.95 target)")


def _subclasses(cls) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="default: lstm-small; seq2seq-small with --projection")
    ap.add_argument("--lag", type=int, default=30)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--checkpoint-every", type=int, default=50)
    ap.add_argument("--translation", action="store_true", help="old vs new translation path (see above)")
    ap.add_argument("--projection", action="store_true", help="output layer on scored positions vs all (see above)")
    ap.add_argument("--overrides", default="", help="model overrides as JSON (--projection)")
    ap.add_argument("--vocab", type=int, default=8000, help="BPE vocabulary (--projection)")
    ap.add_argument("--max-tokens", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=8000)
    ap.add_argument("--families", action="store_true", help="every family at its quick-profile size (see above)")
    ap.add_argument("--only", default="", help="comma-separated family labels (--families)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall", help="wall clock or process CPU time")
    ap.add_argument("--data-dir", default=os.environ.get("BOTTLENECKS_DATA", ""), help="folder holding multi30k/")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    args.model = args.model or ("seq2seq-small" if args.projection else "lstm-small")
    if args.families:
        print_table(families_table(args), args)
        return
    if args.translation:
        print(json.dumps(translation_ratio(args), indent=2))
        return
    if args.projection:
        print(json.dumps(projection_ratio(args), indent=2))
        return
    with tempfile.TemporaryDirectory() as root:
        data = get("data.delayed_recall")(Context(Path(root) / "data"), lag=args.lag, n_train=4096)["dataset"]
        bare, ours, ckpt = [], [], []
        run = (data, args.model, args.steps, args.batch_size, 3e-3)
        trainer(*run, checkpoint_every=0)  # warm-up: imports, allocator, thread pool
        for _ in range(args.repeats):  # interleaved, so drift in machine load hits all three alike
            bare.append(bare_loop(*run))
            ours.append(trainer(*run, checkpoint_every=0))
            ckpt.append(trainer(*run, checkpoint_every=args.checkpoint_every))
        save_ms, size = checkpoint_cost(args.model, data)
    n_ckpt = (args.steps - 1) // args.checkpoint_every + 1  # periodic ones plus the final state
    result = {
        "model": args.model,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "torch": torch.__version__,
        "device": "cpu",
        "bare_s": min(bare),
        "trainer_s": min(ours),
        "trainer_with_checkpoints_s": min(ckpt),
        "checkpoints": n_ckpt,
        "bare_median_s": statistics.median(bare),
        "trainer_median_s": statistics.median(ours),
        "trainer_with_checkpoints_median_s": statistics.median(ckpt),
    }
    result["throughput_ratio"] = result["bare_s"] / result["trainer_s"]
    result["throughput_ratio_median"] = result["bare_median_s"] / result["trainer_median_s"]
    result["checkpoint_ms"] = 1000 * (result["trainer_with_checkpoints_s"] - result["trainer_s"]) / n_ckpt
    result["checkpoint_overhead"] = result["trainer_with_checkpoints_s"] / result["trainer_s"] - 1
    result["checkpoint_save_ms"] = save_ms  # one write timed directly (the difference above is noisier)
    result["checkpoint_bytes"] = size
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}, indent=2))


if __name__ == "__main__":
    main()
