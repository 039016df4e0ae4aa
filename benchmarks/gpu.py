"""Benchmark the full profile's training steps on one accelerator: seconds a step, tokens/s, MFU, op counts.

Run: python benchmarks/gpu.py [--tiny] [--steps 10] [--peak-tflops 989] [--out figures.json]

Needs only torch and this repository's model and trainer code (no prefect, mlflow, datasets or
pydantic: the GPU host may have none), which it imports without the component registry. It prints
the device, dtype and versions, then:
  - Transformer-base: the profile's real step, 8 accumulated micro-batches of 3,125 source and 3,125
    target tokens (97 pairs of 32 + 32), each loss weighted by its tokens, then Adam (0.9/0.98, eps
    1e-9, fused on CUDA), no clipping, label smoothing 0.1, bf16 autocast on CUDA; and the same 25k
    tokens in as few micro-batches as the device's memory allows (``accumulate_auto``: the smallest
    of 1, 2, 4, 8 whose peak memory, extrapolated from one measured micro-batch, stays under 80% of
    the device's), stated with the memory figures it was chosen from;
  - RNNsearch-50 and RNNencdec-50 (37k vocabularies): the profile's step, 80 sentence pairs of 40 + 40
    tokens, Adadelta (rho 0.95, eps 1e-6), clip norm 1, fp32 + TF32 on CUDA; and the `mt` step's
    models with the same recipe and batch: seq2seq (620/1000 GRU, final state only), Luong dot
    (620/1000) and Sutskever's 4 x 1000 LSTM (embeddings 620, the shared overrides);
  - each step eager and compiled (``compiled``): the micro-batch's forward + loss through
    ``torch.compile`` in the mode ``train.model``'s ``compile: null`` picks on the device
    (``components/train/compiled.py``: on CUDA, CUDA graphs for the recurrent models and the default
    mode for the Transformer; ``default`` on a CPU), with its step time, the first call's compile
    time and the speed-up;
  - per step: ATen ops dispatched and (on CUDA) kernels run and launch calls made (a replayed CUDA
    graph is one launch for its kernels), counted by torch.profiler on one step: the host cost of
    eager mode is about one dispatch per op;
  - beam-4 decoding (length penalty 0.6, at most source + 50) of 3,003 newstest2014-sized sentences
    with and without the Transformer's key/value cache (untrained: an upper bound);
  - forward + backward time per sequence of one GRU layer vs one self-attention layer at T=512-4096.
MFU = model FLOPs / (seconds x peak): 6 FLOPs per matmul weight per token (forward + backward)
plus 12 T d per token for each attention (QK^T and AV). Peaks are dense figures per device name,
or --peak-tflops. Every figure carries the device's name. ``--tiny`` shrinks every model and batch
to check the script on a CPU in seconds; ``--compiled`` names the steps to compile (all, none or a
comma list of keys) and ``--compile-backend`` the backend (``aot_eager`` traces without generating
code: a quick wiring check);
``--count-ops`` counts the full-size models' ops per step on any device at a small batch (the count
does not depend on the batch) and skips the timings.
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
from components.train.compiled import resolve  # noqa: E402
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
    """Weights that multiply every token: Linear, recurrent and cell matrices (embedding lookups excluded)."""
    n = 0
    for m in module.modules():
        if isinstance(m, nn.Linear):
            n += m.weight.numel()
        elif not isinstance(m, nn.Embedding):  # nn.GRU's weight_ih_l0, a hand-written cell's weight_hh
            n += sum(
                p.numel() for name, p in m.named_parameters(recurse=False) if name.startswith("weight") and p.dim() == 2
            )
    return n


def transformer_flops(model, B: int, S: int, T: int) -> float:
    cfg = model.config
    enc, dec = matmul_weights(model.encoder), matmul_weights(model.decoder) + model.generator.weight.numel()
    attn = 12 * cfg.d_model * (cfg.n_encoder_layers * S * S + cfg.n_decoder_layers * (T * T / 2 + T * S))
    return B * (6 * (enc * S + dec * T) + attn)


def rnn_flops(model, B: int, S: int, T: int) -> float:
    """RNNsearch (attention over S positions each target step) or RNNencdec (a fixed context)."""
    enc = matmul_weights(model.encoder)
    dec = matmul_weights(model) - enc
    attn = 6 * 2 * model.config.attention_dim * S * T if hasattr(model, "attn") else 0
    return B * (6 * (enc * S + dec * T) + attn)


def batches(model, device: str, shapes: list[tuple[int, int, int]], seed: int = 0):
    """Random (src, lengths, tgt) micro-batches of the given (B, S, T) shapes."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for B, S, T in shapes:
        src = torch.randint(4, model.config.src_vocab_size, (B, S), generator=g).to(device)
        tgt = torch.randint(4, model.config.tgt_vocab_size, (B, T + 1), generator=g).to(device)
        out.append((src, torch.full((B,), S, dtype=torch.long), tgt))
    return out


