"""Beam search as fairseq / tensor2tensor do it: K live hypotheses, a finished set, exact with a wide beam."""

import itertools
from types import SimpleNamespace

import pytest
import torch

from components.models.decoding import SYNC_EVERY, beam_search, length_penalty

PAD, BOS, EOS, V = 0, 1, 2, 5


class TinyRNN(torch.nn.Module):
    """A 5-token decoder whose next-token distribution depends on the whole prefix and the source."""

    def __init__(self, seed: int, eos_bias: float = 0.0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.config = SimpleNamespace(pad_id=PAD)
        self.emb = torch.randn(V, 6, generator=g)
        self.w = torch.randn(6, 6, generator=g) * 0.8
        self.u = torch.randn(6, V, generator=g) * 1.5
        self.bias = torch.zeros(V)
        self.bias[EOS] = eos_bias
        self.fed: list[torch.Tensor] = []  # the prev tokens of every step call

    def encode(self, src, lengths):
        return {"h": self.emb[src].mean(1)}

    def init_state(self, memory):
        return memory["h"]

    def step(self, prev, state, memory):
        self.fed.append(prev.clone())
        h = torch.tanh(state @ self.w + self.emb[prev] + memory["h"])
        return torch.log_softmax(h @ self.u + self.bias, -1), h, None


def brute_force(model, src, max_len: int, alpha: float) -> list[int]:
    """argmax over every output of at most max_len tokens of log P / lp: ended by EOS, or cut at max_len."""
    memory = model.encode(src, None)
    best, best_score = None, float("-inf")
    words = [t for t in range(V) if t != EOS]
    ended = [[*body, EOS] for n in range(max_len) for body in itertools.product(words, repeat=n)]
    for seq in ended + [list(body) for body in itertools.product(words, repeat=max_len)]:
        state, prev, total = model.init_state(memory), torch.tensor([BOS]), 0.0
        for tok in seq:
            logp, state, _ = model.step(prev, state, memory)
            total += float(logp[0, tok])
            prev = torch.tensor([tok])
        score = total / float(length_penalty(torch.tensor(len(seq)), alpha))
        if score > best_score:
            best, best_score = seq, score
    return best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_a_beam_wide_enough_to_prune_nothing_finds_the_brute_force_argmax(seed, alpha):
    model = TinyRNN(seed, eos_bias=0.5 * (seed % 3))
    max_len, K = 4, 5**4  # 5 tokens: every extension of every prefix ranks among the K best, none is pruned
    src = torch.tensor([[3, 4, 3]])
    expected = brute_force(model, src, max_len, alpha)
    got = beam_search(model, src, None, K, max_len, BOS, EOS, alpha)[0].tolist()
    assert got[: len(expected)] == expected and all(t == PAD for t in got[len(expected) :])


@pytest.mark.parametrize("seed", range(4))
def test_sentences_of_a_batch_are_searched_independently(seed):
    model = TinyRNN(seed)
    src = torch.tensor([[3, 4, 3], [4, 4, 1], [1, 3, 3]])
    together = beam_search(model, src, None, 3, 6, BOS, EOS, 0.6)
    for b in range(3):
        alone = beam_search(model, src[b : b + 1], None, 3, 6, BOS, EOS, 0.6)[0]
        assert together[b, : alone.shape[0]].tolist() == alone.tolist()
        assert (together[b, alone.shape[0] :] == PAD).all()


def test_finished_hypotheses_leave_the_beam_so_k_live_ones_advance_every_step():
    model = TinyRNN(1, eos_bias=2.0)  # EOS is likely at every step: the old search filled its beam with them
    K, B = 3, 2
    beam_search(model, torch.tensor([[3, 4], [4, 3]]), None, K, 12, BOS, EOS, 0.6)
    assert model.fed and all(prev.shape == (B * K,) for prev in model.fed)
    assert len(model.fed) >= 2
    for prev in model.fed[1:]:
        assert EOS not in prev.tolist()  # a hypothesis that ended is never extended: its slot went to another


def test_the_search_stops_early_when_no_live_hypothesis_can_beat_the_best_finished_one():
    model = TinyRNN(2, eos_bias=6.0)  # EOS at the first step beats anything longer by far
    out = beam_search(model, torch.tensor([[3, 4]]), None, 4, 64, BOS, EOS, 0.0)  # log P only falls with length
    assert out.tolist() == [[EOS]]
    assert len(model.fed) == SYNC_EVERY  # stopped at the first check, not after 64 steps


def test_the_length_penalty_is_applied_when_a_hypothesis_finishes():
    """alpha < 0 favours short outputs, alpha > 0 long ones; each matches brute force at its alpha."""
    model = TinyRNN(3, eos_bias=0.8)
    src = torch.tensor([[4, 3, 4]])
    lengths = {}
    for alpha in (-1.0, 2.0):
        expected = brute_force(model, src, 4, alpha)
        got = beam_search(model, src, None, 5**4, 4, BOS, EOS, alpha)[0].tolist()
        assert got[: len(expected)] == expected
        lengths[alpha] = len(expected)
    assert lengths[-1.0] <= lengths[2.0]
