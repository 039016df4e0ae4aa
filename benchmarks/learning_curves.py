"""What the default learning curve costs: train.model with ``eval_every: null`` against ``0``.

Usage: python benchmarks/learning_curves.py [--only lstm,seq2seq,transformer] [--steps 1000] [--threads 1]
       [--eval-batches N] [--eval-bleu N]

Trains a classification task (delayed recall, lag 50, lstm-small), a recurrent seq2seq and a
Transformer on toy translation, each at its quick-profile data and size (``benchmarks/train.py``'s
``FAMILIES``), once with the default evaluation (valid/* at 5 evenly spaced steps and the end, BLEU
on ``--eval-bleu`` valid sentences) and once with ``eval_every: 0`` (only the summary's evaluation
at the end, which both runs do). Prints per configuration, measured inside the default run, the
summary's ``eval_seconds`` as a share of its ``seconds`` (the loop, evaluations included), and the
wall-time ratio of the two runs (noisier on a shared machine: other processes add to either).
Target: a share of at most 0.10.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train import FAMILIES, _family_data  # noqa: E402  (the quick-profile families and their data)

from components import Context, get  # noqa: E402


def run_once(data: str, model: str, kw: dict, eval_every: int | None) -> tuple[dict, float]:
    """Train in a fresh work dir; return the summary and the component's wall seconds."""
    with tempfile.TemporaryDirectory() as work:
        t0 = time.perf_counter()
        out = get("train.model")(Context(Path(work)), data=data, model=model, eval_every=eval_every, **kw)
        return out["summary"], time.perf_counter() - t0


def measure(args) -> list[dict]:
    rows, made = [], {}
    with tempfile.TemporaryDirectory() as root:
        for label, spec, model, kw in FAMILIES:
            if label not in args.only:
                continue
            data = _family_data(Path(root), spec, made)
            kw = {**kw, "steps": args.steps, "checkpoint_every": 0}
            kw |= {
                k: v for k, v in (("eval_batches", args.eval_batches), ("eval_bleu", args.eval_bleu)) if v is not None
            }
            on, wall_on = run_once(data, model, kw, None)
            off, wall_off = run_once(data, model, kw, 0)
            rows.append(
                {
                    "config": label,
                    "model": model,
                    "steps": args.steps,
                    "loop_s": on["seconds"],
                    "eval_s": on["eval_seconds"],
                    "eval_share": round(on["eval_seconds"] / on["seconds"], 3),
                    "wall_on_s": round(wall_on, 1),
                    "wall_off_s": round(wall_off, 1),
                    "wall_ratio": round(wall_on / wall_off, 3),
                    "same_valid_loss": on["valid_loss"] == off["valid_loss"],
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default="lstm,seq2seq,transformer", help="labels from benchmarks/train.py FAMILIES")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--eval-batches", type=int, help="train.model's eval_batches (default: its default)")
    p.add_argument("--eval-bleu", type=int, help="train.model's eval_bleu (default: its default)")
    args = p.parse_args()
    args.only = args.only.split(",")
    torch.set_num_threads(args.threads)
    print(f"load average {os.getloadavg()}, torch {torch.__version__}, {args.threads} thread(s)", flush=True)
    rows = measure(args)
    print(f"\n{'config':<12} {'eval share':>10} {'wall on/off':>12}")
    for r in rows:
        print(f"{r['config']:<12} {r['eval_share']:>10.3f} {r['wall_ratio']:>12.3f}")


if __name__ == "__main__":
    main()