def make_step(model, device: str, recipe: dict, micro: list, compiled: dict | None = None):
    """One optimiser step as train.model takes it: every micro-batch's loss weighted by its target tokens.

    ``compiled`` ({"mode", "backend"}): each micro-batch's forward + loss runs through ``torch.compile``.
    """
    precision = choose(model, device, bf16=recipe.get("bf16", False) and device.startswith("cuda"))
    opt = make_optimizer(
        model,
        recipe["optimizer"],
        recipe["lr"],
        0.0,
        tuple(recipe.get("betas", (0.9, 0.999))),
        0.0,
        fused=device.startswith("cuda") and recipe["optimizer"].startswith("adam"),
        eps=recipe.get("eps"),
        rho=recipe.get("rho", 0.95),
    )
    V = model.config.tgt_vocab_size
    total = sum(t.shape[0] * (t.shape[1] - 1) for _, _, t in micro)

    def forward_loss(src, lengths, tgt):
        logits, _ = model(src, lengths, tgt[:, :-1])
        return F.cross_entropy(
            logits.reshape(-1, V).float(), tgt[:, 1:].reshape(-1), label_smoothing=recipe.get("ls", 0.0)
        )

    graphs = bool(compiled) and compiled["mode"] == "reduce-overhead" and device.startswith("cuda")
    if compiled:
        mode = None if compiled["mode"] == "default" else compiled["mode"]
        forward_loss = torch.compile(forward_loss, mode=mode, backend=compiled["backend"])

    def step():
        opt.zero_grad(set_to_none=True)
        for src, lengths, tgt in micro:
            if graphs:  # the previous replay's outputs are no longer read
                torch.compiler.cudagraph_mark_step_begin()
            with autocast(device, precision):
                loss = forward_loss(src, lengths, tgt)
            (loss * (tgt.shape[0] * (tgt.shape[1] - 1) / total)).backward()
        if recipe.get("clip"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["clip"])
        opt.step()
        return loss

    return step, precision


def time_step(model, device: str, recipe: dict, shapes: list, steps: int, warmup: int, compiled=None) -> dict:
    """Median seconds of the whole accumulated step, and its tokens (both sides) per second; compiled,
    also the first step's seconds (compiling; CUDA graphs are recorded in the warm-up steps after it)."""
    model.train()
    step, precision = make_step(model, device, recipe, batches(model, device, shapes), compiled)
    times, first = [], None
    for i in range(warmup + steps):
        sync(device)
        t0 = time.perf_counter()
        loss = step()
        sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
        elif i == 0:
            first = time.perf_counter() - t0
    sec = statistics.median(times)
    src_tokens, tgt_tokens = sum(B * S for B, S, _ in shapes), sum(B * T for B, _, T in shapes)
    return {
        "precision": precision,
        "micro_batches": [list(x) for x in shapes],
        "tokens_per_step": {"source": src_tokens, "target": tgt_tokens},
        "step_s": round(sec, 5),
        "tokens_per_s": round((src_tokens + tgt_tokens) / sec),
        "loss": round(float(loss.detach()), 3),
        **(
            {"mode": compiled["mode"], "backend": compiled["backend"], "first_step_s": round(first, 3)}
            if compiled
            else {}
        ),
    }


LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch")


def count_ops(model, device: str, recipe: dict, shapes: list, compiled=None) -> dict:
    """ATen ops (leaf calls: eager, each launches about one kernel), CUDA kernels run and the host's
    launch calls (a replayed CUDA graph is one ``cudaGraphLaunch`` for all its kernels) in one step."""
    from torch.profiler import ProfilerActivity, profile

    model.train()
    step, _ = make_step(model, device, recipe, batches(model, device, shapes), compiled)
    for _ in range(3 if compiled else 1):  # optimiser state (and compiled graphs) exist before counting
        step()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with profile(activities=acts) as prof:
        step()
        sync(device)
    events = prof.events()
    leaf = sum(1 for e in events if e.name.startswith("aten::") and not e.cpu_children)
    kernels = sum(1 for e in events if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA)
    launches = sum(1 for e in events if e.name in LAUNCHES)
    cuda = device.startswith("cuda")
    return {
        "aten_leaf_ops": leaf,
        "cuda_kernels": kernels if cuda else None,
        "cuda_launches": launches if cuda else None,
    }


