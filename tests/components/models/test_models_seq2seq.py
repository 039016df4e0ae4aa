"""Encoder-decoders: attention weights, padding, reversed source, decoding (beam 1 == greedy)."""

import pytest
import torch

from components.models import ModelError, build, names
from components.models.decoding import Generates, length_penalty

torch.set_num_threads(1)
ENC_DEC = ["seq2seq-tiny", "luong-tiny", "bahdanau-tiny", "transformer-tiny"]
BOS, EOS = 1, 2


def _batch(B=3, T=6, V=32):
    torch.manual_seed(1)
    return torch.randint(3, V, (B, T)), torch.tensor([T, 2, 4][:B])


@pytest.mark.parametrize("name", ENC_DEC)
def test_beam_of_one_equals_greedy(name):
    torch.manual_seed(0)
    model = build(name)
    src, lengths = _batch()
    tokens, attn = model.greedy(src, lengths, max_len=7, bos=BOS, eos=EOS)
    beam = model.beam_search(src, lengths, beam=1, max_len=7, bos=BOS, eos=EOS, length_penalty=0.6)
    assert torch.equal(tokens, beam)
    assert tokens.shape[1] <= 7 and model.training  # decoding restores the training mode
    if attn is not None:
        assert attn.shape == (3, tokens.shape[1], 6)


@pytest.mark.parametrize("name", ENC_DEC)
def test_padded_batch_equals_sentences_one_by_one(name):
    torch.manual_seed(0)
    model = build(name).eval()
    src, lengths = _batch()
    tgt = torch.randint(3, 32, (3, 5))
    logits, attn = model(src, lengths, tgt)
    for b, n in enumerate(lengths.tolist()):
        one_logits, one_attn = model(src[b : b + 1, :n], torch.tensor([n]), tgt[b : b + 1])
        assert torch.allclose(logits[b], one_logits[0], atol=1e-5)
        if attn is not None:
            assert torch.allclose(attn[b, :, :n], one_attn[0], atol=1e-6)
            assert torch.allclose(attn[b].sum(-1), torch.ones(5), atol=1e-6) and (attn[b, :, n:] == 0).all()


@pytest.mark.parametrize("name", ["seq2seq-tiny", "luong-tiny", "bahdanau-tiny"])
def test_reverse_source_equals_feeding_the_reversed_sentence(name):
    torch.manual_seed(0)
    plain = build(name).eval()
    rev = build(name, reverse_source=True).eval()
    rev.load_state_dict(plain.state_dict())
    src, tgt = torch.randint(3, 32, (1, 5)), torch.randint(3, 32, (1, 4))
    a_logits, a_attn = rev(src, torch.tensor([5]), tgt)
    b_logits, b_attn = plain(src.flip(1), torch.tensor([5]), tgt)
    assert torch.allclose(a_logits, b_logits, atol=1e-6)
    if a_attn is not None:  # heat maps stay in the original source order
        assert torch.allclose(a_attn, b_attn.flip(-1), atol=1e-6)


def test_bahdanau_projects_the_source_once_per_batch_not_per_step():
    model = build("bahdanau-tiny")
    calls = []
    model.attn.w2.register_forward_hook(lambda *a: calls.append(1))
    src, lengths = _batch()
    model(src, lengths, torch.randint(3, 32, (3, 9)))
    assert len(calls) == 1
    assert build("bahdanau-tiny").removes == {"B1", "B2", "B3"} and build("seq2seq-tiny").removes == {"B1", "B2"}


@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
def test_bahdanau_batched_teacher_forcing_equals_stepping_the_decoder(cell):
    torch.manual_seed(0)
    model = build("bahdanau-tiny", cell=cell).eval()
    src, lengths = _batch()
    tgt = torch.randint(3, 32, (3, 7))
    calls = []
    model.out.register_forward_hook(lambda *a: calls.append(1))
    logits, attn = model(src, lengths, tgt)
    assert len(calls) == 1  # the softmax layer runs once over all steps, not once per step
    with torch.no_grad():
        memory = model.encode(src, lengths)
        state = model.init_state(memory)
        for i in range(tgt.shape[1]):
            logp, state, a = model.step(tgt[:, i], state, memory)
            assert torch.allclose(logp, logits[:, i].log_softmax(-1), atol=1e-5)
            assert torch.allclose(a, attn[:, i], atol=1e-6)


class ScriptedDecoder(Generates, torch.nn.Module):
    """A decoder with fixed next-token probabilities, so the best beam is known by hand.

    From BOS: EOS 0.45, A 0.35, B 0.2. After k A's: A 0.99 (EOS 0.99 once k == 4).
    Short [EOS] has log P -0.80; long [A A A A EOS] has log P -1.09 but length 5, so with
    the GNMT penalty (alpha 1: lp = 10/6) it scores -0.65 and wins; with alpha 0 [EOS] wins.
    """

    def __init__(self):
        super().__init__()
        self.config = type("Config", (), {"pad_id": 0})()

    def encode(self, src, src_lengths):
        return src.float()  # (B, T_src): unused, but beams index it

    def init_state(self, memory):
        return torch.zeros(memory.shape[0], dtype=torch.long)  # (B,) A's emitted so far

    def step(self, prev, state, memory):
        probs = torch.full((prev.shape[0], 5), 1e-6)
        first, after_a = prev == BOS, prev == A
        probs[first, EOS], probs[first, A], probs[first, B_TOKEN] = 0.45, 0.35, 0.2
        count = state + after_a.long()
        long_enough = after_a & (count >= 4)
        probs[after_a & ~long_enough, A] = 0.99
        probs[long_enough, EOS] = 0.99
        probs[prev == B_TOKEN, EOS] = 0.01  # B leads nowhere likely
        return probs.log(), count, None


A, B_TOKEN = 3, 4


@pytest.mark.parametrize("alpha,best", [(0.0, [EOS]), (1.0, [A, A, A, A, EOS])])  # trimmed to the longest best
def test_beam_search_ranks_finished_hypotheses_by_the_gnmt_length_penalty(alpha, best):
    assert torch.allclose(length_penalty(torch.tensor([1, 7]), 0.6), torch.tensor([1.0, 2.0**0.6]))
    src, lengths = torch.full((2, 3), 5), torch.tensor([3, 2])
    out = ScriptedDecoder().beam_search(src, lengths, beam=3, max_len=8, bos=BOS, eos=EOS, length_penalty=alpha)
    assert out.tolist() == [best, best]  # EOS ends a row; padding (pad_id 0) follows it


def test_beam_search_rejects_bad_lengths_and_widths():
    torch.manual_seed(0)
    model = build("luong-tiny", tgt_vocab_size=6)
    src, lengths = _batch()
    with pytest.raises(ModelError, match="max_len must be >= 1"):
        model.greedy(src, lengths, max_len=0, bos=BOS, eos=EOS)
    with pytest.raises(ModelError, match="beam must be >= 1"):
        model.beam_search(src, lengths, beam=0, max_len=5, bos=BOS, eos=EOS)


def test_dot_attention_with_bidirectional_encoder_explains_the_size_mismatch():
    with pytest.raises(ModelError, match="use 'general' or 'concat'"):
        build("luong-dot-small", bidirectional_encoder=True)
    assert "sutskever-4x1000" in names("seq2seq")
