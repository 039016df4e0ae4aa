"""Vision models, the 1D CNN and the captioner: shapes, positions, padding, receptive field, attention."""

import pytest
import torch

from components.models import ModelError, build

torch.set_num_threads(1)


def test_vit_exposes_positions_grid_and_class_token():
    torch.manual_seed(0)
    model = build("vit-small")
    assert model.grid == (4, 4) and model.pos_embedding.shape == (1, 17, 64)
    assert 0.015 < model.pos_embedding.std().item() < 0.025  # init std 0.02
    tokens = model.tokens(torch.randn(2, 1, 28, 28))
    assert tokens.shape == (2, 17, 64)
    assert model(torch.randn(2, 1, 28, 28)).shape == (2, 10)
    with pytest.raises(ModelError, match=r"ViT expects images \(B, 1, 28, 28\), got \(2, 1, 32, 32\)"):
        model(torch.randn(2, 1, 32, 32))
    with pytest.raises(ModelError, match="not a multiple of patch"):
        build("vit-small", patch=5)


def test_vit_patch_order_is_row_major_over_the_grid():
    torch.manual_seed(0)
    model = build("vit-tiny").eval()
    img = torch.zeros(1, 1, 8, 8)
    img[0, 0, 2:4, 4:6] = 1.0  # the patch at grid row 1, column 2 -> token 1 + 1*4 + 2
    x = model.patch_embed(img).flatten(2).transpose(1, 2)[0]
    changed = (x - model.patch_embed.bias).abs().sum(-1) > 0
    assert changed.nonzero().flatten().tolist() == [6]


@pytest.mark.parametrize("causal", [False, True])
def test_conv1d_padded_batch_equals_sequences_one_by_one(causal):
    torch.manual_seed(0)
    model = build("conv1d-tagger-small", causal=causal).eval()
    x, lengths = torch.randint(1, 16, (3, 9)), torch.tensor([9, 4, 6])
    out = model(x, lengths)
    for b, n in enumerate(lengths.tolist()):
        assert torch.allclose(out[b, :n], model(x[b : b + 1, :n])[0], atol=1e-5)


def test_conv1d_causal_receptive_field():
    torch.manual_seed(0)
    model = build("conv1d-tagger-small", causal=True, num_layers=2).eval()
    assert model.config.receptive_field == 1 + 2 * 1 + 2 * 2
    x = torch.randint(1, 16, (1, 20))
    y = x.clone()
    y[0, 5] = x[0, 5] % 15 + 1
    diff = (model(x) - model(y)).abs().amax(-1)[0]
    assert (diff[:5] == 0).all() and (diff[5:12] > 0).all() and (diff[12:] == 0).all()  # 5 + 7 - 1


def test_captioner_attends_over_regions_and_decodes():
    torch.manual_seed(0)
    model = build("captioner-small")
    images, tgt = torch.randn(2, 1, 28, 28), torch.randint(0, 12, (2, 5))
    logits, attn = model(images, tgt)
    assert logits.shape == (2, 5, 12) and attn.shape == (2, 5, 49)
    assert torch.equal(model(images, None, tgt)[0], logits)
    assert torch.allclose(attn.sum(-1), torch.ones(2, 5), atol=1e-6)
    tokens, g_attn = model.greedy(images, None, max_len=6, bos=10, eos=11)
    assert torch.equal(tokens, model.beam_search(images, None, beam=1, max_len=6, bos=10, eos=11))
    assert g_attn.shape == (2, tokens.shape[1], 49)


def test_cnn_rejects_wrong_channels():
    with pytest.raises(ModelError, match=r"CNN expects images \(B, 1, H, W\), got \(2, 3, 28, 28\)"):
        build("cnn-small")(torch.randn(2, 3, 28, 28))


def test_non_square_images_from_digit_strips_meta():
    torch.manual_seed(0)
    strips = torch.randn(2, 1, 28, 84)  # three 28x28 digits side by side; meta image_size [28, 84]
    vit = build("vit-small", image_size=[28, 84])
    assert vit.grid == (4, 12) and vit(strips).shape == (2, 10)
    assert build("cnn-small", image_size=[28, 84])(strips).shape == (2, 10)
    cap = build("captioner-small", image_size=[28, 84], bos_id=10, eos_id=11)
    assert cap(strips, torch.tensor([[10, 3, 4, 5]] * 2))[1].shape == (2, 4, 7 * 21)
    with pytest.raises(ModelError, match="eos_id 12 is outside the output vocabulary of 12"):
        build("captioner-small", eos_id=12)
