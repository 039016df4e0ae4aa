"""Batched greedy and beam-search decoding for any encoder-decoder.

A model decodes through three methods: ``encode(src, src_lengths) -> memory``,
``init_state(memory) -> state`` and ``step(prev_tokens (B,), state, memory) -> (log-probs (B, V),
state, attn (B, T_src) or None)``. Memory and state are tensors (or tuples/dicts of them) with the
batch first, so beams are made and reordered by indexing dim 0.
Outputs exclude BOS, include EOS, and hold ``config.pad_id`` after it (EOS if the model has none).
``max_len`` is one limit for the batch or one per sentence (a (B,) tensor): a sentence that reaches
its own limit ends there, unended, whatever the others' limits.
``translate`` decodes lists of source ids with any model that has the methods, batched by length:
the trainer's learning curve and the probes' evaluations both decode with it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor

from components.data.batching import pad
from components.models.registry import ModelError


def index_batch(obj, idx: Tensor):
    """Index dim 0 of every tensor in a nested tuple/list/dict."""
    if obj is None:
        return None
    if isinstance(obj, Tensor):
        return obj.index_select(0, idx.to(obj.device))
    if isinstance(obj, (tuple, list)):
        return type(obj)(index_batch(o, idx) for o in obj)
    if isinstance(obj, dict):
        return {k: index_batch(v, idx) for k, v in obj.items()}
    return obj


def kept(x: Tensor, keep: Tensor | None) -> Tensor:
    """Rows of (B, T, H) at flat indices ``keep`` into B*T, as (N, H); all of x when keep is None.

    Teacher-forced training projects only the scored target positions onto the vocabulary: with
    a large vocabulary the output layer, its softmax and their gradients are most of a step, and
    padding is a third to a half of a random batch of sentences. Models that accept ``keep`` say so
    with ``projects_kept = True``.
    """
    if keep is None:
        return x
    return x.reshape(-1, x.shape[-1]).index_select(0, keep.to(x.device, non_blocking=True))


@contextmanager
def _inference(model):
    """Run without dropout or autograd; restore the model's mode after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def _fill(model, eos: int) -> int:
    pad = getattr(model.config, "pad_id", None)
    return eos if pad is None else pad


def _limits(max_len: int | Tensor, B: int, device, beam: int = 1) -> Tensor:
    """Each sentence's output limit as a (B,) long tensor on ``device``, checked."""
    if beam < 1:
        raise ModelError(f"beam must be >= 1, got {beam}")
    if isinstance(max_len, Tensor):
        if tuple(max_len.shape) != (B,):
            raise ModelError(f"max_len must be one limit or one per sentence ({B},), got {tuple(max_len.shape)}")
        limits = max_len.to(device=device, dtype=torch.long)
        low = int(limits.min()) if B else 1
    else:
        limits, low = torch.full((B,), int(max_len), dtype=torch.long, device=device), int(max_len)
    if low < 1:
        raise ModelError(f"max_len must be >= 1 (the longest output to generate), got {low}")
    return limits


# Stopping early needs the host to read "all finished?" from the device, which waits for the GPU;
# asking every SYNC_EVERY steps keeps the queue full (finished rows only append padding meanwhile).
SYNC_EVERY = 8


