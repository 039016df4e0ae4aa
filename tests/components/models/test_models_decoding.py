"""Transformer decoding at scale: the key/value cache changes nothing but the cost; SDPA gets is_causal."""

import pytest
import torch
import torch.nn.functional as F

from components.models import build

torch.set_num_threads(1)
BOS, EOS = 1, 2
VARIANTS = [{}, {"norm_first": True}, {"positions": "learned"}, {"window": 2}, {"n_decoder_layers": 3}]


def _copy_batch(g, B=32, T=8):
    src = torch.randint(4, 32, (B, T), generator=g)
    tgt = torch.cat([torch.full((B, 1), BOS), src, torch.full((B, 1), EOS)], 1)
    return src, tgt


def _pair(**kw):
    """A Transformer briefly trained to copy, decoded with and without the cache (same weights)."""
    torch.manual_seed(0)
    cached = build("transformer-tiny", dropout=0.0, **kw)
    opt, g = torch.optim.Adam(cached.parameters(), 3e-3), torch.Generator().manual_seed(0)
    for _ in range(60):  # enough for input-dependent outputs, so equal tokens are not a coincidence
        src, tgt = _copy_batch(g)
        logits, _ = cached(src, None, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 32), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    plain = build("transformer-tiny", dropout=0.0, kv_cache=False, **kw)
    plain.load_state_dict(cached.state_dict())
    src, _ = _copy_batch(g, 5, 9)
    return cached.eval(), plain.eval(), src, torch.tensor([9, 3, 7, 1, 5])


@pytest.mark.parametrize("kw", VARIANTS, ids=str)
def test_cached_step_gives_the_log_probs_of_rerunning_the_prefix(kw):
    cached, plain, src, lengths = _pair(**kw)
    with torch.no_grad():
        mem = cached.encode(src, lengths)
        s_cached, s_plain = cached.init_state(mem), plain.init_state(mem)
        prev = torch.full((5,), BOS)
        for _ in range(6):
            a, s_cached, attn_a = cached.step(prev, s_cached, mem)
            b, s_plain, attn_b = plain.step(prev, s_plain, mem)
            assert torch.allclose(a, b, atol=1e-4) and torch.allclose(attn_a, attn_b, atol=1e-5)
            prev = torch.randint(4, 32, (5,))  # any prefix, not only the model's own choices


@pytest.mark.parametrize("kw", VARIANTS, ids=str)
def test_cached_greedy_and_beam_give_the_same_tokens_as_uncached(kw):
    cached, plain, src, lengths = _pair(**kw)
    g_cached, attn_cached = cached.greedy(src, lengths, max_len=12, bos=BOS, eos=EOS)
    g_plain, attn_plain = plain.greedy(src, lengths, max_len=12, bos=BOS, eos=EOS)
    assert torch.equal(g_cached, g_plain) and torch.allclose(attn_cached, attn_plain, atol=1e-5)
    assert len({tuple(r) for r in g_cached.tolist()}) >= 3  # outputs depend on the input: equality is informative
    for k in (1, 4):
        b_cached = cached.beam_search(src, lengths, beam=k, max_len=12, bos=BOS, eos=EOS, length_penalty=0.6)
        b_plain = plain.beam_search(src, lengths, beam=k, max_len=12, bos=BOS, eos=EOS, length_penalty=0.6)
        assert torch.equal(b_cached, b_plain)


def test_outputs_stop_at_the_longest_hypothesis_and_pad_after_eos():
    cached, _, src, lengths = _pair()
    # a bias on EOS makes hypotheses finish at different steps, well inside max_len
    with torch.no_grad():
        cached.generator.bias = torch.nn.Parameter(torch.zeros(32))
        cached.generator.bias[EOS] = 3.0
    tokens = cached.beam_search(src, lengths, beam=4, max_len=40, bos=BOS, eos=EOS)
    ended = (tokens == EOS).any(1)
    assert ended.all() and tokens.shape[1] < 40
    first = (tokens == EOS).int().argmax(1)
    assert int(first.max()) == tokens.shape[1] - 1  # no all-padding column is returned
    after = torch.arange(tokens.shape[1])[None] > first[:, None]
    assert (tokens[after] == 0).all()


def test_decoder_self_attention_passes_is_causal_and_no_mask(monkeypatch):
    calls = []
    real = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        calls.append((q.shape[2], k.shape[2], attn_mask is None, is_causal))
        return real(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    torch.manual_seed(0)
    model = build("transformer-tiny")
    src, tgt = torch.randint(4, 32, (2, 7)), torch.randint(4, 32, (2, 5))
    model(src, torch.tensor([7, 4]), tgt)
    self_calls = [c for c in calls if c[:2] == (5, 5)]
    assert self_calls and all(no_mask and causal for _, _, no_mask, causal in self_calls)
    assert not any(causal for t_q, t_k, _, causal in calls if (t_q, t_k) != (5, 5))  # encoder, cross: padding masks


def test_causal_lm_on_a_padded_batch_equals_each_sequence_alone():
    torch.manual_seed(0)
    model = build("transformer-lm-tiny").eval()
    x, lengths = torch.randint(1, model.config.vocab_size, (3, 8)), torch.tensor([8, 3, 5])
    out = model(x, lengths)
    for b, n in enumerate(lengths.tolist()):
        assert torch.allclose(out[b, :n], model(x[b : b + 1, :n], torch.tensor([n]))[0], atol=1e-5)
