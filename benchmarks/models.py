"""Model zoo throughput: forward+backward tokens/s per family, and our code against PyTorch's own.

Reference pairs (same shapes, same threads, interleaved repeats, medians):
- production LSTM path (``Recurrent``, impl="fused") vs a bare ``nn.LSTM``: must be within 10%;
- our LSTM cell loop (``impl="loop"``, the probes' per-step path) vs ``nn.LSTM``;
- multi-head attention fast path vs ``nn.MultiheadAttention``: must be within 10%;
- the explicit ``attention()`` free function vs ``F.scaled_dot_product_attention``.

    python benchmarks/models.py --lengths 32 128 512 --batch 8 --dim 128 --threads 1

On a shared machine read the ratios against the control row (the reference against itself).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.models import build  # noqa: E402
from components.models.attention import MultiHeadAttention, attention  # noqa: E402
from components.models.recurrent import Recurrent  # noqa: E402


def seconds(fn, repeats: int, warmup: int = 2) -> float:
    """Median wall time of fn() (forward + backward) over ``repeats`` after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ratio(ours, ref, repeats: int) -> float:
    """Median time of ours / median time of ref, alternating calls so other load hits both alike."""
    for _ in range(2):
        ours(), ref()
    a, b = [], []
    for _ in range(repeats):
        for fn, times in ((ours, a), (ref, b)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(a) / statistics.median(b)


def fwd_bwd(model, *inputs, **kwargs):
    """Return a closure running forward and backward with fresh gradients."""

    def run():
        model.zero_grad(set_to_none=True)
        out = model(*inputs, **kwargs)
        out = out[0] if isinstance(out, tuple) else out
        out.float().pow(2).mean().backward()

    return run


def families(T: int, B: int, d: int) -> dict[str, tuple]:
    """Name -> (model, inputs, tokens per call) at length T."""
    x = torch.randint(1, 32, (B, T))
    seq = dict(vocab_size=32, num_classes=8, embed_dim=d, hidden_size=d)
    tr = dict(vocab_size=32, num_classes=8, d_model=d, n_heads=4, d_ff=4 * d, num_layers=2, max_len=max(T, 8))
    s2s = dict(src_vocab_size=32, tgt_vocab_size=32, embed_dim=d, hidden_size=d)
    return {
        "rnn (nn.RNN)": (build("rnn-small", **seq), (x,), B * T),
        "lstm (nn.LSTM)": (build("lstm-small", **seq), (x,), B * T),
        "gru (nn.GRU)": (build("gru-small", **seq), (x,), B * T),
        "lstm1997 (cell loop)": (build("lstm1997-small", **seq), (x,), B * T),
        "conv1d (4 dilated layers)": (build("conv1d-small", vocab_size=32, embed_dim=d, channels=d), (x,), B * T),
        "transformer encoder (SDPA)": (build("transformer-encoder-small", **tr), (x,), B * T),
        "transformer encoder (naive)": (build("transformer-encoder-small", naive=True, **tr), (x,), B * T),
        "seq2seq GRU, final state": (build("seq2seq-small", **s2s), (x, None, x), 2 * B * T),
        "Luong dot attention": (build("luong-dot-small", **s2s), (x, None, x), 2 * B * T),
        "Bahdanau RNNsearch": (build("bahdanau-small", **s2s), (x, None, x), 2 * B * T),
    }


def references(T: int, B: int, d: int) -> dict[str, tuple]:
    """Pair name -> (ours, reference) closures at length T."""
    torch.manual_seed(0)
    x = torch.randn(B, T, d, requires_grad=True)
    ref_lstm = nn.LSTM(d, d, batch_first=True)
    fused, loop = Recurrent("lstm", d, d, impl="fused"), Recurrent("lstm", d, d, impl="loop")
    ref_mha, mha = nn.MultiheadAttention(d, 4, batch_first=True), MultiHeadAttention(d, 4)
    q = torch.randn(B, 4, T, d // 4, requires_grad=True)
    own_attn = lambda: attention(q, q, q)[0].pow(2).mean().backward()  # noqa: E731
    sdpa = lambda: F.scaled_dot_product_attention(q, q, q).pow(2).mean().backward()  # noqa: E731
    return {
        "production LSTM (Recurrent fused) vs nn.LSTM": (fwd_bwd(fused, x), fwd_bwd(ref_lstm, x)),
        "own LSTM cell loop vs nn.LSTM": (fwd_bwd(loop, x), fwd_bwd(ref_lstm, x)),
        "MultiHeadAttention (SDPA path) vs nn.MultiheadAttention": (
            fwd_bwd(mha, x, x, x),
            fwd_bwd(ref_mha, x, x, x, need_weights=False),
        ),
        "attention() explicit softmax(QK^T)V vs SDPA": (own_attn, sdpa),
        "control: nn.LSTM vs itself (noise floor)": (fwd_bwd(ref_lstm, x), fwd_bwd(ref_lstm, x)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[32, 128, 512])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per family and length")
    ap.add_argument("--only", choices=["families", "ratios"], help="run one of the two tables")
    ap.add_argument("--ratio-repeats", type=int, default=30, help="alternating call pairs per reference ratio")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}, dim {args.dim}, "
        f"fp32 CPU, median of {args.repeats} after 2 warm-up calls\n"
    )
    cols = " | ".join(f"T={t}" for t in args.lengths)
    if args.only != "ratios":
        print_families(args, cols)
    if args.only != "families":
        print_ratios(args, cols)


def print_families(args, cols: str) -> None:
    print(f"| forward+backward tokens/s | {cols} |\n|---|" + "---:|" * len(args.lengths))
    rows: dict[str, list[str]] = {}
    for T in args.lengths:
        for name, (model, inputs, tokens) in families(T, args.batch, args.dim).items():
            rows.setdefault(name, []).append(f"{tokens / seconds(fwd_bwd(model, *inputs), args.repeats):,.0f}")
    for name, vals in rows.items():
        print(f"| {name} | {' | '.join(vals)} |")


def print_ratios(args, cols: str) -> None:
    print(
        f"\n| ours / reference time, alternating calls, median of {args.ratio_repeats} (production paths must be "
        f"< 1.10) | {cols} |\n|---|" + "---:|" * len(args.lengths)
    )
    rows = {}
    for T in args.lengths:
        for name, (ours, ref) in references(T, args.batch, args.dim).items():
            rows.setdefault(name, []).append(f"{ratio(ours, ref, args.ratio_repeats):.2f}")
    for name, vals in rows.items():
        print(f"| {name} | {' | '.join(vals)} |")


if __name__ == "__main__":
    main()
