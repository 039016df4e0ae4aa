"""Benchmark the paper-scale models on one accelerator: training tokens/s and MFU, beam decoding, RNN vs attention.

Run: python benchmarks/gpu.py [--tiny] [--steps 20] [--peak-tflops 989] [--out figures.json]

Needs only torch and this repository's model and trainer code (no prefect, mlflow, datasets or
pydantic: the GPU host has none), which it imports without the component registry. It prints the
device, dtype and versions, then:
  - Transformer-base (6+6, d_model 512, 37k shared vocabulary) training steps under the trainer's
    precision choice (bf16 autocast on CUDA), fused Adam, label smoothing 0.1: tokens/s and MFU;
  - RNNsearch-1000 (Bahdanau 2015) training steps in the trainer's precision (fp32 + TF32 on CUDA);
  - beam-4 decoding (length penalty 0.6) of newstest2014-sized input (3,003 sentences, lengths
    drawn around its ~31 BPE tokens), with and without the key/value cache; an untrained model
    rarely stops early, so this is an upper bound;
  - forward + backward time per sequence of one GRU layer vs one self-attention layer at T=512-4096.
MFU = model FLOPs / (seconds x peak): 6 FLOPs per matmul weight per token (forward + backward)
plus 12 T d per token for each attention (QK^T and AV). Peaks are dense figures per device name,
or --peak-tflops. ``--tiny`` shrinks everything to check the script on a CPU in seconds.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
for _pkg in ("components", "components.train"):
    # the package __init__ files load the component registry (pydantic) and the trainer component;
    # an empty package module lets the model and trainer modules import on a torch-only host
    _mod = types.ModuleType(_pkg)
    _mod.__path__ = [str(ROOT.joinpath(*_pkg.split(".")))]
    sys.modules.setdefault(_pkg, _mod)
sys.path.insert(0, str(ROOT))

from components.models import build  # noqa: E402
from components.models.decoding import beam_search  # noqa: E402
from components.train.optim import make_optimizer  # noqa: E402
from components.train.precision import autocast, choose, tf32  # noqa: E402

FORBIDDEN = ("prefect", "mlflow", "datasets", "pydantic", "tokenizers", "sacrebleu", "pandas")
# dense peak TFLOPS by (device name fragment, precision): NVIDIA data sheets (SXM parts)
PEAKS = {
    ("H200", "bf16"): 989,
    ("H100", "bf16"): 989,
    ("A100", "bf16"): 312,
    ("H200", "fp32+tf32"): 494,
    ("H100", "fp32+tf32"): 494,
    ("A100", "fp32+tf32"): 156,
}


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_weights(module: nn.Module) -> int:
    """Weights that multiply every token: Linear and recurrent matrices (embedding lookups excluded)."""
    n = 0
    for m in module.modules():
        if isinstance(m, nn.Linear):
            n += m.weight.numel()
        elif isinstance(m, (nn.RNNBase, nn.RNNCellBase)):
            n += sum(p.numel() for name, p in m.named_parameters() if "weight" in name)
    return n


def transformer_flops(model, B: int, S: int, T: int) -> float:
    cfg = model.config
    enc, dec = matmul_weights(model.encoder), matmul_weights(model.decoder) + model.generator.weight.numel()
    attn = 12 * cfg.d_model * (cfg.n_encoder_layers * S * S + cfg.n_decoder_layers * (T * T / 2 + T * S))
    return B * (6 * (enc * S + dec * T) + attn)


def rnnsearch_flops(model, B: int, S: int, T: int) -> float:
    enc = matmul_weights(model.encoder)
    dec = matmul_weights(model) - enc
    attn = 6 * 2 * model.config.attention_dim * S * T  # v^T tanh(W1 s + W2 h) over every source position
    return B * (6 * (enc * S + dec * T) + attn)


def train_steps(model, device: str, B: int, S: int, T: int, steps: int, warmup: int) -> dict:
    """Time trainer-like steps: precision choice, fused Adam on CUDA, label smoothing, clip, step."""
    precision = choose(model, device, bf16=device.startswith("cuda"))  # CPU bf16 autocast is slower than fp32
    opt = make_optimizer(model, "adam", 1e-4, 0.0, (0.9, 0.98), 0.0, fused=device.startswith("cuda"))
    V = model.config.tgt_vocab_size
    src = torch.randint(4, model.config.src_vocab_size, (B, S), device=device)
    tgt = torch.randint(4, V, (B, T + 1), device=device)
    lengths = torch.full((B,), S, dtype=torch.long)
    model.train()
    times = []
    for i in range(warmup + steps):
        sync(device)
        t0 = time.perf_counter()
        with autocast(device, precision):
            logits, _ = model(src, lengths, tgt[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, V).float(), tgt[:, 1:].reshape(-1), label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    sec = statistics.median(times)
    return {
        "precision": precision,
        "batch": [B, S, T],
        "step_s": round(sec, 5),
        "tokens_per_s": round(B * (S + T) / sec),
        "loss": round(float(loss.detach()), 3),
    }


def decode(model, device: str, n: int, batch: int, mean_len: int, cache: bool) -> float:
    """Seconds to beam-4 decode ``n`` sentences in length-sorted batches."""
    model.config.kv_cache = cache
    g = torch.Generator().manual_seed(0)
    lens = (torch.randn(n, generator=g) * mean_len / 2 + mean_len).clamp(3, 4 * mean_len).long().sort().values
    sync(device)
    t0 = time.perf_counter()
    for i in range(0, n, batch):
        L = lens[i : i + batch]
        src = torch.randint(4, model.config.src_vocab_size, (len(L), int(L.max())), device=device)
        beam_search(model, src, L, 4, int(L.max()) + 50, 2, 3, 0.6)
    sync(device)
    return time.perf_counter() - t0


def per_sequence(layer, device: str, T: int, d: int, batch: int, repeats: int) -> float:
    """Median forward + backward seconds per sequence of length T."""
    x = torch.randn(batch, T, d, device=device, requires_grad=True)
    times = []
    for i in range(repeats + 1):
        sync(device)
        t0 = time.perf_counter()
        out = layer(x)
        (out[0] if isinstance(out, tuple) else out).float().sum().backward()
        sync(device)
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) / batch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes: check the script on a CPU")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--peak-tflops", type=float, default=None, help="override the device's dense peak")
    ap.add_argument("--out", help="also write the figures to this JSON file")
    args = ap.parse_args()
    dev = args.device
    name = torch.cuda.get_device_name(dev) if dev.startswith("cuda") else platform.processor() or platform.machine()
    fig: dict = {
        "device": name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if dev.startswith("cuda") else None,
        "python": platform.python_version(),
        "tiny": args.tiny,
    }

    def peak(precision: str) -> float | None:
        if args.peak_tflops:
            return args.peak_tflops * 1e12
        return next((v * 1e12 for (frag, p), v in PEAKS.items() if frag in name and p == precision), None)

    if args.tiny:
        tr, rs = (
            build("transformer-tiny", src_vocab_size=64, tgt_vocab_size=64, share_embeddings=True),
            build("bahdanau-tiny", src_vocab_size=64, tgt_vocab_size=64),
        )
        shape_tr, shape_rs, lengths, d, n_sent = (8, 12, 12), (4, 10, 10), [64, 128], 32, 16
    else:  # 25k tokens a step as in the paper: 390 pairs of 32 + 32 tokens
        tr, rs = build("transformer-base"), build("rnnsearch-1000")
        shape_tr, shape_rs, lengths, d, n_sent = (390, 32, 32), (80, 30, 30), [512, 1024, 2048, 4096], 512, 3003
    warmup = 1 if args.tiny else 3
    with tf32(dev.startswith("cuda")):
        tr, rs = tr.to(dev), rs.to(dev)
        for key, model, flops in (("transformer_base", tr, transformer_flops), ("rnnsearch_1000", rs, rnnsearch_flops)):
            r = train_steps(model, dev, *shape_tr if model is tr else shape_rs, args.steps, warmup)
            p = peak(r["precision"])
            r["model_tflops_per_s"] = round(flops(model, *r["batch"]) / r["step_s"] / 1e12, 3)
            r["mfu"] = round(r["model_tflops_per_s"] * 1e12 / p, 4) if p else None
            fig[key] = r
        tr.eval()
        mean_len, n_plain = (6 if args.tiny else 31), min(n_sent, 256)
        fig["decode_beam4"] = {
            "sentences": n_sent,
            "cached_s": round(decode(tr, dev, n_sent, 128, mean_len, True), 3),
            "uncached_sentences": n_plain,
            "uncached_s": round(decode(tr, dev, n_plain, 128, mean_len, False), 3),
        }
        tr.config.kv_cache = True
        gru = nn.GRU(d, d, batch_first=True).to(dev)
        attn = build(
            "transformer-encoder-small",
            input_dim=d,
            d_model=d,
            n_heads=8 if d >= 64 else 2,
            d_ff=4 * d,
            num_layers=1,
            num_classes=2,
            head="many_to_many",
        ).encoder.to(dev)
        fig["per_sequence_ms"] = {}
        for T in lengths:
            with autocast(dev, "bf16" if dev.startswith("cuda") else "fp32"):
                a = per_sequence(lambda x: attn(x), dev, T, d, 8, 3)
            g = per_sequence(gru, dev, T, d, 8, 3)
            fig["per_sequence_ms"][T] = {"gru": round(g * 1e3, 3), "self_attention": round(a * 1e3, 3)}
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(FORBIDDEN))
    fig["forbidden_imports"] = loaded
    print(json.dumps(fig, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(fig, indent=2) + "\n")
    if loaded:
        sys.exit(f"imported {loaded}: the GPU host has none of these")


if __name__ == "__main__":
    main()
