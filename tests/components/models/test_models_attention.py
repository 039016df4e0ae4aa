"""Attention and Transformer: parity with SDPA / nn.MultiheadAttention, masks, causality, permutation."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from components.models import ModelError, build
from components.models.attention import MultiHeadAttention, attention, causal_mask, local_mask, padding_mask

torch.set_num_threads(1)


@pytest.mark.parametrize("masked", ["none", "causal", "padding"])
def test_attention_matches_sdpa(masked):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8)
    mask = {"none": None, "causal": causal_mask(5), "padding": padding_mask(torch.tensor([5, 2]), 5)}[masked]
    out, weights = attention(q, k, v, mask)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 5))
    if mask is not None:
        assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()
    unscaled, _ = attention(q, k, v, mask, scale=False)
    assert torch.allclose(unscaled, F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0), atol=1e-6)
    assert not torch.allclose(unscaled, out)


def test_multi_head_attention_matches_pytorch_with_copied_weights():
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(16, 4, batch_first=True)
    ours = MultiHeadAttention(16, 4)
    w_q, w_k, w_v = ref.in_proj_weight.chunk(3)
    b_q, b_k, b_v = ref.in_proj_bias.chunk(3)
    with torch.no_grad():
        for lin, w, b in [
            (ours.w_q, w_q, b_q),
            (ours.w_k, w_k, b_k),
            (ours.w_v, w_v, b_v),
            (ours.w_o, ref.out_proj.weight, ref.out_proj.bias),
        ]:
            lin.weight.copy_(w)
            lin.bias.copy_(b)
    x, mem = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    lengths = torch.tensor([7, 3])
    out_ref, w_ref = ref(x, mem, mem, key_padding_mask=~padding_mask(lengths, 7)[:, 0, 0], average_attn_weights=False)
    for need_weights in (True, False):  # explicit path and the SDPA fast path
        out, w = ours(x, mem, mem, padding_mask(lengths, 7), need_weights=need_weights)
        assert torch.allclose(out, out_ref, atol=1e-6)
    assert torch.allclose(ours(x, mem, mem, padding_mask(lengths, 7), need_weights=True)[1], w_ref, atol=1e-6)
    ours.naive = True
    assert torch.allclose(ours(x, mem, mem, padding_mask(lengths, 7))[0], out_ref, atol=1e-6)


def test_local_window_restricts_attention_to_r_neighbours():
    m = local_mask(6, 6, 1)
    assert m[3].tolist() == [False, False, True, True, True, False]
    torch.manual_seed(0)
    model = build("transformer-local-small", head="many_to_many").eval()
    x = torch.randint(1, 16, (1, 20))
    y = x.clone()
    y[0, 19] = (x[0, 19] % 15) + 1
    # 2 layers of radius 4: position 10 sees at most 8 positions away, so changing 19 cannot reach it
    assert torch.allclose(model(x)[0, :11], model(y)[0, :11], atol=1e-6)
    assert not torch.allclose(model(x)[0, 11:], model(y)[0, 11:])


def test_decoder_is_causal_changing_a_future_target_token():
    torch.manual_seed(0)
    model = build("transformer-tiny").eval()
    src, tgt = torch.randint(3, 32, (2, 6)), torch.randint(3, 32, (2, 7))
    changed = tgt.clone()
    changed[:, 4] = (tgt[:, 4] + 1) % 29 + 3
    a, b = model(src, torch.tensor([6, 4]), tgt)[0], model(src, torch.tensor([6, 4]), changed)[0]
    assert torch.allclose(a[:, :4], b[:, :4], atol=1e-6)
    assert not torch.allclose(a[:, 4:], b[:, 4:])
    lm = build("transformer-lm-tiny").eval()
    x = torch.randint(1, 16, (2, 9))
    y = x.clone()
    y[:, 6] = x[:, 6] % 15 + 1
    assert torch.allclose(lm(x)[:, :6], lm(y)[:, :6], atol=1e-6) and not torch.allclose(lm(x)[:, 6:], lm(y)[:, 6:])


@pytest.mark.parametrize("positions", ["none", "sinusoidal", "learned"])
def test_encoder_is_permutation_equivariant_only_without_positions(positions):
    torch.manual_seed(0)
    model = build("transformer-tagger-small", positions=positions, dropout=0.0).eval().double()
    x = torch.randint(1, 16, (2, 10))
    perm = torch.randperm(10)
    diff = (model(x)[:, perm] - model(x[:, perm])).abs().max().item()
    assert diff < 1e-10 if positions == "none" else diff > 1e-2


def test_transformer_padded_batch_equals_sequences_one_by_one():
    torch.manual_seed(0)
    model = build("transformer-tagger-small").eval()
    x, lengths = torch.randint(1, 16, (3, 8)), torch.tensor([8, 3, 5])
    out = model(x, lengths)
    for b, n in enumerate(lengths.tolist()):
        assert torch.allclose(out[b, :n], model(x[b : b + 1, :n])[0], atol=1e-5)
    pooled = build("transformer-encoder-small").eval()
    assert torch.allclose(pooled(x, lengths)[1], pooled(x[1:2, :3])[0], atol=1e-5)
    mt = build("transformer-tiny").eval()
    tgt = torch.randint(3, 32, (3, 4))
    src = torch.randint(3, 32, (3, 8))
    full = mt(src, lengths, tgt)
    one = mt(src[1:2, :3], None, tgt[1:2])
    assert torch.allclose(full[0][1], one[0][0], atol=1e-5)
    assert torch.allclose(full[1][1, :, :3], one[1][0], atol=1e-6) and (full[1][1, :, 3:] == 0).all()


def test_tied_and_shared_embeddings_are_one_tensor():
    model = build("transformer-tiny", share_embeddings=True)
    assert model.generator.weight is model.src_embed.weight is model.tgt_embed.weight
    with pytest.raises(ModelError, match="share_embeddings needs one joint vocabulary"):
        build("transformer-tiny", share_embeddings=True, tgt_vocab_size=40)
    with pytest.raises(ModelError, match=r"d_model \(30\) must be divisible by n_heads \(4\)"):
        build("transformer-small", d_model=30)
    with pytest.raises(ModelError, match="exceeds max_len=8"):
        build("transformer-encoder-tiny", max_len=8)(torch.ones(1, 9, dtype=torch.long))