def choose_accumulation(model, device: str, recipe: dict, total_tokens: int, length: int, fraction: float = 0.8):
    """The fewest micro-batches (1, 2, 4, 8) for ``total_tokens`` a side whose extrapolated peak fits the device."""
    if not device.startswith("cuda"):
        return {"accumulate": None, "why": "not a CUDA device: the profile's accumulation stands"}
    capacity = torch.cuda.get_device_properties(device).total_memory
    B = max(1, total_tokens // 8 // length)
    model.train()
    step, _ = make_step(model, device, recipe, batches(model, device, [(B, length, length)]))
    step()
    sync(device)
    static = torch.cuda.memory_allocated(device)  # weights, gradients, optimiser state
    torch.cuda.reset_peak_memory_stats(device)
    step()
    sync(device)
    per_token = max(torch.cuda.max_memory_allocated(device) - static, 0) / (B * length)
    for k in (1, 2, 4, 8):
        peak = static + per_token * total_tokens / k
        if peak <= fraction * capacity:
            break
    return {
        "accumulate": k,
        "device_memory_gib": round(capacity / 2**30, 1),
        "static_gib": round(static / 2**30, 2),
        "activation_mib_per_1k_tokens": round(per_token * 1000 / 2**20, 1),
        "predicted_peak_gib": round(peak / 2**30, 1),
        "why": f"the fewest micro-batches whose extrapolated peak stays under {fraction:.0%} of device memory",
    }


TRANSFORMER = {"optimizer": "adam", "lr": 7e-4, "betas": (0.9, 0.98), "eps": 1e-9, "ls": 0.1, "bf16": True}
RNN = {"optimizer": "adadelta", "lr": 1.0, "eps": 1e-6, "rho": 0.95, "clip": 1.0}


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
        beam_search(model, src, L, 4, int(L.max()) + 50, 2, 3, 0.6)  # the profile's limit: source + 50
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


def models(tiny: bool) -> tuple[nn.Module, dict[str, nn.Module]]:
    """Transformer-base and the profile's recurrent models (37k vocabularies), or toy versions of them."""
    vocab = {"src_vocab_size": 64, "tgt_vocab_size": 64} if tiny else {"src_vocab_size": 37000, "tgt_vocab_size": 37000}
    if tiny:
        tr = build("transformer-tiny", share_embeddings=True, **vocab)
        paper, mt = (
            {"rnnsearch_50": "rnnsearch-tiny", "rnnencdec_50": "rnnencdec-tiny"},
            {"hidden_size": 16, "embed_dim": 8},
        )
    else:
        tr = build("transformer-base")
        paper, mt = (
            {"rnnsearch_50": "rnnsearch-50", "rnnencdec_50": "rnnencdec-50"},
            {"hidden_size": 1000, "embed_dim": 620},
        )
    rnns = {key: build(name, **vocab) for key, name in paper.items()}
    return tr, rnns | {key: build(name, **vocab, **mt) for key, name in MT.items()}


# the full profile's `mt` step: its matrix, with overrides {hidden_size: 1000, embed_dim: 620}
MT = {"seq2seq_1000": "seq2seq-small", "luong_dot_1000": "luong-dot-small", "sutskever_4x1000": "sutskever-4x1000"}


def compile_setting(key: str, model: nn.Module, device: str, args) -> dict | None:
    """The mode ``compile: null`` picks for this model on ``device`` (``default`` on a CPU), or None when
    ``--compiled`` leaves the step out."""
    if args.compiled == "none" or (args.compiled != "all" and key not in args.compiled.split(",")):
        return None
    mode = resolve(None, device, model) or "default"
    return {"mode": mode, "backend": args.compile_backend}


def measure(runs: list, dev: str, name: str, args, warmup: int, peak) -> dict:
    """Each step eager and compiled: seconds, tokens/s, FLOPs, MFU and ops, with the device's name."""
    fig = {}
    for key, model, recipe, shapes, flops in runs:
        total = sum(flops(model, *shape) for shape in shapes)
        setting = compile_setting(key, model, dev, args)
        r = {"device": name}
        for compiled in [None] + ([setting] if setting else []):
            t = time_step(model, dev, recipe, shapes, args.steps, warmup + (2 if compiled else 0), compiled)
            p = peak(t["precision"])
            t["model_tflop_per_step"] = round(total / 1e12, 3)
            t["model_tflops_per_s"] = round(total / t["step_s"] / 1e12, 3)
            t["mfu"] = round(t["model_tflops_per_s"] * 1e12 / p, 4) if p else None
            t.update(count_ops(model, dev, recipe, shapes, compiled))
            if compiled:
                r["compiled"] = t | {"device": name, "speedup": round(r["step_s"] / t["step_s"], 2)}
            else:
                r.update(t)
        fig[key] = r
        print(key, json.dumps(r), flush=True)
    return fig


def profile_runs(tr, rnns: dict, dev: str, tiny: bool, fig: dict) -> list:
    """The steps to time: (key, model, recipe, micro-batch shapes, FLOP formula)."""
    L, acc = (12, 2) if tiny else (32, 8)
    tr_shape = (3125 // L if not tiny else 4, L, L)  # 3,125 tokens a side x 8 for the Transformer
    rnn_shape = (8, 10, 10) if tiny else (80, 40, 40)  # 80 sentences of 40 + 40 tokens for the RNNs
    runs = [("transformer_base_accumulate_profile", tr, TRANSFORMER, [tr_shape] * acc, transformer_flops)]
    auto = choose_accumulation(tr, dev, TRANSFORMER, tr_shape[0] * L * acc, L)
    fig["accumulate_auto"] = auto
    if auto["accumulate"] and auto["accumulate"] != acc:
        k = auto["accumulate"]
        shape = (tr_shape[0] * acc // k, L, L)
        runs.append(("transformer_base_accumulate_auto", tr, TRANSFORMER, [shape] * k, transformer_flops))
    return runs + [(key, model, RNN, [rnn_shape], rnn_flops) for key, model in rnns.items()]


def count_only(tr, rnns: dict, dev: str, fig: dict) -> None:
    """``--count-ops``: each full-size step's ops at a small batch (the count does not depend on it)."""
    small = (2, 8, 8)
    fig["ops_per_step"] = {"transformer_base_micro_batch": count_ops(tr, dev, TRANSFORMER, [small])}
    fig["ops_per_step"]["transformer_base_step_accumulate_8"] = count_ops(tr, dev, TRANSFORMER, [small] * 8)
    for key, model in rnns.items():
        fig["ops_per_step"][f"{key}_T40"] = count_ops(model, dev, RNN, [(2, 40, 40)])


def decode_and_layers(tr, dev: str, tiny: bool, fig: dict) -> None:
    """Beam-4 decoding with and without the cache, and GRU vs self-attention per sequence."""
    lengths, d, n_sent = ([64, 128], 32, 16) if tiny else ([512, 1024, 2048, 4096], 512, 3003)
    tr.eval()
    mean_len, n_plain = (6 if tiny else 31), min(n_sent, 256)
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


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes: check the script on a CPU")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--peak-tflops", type=float, default=None, help="override the device's dense peak")
    ap.add_argument("--count-ops", action="store_true", help="only count each full-size step's ops (small batch)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: 1 with --tiny)")
    ap.add_argument("--compiled", default="all", help="steps to time compiled too: all, none or keys, comma-separated")
    ap.add_argument("--compile-backend", default="inductor", help="torch.compile backend (aot_eager: no codegen)")
    ap.add_argument("--out", help="also write the figures to this JSON file")
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    dev = args.device
    if args.threads or args.tiny:
        torch.set_num_threads(args.threads or 1)
    name = torch.cuda.get_device_name(dev) if dev.startswith("cuda") else platform.processor() or platform.machine()
    fig: dict = {
        "device": name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if dev.startswith("cuda") else None,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "tiny": args.tiny,
    }

    def peak(precision: str) -> float | None:
        if args.peak_tflops:
            return args.peak_tflops * 1e12
        return next((v * 1e12 for (frag, p), v in PEAKS.items() if frag in name and p == precision), None)

    with tf32(dev.startswith("cuda")):
        tr, rnns = models(args.tiny)
        tr, rnns = tr.to(dev), {k: m.to(dev) for k, m in rnns.items()}
        if args.count_ops:
            count_only(tr, rnns, dev, fig)
        else:
            runs = profile_runs(tr, rnns, dev, args.tiny, fig)
            fig.update(measure(runs, dev, name, args, 1 if args.tiny else 2, peak))
            decode_and_layers(tr, dev, args.tiny, fig)
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(FORBIDDEN))
    fig["forbidden_imports"] = loaded
    print(json.dumps(fig, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(fig, indent=2) + "\n")
    if loaded:
        sys.exit(f"imported {loaded}: the GPU host has none of these")


if __name__ == "__main__":
    main()