def greedy(model, src, src_lengths, max_len: int | Tensor, bos: int, eos: int) -> tuple[Tensor, Tensor | None]:
    """Pick the most likely token at every step; return tokens (B, T <= max_len) and attn (B, T, T_src)."""
    B = src.shape[0]
    limits = _limits(max_len, B, src.device)
    pad = _fill(model, eos)
    with _inference(model):
        memory = model.encode(src, src_lengths)
        state = model.init_state(memory)
        prev = torch.full((B,), bos, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        lengths = torch.zeros(B, dtype=torch.long, device=src.device)
        tokens, attns = [], []
        for i in range(int(limits.max()) if B else 0):
            logp, state, attn = model.step(prev, state, memory)
            tok = logp.argmax(-1).masked_fill(done, pad)
            tokens.append(tok)
            attns.append(attn)
            lengths += ~done
            done |= (tok == eos) | (limits <= i + 1)  # ended, or at its own limit (unended)
            prev = tok
            if (i + 1) % SYNC_EVERY == 0 and done.all():
                break
        T = int(lengths.max()) if B else 0  # the one sync: drop steps taken after every row had finished
    attn = torch.stack(attns[:T], 1) if T and attns[0] is not None else None
    return torch.stack(tokens, 1)[:, :T], attn


def length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """GNMT length penalty lp(Y) = ((5 + |Y|) / 6)^alpha (Wu 2016; alpha 0.6 in Vaswani 2017)."""
    return ((5.0 + lengths.float()) / 6.0) ** alpha


def _best_bound(scores: Tensor, length: int, limits: Tensor, alpha: float) -> Tensor:
    """The best normalised score any continuation of live hypotheses of ``length`` tokens can reach.

    Log-probabilities only fall as a hypothesis grows, so its log P stays at most ``scores``; it ends
    at a length in (length, limit], where ``scores / lp`` is largest at the largest lp there (lp grows
    with length for alpha > 0, shrinks for alpha < 0). ``limits``: each sentence's own (B,).
    """
    return scores / torch.clamp(length_penalty(limits, alpha), min=_lp(length + 1, alpha))


def _lp(length: int, alpha: float) -> float:
    return ((5.0 + length) / 6.0) ** alpha


class _Best:
    """The best finished hypothesis of each sentence: tokens (B, max_len), score and length (B,)."""

    def __init__(self, B: int, max_len: int, pad: int, device):
        self.pad = pad
        self.tokens = torch.full((B, max_len), pad, dtype=torch.long, device=device)
        self.score = torch.full((B,), float("-inf"), device=device)
        self.length = torch.zeros(B, dtype=torch.long, device=device)

    def offer(self, better: Tensor, hyp: Tensor, score: Tensor) -> None:
        """Replace the rows where ``better`` by hypotheses ``hyp`` (B, n) scored ``score`` (no host sync)."""
        n = hyp.shape[1]
        self.tokens[:, :n] = torch.where(better[:, None], hyp, self.tokens[:, :n])
        self.tokens[:, n:] = torch.where(better[:, None], self.pad, self.tokens[:, n:])
        self.score = torch.where(better, score, self.score)
        self.length = torch.where(better, n, self.length)


def beam_search(
    model, src, src_lengths, beam: int, max_len: int | Tensor, bos: int, eos: int, alpha: float = 0.6
) -> Tensor:
    """Beam search as fairseq and tensor2tensor do it; return the best hypothesis by log P / lp (B, T).

    Each sentence keeps ``beam`` live hypotheses (none ending in EOS) and a finished set. At every step
    an EOS extension that ranks among the step's ``beam`` best extensions (by log P, as fairseq) is
    scored with the length penalty at its own length and enters the finished set; the live hypotheses
    are the ``beam`` best non-EOS extensions, so a hypothesis that finishes frees its slot instead of
    occupying it. Only the best finished hypothesis is returned, so the set keeps its best. A sentence
    stops when no live hypothesis can beat that best (``_best_bound``, as tensor2tensor); at its limit
    (``max_len``, one for all or one per sentence) its live hypotheses count as finished, unended, at
    lp(limit). With a beam wide enough to prune nothing the result is the exact argmax of log P / lp
    over all outputs within the limit; with ``beam=1`` it is greedy decoding unless a later ending
    outscores greedy's. All B * beam hypotheses advance as one batch; the output is
    as long as its longest best hypothesis and holds the pad id after EOS.
    """
    pad, B, K, dev = _fill(model, eos), src.shape[0], beam, src.device
    limits = _limits(max_len, B, dev, beam)
    steps, ninf = (int(limits.max()) if B else 1), float("-inf")
    with _inference(model):
        memory = model.encode(src, src_lengths)
        memory = index_batch(memory, torch.arange(B, device=dev).repeat_interleave(K))  # (B*K, ...)
        state = model.init_state(memory)
        scores = torch.full((B, K), ninf, device=dev)
        scores[:, 0] = 0.0  # all beams start as one hypothesis
        prev = torch.full((B * K,), bos, dtype=torch.long, device=dev)
        tokens = torch.zeros(B * K, 0, dtype=torch.long, device=dev)
        best, done = _Best(B, steps, pad, dev), torch.zeros(B, dtype=torch.bool, device=dev)
        base = torch.arange(B, device=dev)[:, None] * K
        for i in range(steps):
            logp, state, _ = model.step(prev, state, memory)  # (B*K, V)
            logp = logp.float()
            V = logp.shape[-1]
            # finished: the EOS extension of every live hypothesis, at length i + 1
            cand = (scores.view(-1, 1) + logp).view(B, K * V)
            kth = cand.topk(K, -1).values[:, -1:]  # a hypothesis finishes when its EOS is among the K best (fairseq)
            eos_cand = cand.view(B, K, V)[:, :, eos]
            top_end, k_end = (torch.where(eos_cand >= kth, eos_cand, ninf) / _lp(i + 1, alpha)).max(-1)
            hyp = torch.cat([tokens[base[:, 0] + k_end], torch.full((B, 1), eos, dtype=torch.long, device=dev)], 1)
            best.offer((top_end > best.score) & ~done, hyp, top_end)  # rows that do not improve keep theirs
            # live: the K best extensions that do not end
            cand.view(B, K, V)[:, :, eos] = ninf
            top, idx = cand.topk(K, -1)  # (B, K)
            origin = (base + idx // V).view(-1)
            tok = (idx % V).view(-1)
            tokens = torch.cat([tokens[origin], tok[:, None]], 1)
            state, scores, prev = index_batch(state, origin), top, tok
            # at its own limit a sentence's live hypotheses end unfinished, at lp(limit)
            top_live, k_live = (scores / _lp(i + 1, alpha)).max(-1)
            best.offer((top_live > best.score) & (limits == i + 1) & ~done, tokens[base[:, 0] + k_live], top_live)
            bound = _best_bound(top[:, 0], i + 1, limits, alpha)
            done |= (limits <= i + 1) | ((best.score > ninf) & (best.score >= bound))
            if (i + 1) % SYNC_EVERY == 0 and bool(done.all()):
                break
        T = int(best.length.max()) if B else 0
    return best.tokens[:, :T]


class Generates:
    """Mixin giving an encoder-decoder the contract's ``greedy`` and ``beam_search`` methods."""

    def greedy(self, src, src_lengths, max_len: int | Tensor, bos: int, eos: int):
        """Return greedy tokens (B, T) and attention (B, T, T_src) or None; ``max_len``: one limit or (B,)."""
        return greedy(self, src, src_lengths, max_len, bos, eos)

    def beam_search(
        self, src, src_lengths, beam: int, max_len: int | Tensor, bos: int, eos: int, length_penalty: float = 0.6
    ):
        """Return the best beam per sentence (B, T), ranked by log P / ((5+|Y|)/6)^length_penalty."""
        return beam_search(self, src, src_lengths, beam, max_len, bos, eos, length_penalty)


@torch.no_grad()
def translate(
    model,
    src_ids: list[list[int]],
    meta: dict[str, Any],
    *,
    beam: int = 1,
    length_penalty: float = 0.6,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
    batch_size: int = 64,
    device: str = "cpu",
    on_batch=None,
) -> list[list[int]]:
    """Return output ids per source (in input order), batched by similar source length;
    each output at most ``max_len_a * its own source length + max_len_b`` tokens (not the batch's
    longest source: a sentence's output does not depend on its batch-mates);
    ``on_batch(n)`` is called after each batch of n sentences (progress)."""
    if not hasattr(model, "greedy"):
        raise ModelError(f"{type(model).__name__} cannot decode: it has no greedy(); use an encoder-decoder")
    bos, eos, pad_id = int(meta["bos_id"]), int(meta["eos_id"]), int(meta["pad_id"])
    order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
    out: list[list[int]] = [[] for _ in src_ids]
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        src, lengths = pad([src_ids[i] for i in idx], pad_id)
        max_len = output_limits(lengths, max_len_a, max_len_b)
        src, lengths = src.to(device), lengths.to(device)
        if beam > 1:
            tokens = model.beam_search(src, lengths, beam, max_len, bos, eos, length_penalty)
        else:
            tokens = model.greedy(src, lengths, max_len, bos, eos)[0]
        for row, i in enumerate(idx):
            out[i] = strip(tokens[row].tolist(), bos, eos, pad_id)
        if on_batch is not None:
            on_batch(len(idx))
    return out


def output_limits(src_lengths: Tensor, a: float, b: int) -> Tensor:
    """Each sentence's output limit, int(a * its source length + b), at least 1 (an empty source)."""
    return torch.tensor([max(1, int(a * n + b)) for n in src_lengths.tolist()], dtype=torch.long)


def strip(ids: list[int], bos: int, eos: int, pad_id: int) -> list[int]:
    """Cut at EOS and drop BOS / padding."""
    if eos in ids:
        ids = ids[: ids.index(eos)]
    return [i for i in ids if i not in (bos, pad_id)]
