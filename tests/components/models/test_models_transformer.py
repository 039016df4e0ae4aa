"""Where the Transformer's dropout goes: on sub-layer outputs and embedding sums (``dropout``), on the
attention weights (``attention_dropout``) and on the feed-forward hidden layer (``ffn_dropout``);
Vaswani 2017 uses only the first, and the paper-size variants say so."""

import pytest
import torch

from components.models import build, config
from components.models.registry import ModelError
from components.models.transformer import Transformer, TransformerConfig


def outputs(model, seed):
    torch.manual_seed(seed)
    src = torch.randint(1, 32, (3, 7))
    tgt = torch.randint(1, 32, (3, 6))
    return model(src, None, tgt)[0]


def train_mode_output_is_random(**dropouts) -> bool:
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(**dropouts)).train()
    x = torch.randint(1, 32, (3, 7))
    y = torch.randint(1, 32, (3, 6))
    torch.manual_seed(1)
    a = model(x, None, y)[0]
    torch.manual_seed(2)
    b = model(x, None, y)[0]
    return not torch.equal(a, b)


def test_with_every_dropout_at_zero_training_is_deterministic():
    assert not train_mode_output_is_random(dropout=0.0, attention_dropout=0.0, ffn_dropout=0.0)


@pytest.mark.parametrize("where", ["dropout", "attention_dropout", "ffn_dropout"])
def test_each_placement_alone_draws_masks(where):
    dropouts = {"dropout": 0.0, "attention_dropout": 0.0, "ffn_dropout": 0.0, where: 0.3}
    assert train_mode_output_is_random(**dropouts)


def test_unset_inner_dropouts_follow_dropout_so_the_small_models_are_unchanged():
    model = Transformer(TransformerConfig(dropout=0.2))
    layer = model.decoder.layers[0]
    assert layer.self_attn.dropout == layer.cross_attn.dropout == 0.2
    assert layer.ff.net[2].p == 0.2 and layer.drop.p == 0.2 and model.drop.p == 0.2
    # the same seed builds the same weights and draws the same masks as before the settings existed
    torch.manual_seed(0)
    default = Transformer(TransformerConfig(dropout=0.2)).train()
    torch.manual_seed(0)
    spelled = Transformer(TransformerConfig(dropout=0.2, attention_dropout=0.2, ffn_dropout=0.2)).train()
    assert torch.equal(outputs(default, 5), outputs(spelled, 5))


@pytest.mark.parametrize("name, residual", [("transformer-base", 0.1), ("transformer-big", 0.3)])
def test_the_paper_sizes_put_dropout_where_the_paper_does(name, residual):
    cfg = config(name)
    assert (cfg.dropout, cfg.attention_dropout, cfg.ffn_dropout) == (residual, 0.0, 0.0)
    model = build(name, n_encoder_layers=1, n_decoder_layers=1, src_vocab_size=40, tgt_vocab_size=40)
    layer = model.decoder.layers[0]
    assert layer.self_attn.dropout == layer.cross_attn.dropout == 0.0 and layer.ff.net[2].p == 0.0
    assert layer.drop.p == residual and model.drop.p == residual  # sub-layer outputs, embedding sums
    assert model.encoder.layers[0].self_attn.dropout == 0.0


@pytest.mark.parametrize("field", ["dropout", "attention_dropout", "ffn_dropout"])
def test_a_dropout_outside_zero_to_one_says_which(field):
    with pytest.raises(ModelError, match=f"{field} must be in \\[0, 1\\)"):
        TransformerConfig(**{field: 1.0})
