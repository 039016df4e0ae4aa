"""Encoder-decoders: attention weights, padding, reversed source, decoding (beam 1 == greedy)."""
import pytest
import torch

from components.models import ModelError, build, names
from components.models.decoding import length_penalty

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
        one_logits, one_attn = model(src[b:b + 1, :n], torch.tensor([n]), tgt[b:b + 1])
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


def test_beam_search_returns_eos_then_padding_and_ranks_with_gnmt_penalty():
    assert torch.allclose(length_penalty(torch.tensor([1, 7]), 0.6), torch.tensor([1.0, 2.0 ** 0.6]))
    torch.manual_seed(0)
    model = build("luong-tiny", tgt_vocab_size=6)
    src, lengths = _batch()
    out = model.beam_search(src, lengths, beam=4, max_len=12, bos=BOS, eos=EOS, length_penalty=1.0)
    for row in out.tolist():
        if EOS in row:
            assert all(t == model.config.pad_id for t in row[row.index(EOS) + 1:])
    with pytest.raises(ModelError, match="max_len must be >= 1"):
        model.greedy(src, lengths, max_len=0, bos=BOS, eos=EOS)
    with pytest.raises(ModelError, match="beam must be >= 1"):
        model.beam_search(src, lengths, beam=0, max_len=5, bos=BOS, eos=EOS)


def test_dot_attention_with_bidirectional_encoder_explains_the_size_mismatch():
    with pytest.raises(ModelError, match="use 'general' or 'concat'"):
        build("luong-dot-small", bidirectional_encoder=True)
    assert "sutskever-4x1000" in names("seq2seq")
