"""Batched greedy and beam-search decoding for any encoder-decoder.

A model decodes through three methods: ``encode(src, src_lengths) -> memory``,
``init_state(memory) -> state`` and ``step(prev_tokens (B,), state, memory) -> (log-probs (B, V),
state, attn (B, T_src) or None)``. Memory and state are tensors (or tuples/dicts of them) with the
batch first, so beams are made and reordered by indexing dim 0.
Outputs exclude BOS, include EOS, and hold ``config.pad_id`` after it (EOS if the model has none).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import Tensor

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


def _check(max_len: int, beam: int = 1) -> None:
    if max_len < 1:
        raise ModelError(f"max_len must be >= 1 (the longest output to generate), got {max_len}")
    if beam < 1:
        raise ModelError(f"beam must be >= 1, got {beam}")


# Stopping early needs the host to read "all finished?" from the device, which waits for the GPU;
# asking every SYNC_EVERY steps keeps the queue full (finished rows only append padding meanwhile).
SYNC_EVERY = 8


def greedy(model, src, src_lengths, max_len: int, bos: int, eos: int) -> tuple[Tensor, Tensor | None]:
    """Pick the most likely token at every step; return tokens (B, T <= max_len) and attn (B, T, T_src)."""
    _check(max_len)
    pad = _fill(model, eos)
    with _inference(model):
        memory = model.encode(src, src_lengths)
        state = model.init_state(memory)
        B = src.shape[0]
        prev = torch.full((B,), bos, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        lengths = torch.zeros(B, dtype=torch.long, device=src.device)
        tokens, attns = [], []
        for i in range(max_len):
            logp, state, attn = model.step(prev, state, memory)
            tok = logp.argmax(-1).masked_fill(done, pad)
            tokens.append(tok)
            attns.append(attn)
            lengths += ~done
            done |= tok == eos
            prev = tok
            if (i + 1) % SYNC_EVERY == 0 and done.all():
                break
        T = int(lengths.max()) if B else 0  # the one sync: drop steps taken after every row had finished
    attn = torch.stack(attns[:T], 1) if T and attns[0] is not None else None
    return torch.stack(tokens, 1)[:, :T], attn


def length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """GNMT length penalty lp(Y) = ((5 + |Y|) / 6)^alpha (Wu 2016; alpha 0.6 in Vaswani 2017)."""
    return ((5.0 + lengths.float()) / 6.0) ** alpha


def _best_bound(scores: Tensor, length: int, max_len: int, alpha: float) -> Tensor:
    """The best normalised score any continuation of live hypotheses of ``length`` tokens can reach.

    Log-probabilities only fall as a hypothesis grows, so its log P stays at most ``scores``; it ends
    at a length in (length, max_len], where ``scores / lp`` is largest at the largest lp there (lp grows
    with length for alpha > 0, shrinks for alpha < 0).
    """
    return scores / max(_lp(length + 1, alpha), _lp(max_len, alpha))


def _lp(length: int, alpha: float) -> float:
    return ((5.0 + length) / 6.0) ** alpha


def beam_search(model, src, src_lengths, beam: int, max_len: int, bos: int, eos: int, alpha: float = 0.6) -> Tensor:
    """Beam search as fairseq and tensor2tensor do it; return the best hypothesis by log P / lp (B, T).

    Each sentence keeps ``beam`` live hypotheses (none ending in EOS) and a finished set. At every step
    an EOS extension that ranks among the step's ``beam`` best extensions (by log P, as fairseq) is
    scored with the length penalty at its own length and enters the finished set; the live hypotheses
    are the ``beam`` best non-EOS extensions, so a hypothesis that finishes frees its slot instead of
    occupying it. Only the best finished hypothesis is returned, so the set keeps its best. A sentence
    stops when no live hypothesis can beat that best (``_best_bound``, as tensor2tensor); at ``max_len``
    live hypotheses count as finished, unended, at lp(max_len). With a beam wide enough to prune
    nothing the result is the exact argmax of log P / lp over all outputs of at most ``max_len``
    tokens; with ``beam=1`` it is greedy decoding unless a later ending outscores greedy's.
    All B * beam hypotheses advance as one batch; the output is
    as long as its longest best hypothesis and holds the pad id after EOS.
    """
    _check(max_len, beam)
    pad, B, K = _fill(model, eos), src.shape[0], beam
    dev = src.device
    ninf = float("-inf")
    with _inference(model):
        memory = model.encode(src, src_lengths)
        memory = index_batch(memory, torch.arange(B, device=dev).repeat_interleave(K))  # (B*K, ...)
        state = model.init_state(memory)
        scores = torch.full((B, K), ninf, device=dev)
        scores[:, 0] = 0.0  # all beams start as one hypothesis
        prev = torch.full((B * K,), bos, dtype=torch.long, device=dev)
        tokens = torch.zeros(B * K, 0, dtype=torch.long, device=dev)
        best = torch.full((B, max_len), pad, dtype=torch.long, device=dev)  # the best finished hypothesis
        best_score = torch.full((B,), ninf, device=dev)
        best_len = torch.zeros(B, dtype=torch.long, device=dev)
        done = torch.zeros(B, dtype=torch.bool, device=dev)
        base = torch.arange(B, device=dev)[:, None] * K
        for i in range(max_len):
            logp, state, _ = model.step(prev, state, memory)  # (B*K, V)
            logp = logp.float()
            V = logp.shape[-1]
            # finished: the EOS extension of every live hypothesis, at length i + 1
            cand = (scores.view(-1, 1) + logp).view(B, K * V)
            kth = cand.topk(K, -1).values[:, -1:]  # a hypothesis finishes when its EOS is among the K best (fairseq)
            eos_cand = cand.view(B, K, V)[:, :, eos]
            ended = torch.where(eos_cand >= kth, eos_cand, ninf) / _lp(i + 1, alpha)
            top_end, k_end = ended.max(-1)
            better = (top_end > best_score) & ~done  # no host sync: rows that do not improve keep theirs
            hyp = torch.cat([tokens[base[:, 0] + k_end], torch.full((B, 1), eos, dtype=torch.long, device=dev)], 1)
            best[:, : i + 1] = torch.where(better[:, None], hyp, best[:, : i + 1])
            best[:, i + 1 :] = torch.where(better[:, None], pad, best[:, i + 1 :])
            best_score = torch.where(better, top_end, best_score)
            best_len = torch.where(better, i + 1, best_len)
            # live: the K best extensions that do not end
            cand.view(B, K, V)[:, :, eos] = ninf
            top, idx = cand.topk(K, -1)  # (B, K)
            origin = (base + idx // V).view(-1)
            tok = (idx % V).view(-1)
            tokens = torch.cat([tokens[origin], tok[:, None]], 1)
            state, scores, prev = index_batch(state, origin), top, tok
            done |= (best_score > ninf) & (best_score >= _best_bound(top[:, 0], i + 1, max_len, alpha))
            if (i + 1) % SYNC_EVERY == 0 and bool(done.all()):
                break
        else:  # max_len reached: the live hypotheses end unfinished, at lp(max_len)
            norm = scores / _lp(max_len, alpha)
            top_live, k_live = norm.max(-1)
            better = (top_live > best_score) & ~done
            best = torch.where(better[:, None], tokens[base[:, 0] + k_live], best)
            best_len = torch.where(better, max_len, best_len)
        T = int(best_len.max()) if B else 0
    return best[:, :T]


class Generates:
    """Mixin giving an encoder-decoder the contract's ``greedy`` and ``beam_search`` methods."""

    def greedy(self, src, src_lengths, max_len: int, bos: int, eos: int):
        """Return greedy tokens (B, T) and attention (B, T, T_src) or None."""
        return greedy(self, src, src_lengths, max_len, bos, eos)

    def beam_search(self, src, src_lengths, beam: int, max_len: int, bos: int, eos: int, length_penalty: float = 0.6):
        """Return the best beam per sentence (B, T), ranked by log P / ((5+|Y|)/6)^length_penalty."""
        return beam_search(self, src, src_lengths, beam, max_len, bos, eos, length_penalty)
