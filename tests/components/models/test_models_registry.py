"""Every registered variant builds, runs forward and backward on a tiny batch; registry errors."""

import pytest
import torch

from components.models import ModelError, build, describe, names
from components.models.registry import variant

torch.set_num_threads(1)

# paper-size variants are checked by parameter count (test_models_sizes.py), not run here
PAPER_SIZES = {n for n in names() if describe(n)["doc"].startswith("Paper size")}
FAMILIES = {"rnn", "mlp", "seq2seq", "transformer", "vit", "cnn", "conv1d", "captioner"}


def _sequence_batch(cfg):
    B, T = 3, min(6, getattr(cfg, "seq_len", 6))
    lengths = torch.tensor([T, T - 2, 1])
    if cfg.input_dim <= 0:
        return torch.randint(1, cfg.vocab_size, (B, T)), lengths
    return torch.randn(B, T, cfg.input_dim), lengths


def _run(model):
    """Forward a tiny batch; return (loss, expected output shape, output)."""
    cfg, family = model.config, model.family
    if family in {"vit", "cnn"}:
        size = getattr(cfg, "image_size", 16)
        out = model(torch.randn(2, cfg.channels, size, size))
        return out, (2, cfg.num_classes)
    if family in {"seq2seq", "transformer", "captioner"} and hasattr(model, "greedy"):
        if family == "captioner":
            src, src_len = torch.randn(2, cfg.channels, cfg.image_size, cfg.image_size), None
        else:
            src, src_len = torch.randint(3, cfg.src_vocab_size, (2, 5)), torch.tensor([5, 3])
        vocab = getattr(cfg, "out_vocab", None) or cfg.tgt_vocab_size
        tgt = torch.randint(3, vocab, (2, 4))
        logits, attn = model(src, src_len, tgt)
        return logits, (2, 4, vocab)
    if getattr(cfg, "head", "") == "one_to_many":
        x = torch.randint(0, cfg.vocab_size, (3,)) if cfg.input_dim <= 0 else torch.randn(3, cfg.input_dim)
        return model(x), (3, cfg.out_len, cfg.num_classes)
    x, lengths = _sequence_batch(cfg)
    out = model(x, lengths)
    if getattr(cfg, "head", "many_to_one") == "many_to_one":
        return out, (3, cfg.num_classes)
    return out, (*x.shape[:2], getattr(cfg, "out_classes", cfg.num_classes))


@pytest.mark.parametrize("name", sorted(set(names()) - PAPER_SIZES))
def test_every_variant_runs_forward_and_backward(name):
    torch.manual_seed(0)
    model = build(name)
    assert model.family in FAMILIES and isinstance(model.removes, set) and model.removes <= {"B1", "B2", "B3", "B4"}
    out, shape = _run(model)
    assert tuple(out.shape) == shape
    assert torch.isfinite(out).all()
    out.float().pow(2).mean().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert any(g is not None and g.abs().sum() > 0 for g in grads)
    assert all(torch.isfinite(g).all() for g in grads if g is not None)


def test_overrides_replace_config_fields_and_removes_follow_the_cell():
    model = build("lstm-small", vocab_size=10, num_classes=8, forget_bias=3.0)
    assert (model.config.vocab_size, model.config.forget_bias) == (10, 3.0)
    assert build("rnn-small").removes == {"B1"} and model.removes == {"B1", "B2"}
    assert build("mlp-small").removes == set()


def test_unknown_names_and_fields_fail_with_did_you_mean():
    with pytest.raises(ModelError, match="unknown model 'lstm-smal' .*did you mean 'lstm-small'"):
        build("lstm-smal")
    with pytest.raises(ModelError, match="has no field 'forget_bais' .*did you mean 'forget_bias'"):
        build("lstm-small", forget_bais=1.0)


def test_duplicate_variant_names_are_an_error():
    with pytest.raises(ModelError, match="registered twice"):
        variant("lstm-small", lambda cfg: None)(lambda: None)


def test_describe_lists_family_and_config_without_building():
    d = describe("gru-small")
    assert d["family"] == "rnn" and d["config"]["cell"] == "gru" and d["doc"]
    assert "gru-small" in names("rnn") and "gru-small" not in names("mlp")


@pytest.mark.parametrize("name", ["lstm-small", "mlp-small", "conv1d-small", "transformer-encoder-small"])
def test_overriding_input_dim_switches_to_real_valued_inputs(name):
    model = build(name, input_dim=2, num_classes=1)  # the adding problem: (value, marker) per step
    x = torch.randn(3, 7, 2)
    assert model(x, torch.tensor([7, 5, 2])).shape == (3, 1)
    with pytest.raises(ModelError, match=r"expected real-valued input \(B, T, 2\), got \(3, 7\)"):
        model(torch.randint(0, 5, (3, 7)))


with torch.device("meta"):  # the variants that read a sequence through an input layer, built without weights
    SEQUENCE_MODELS = [n for n in sorted(set(names()) - PAPER_SIZES) if hasattr(build(n), "input")]


@pytest.mark.parametrize("name", SEQUENCE_MODELS)
def test_sequence_models_give_per_step_states_and_input_gradients(name):
    torch.manual_seed(0)
    model = build(name)
    x, lengths = _sequence_batch(model.config)
    states = model.hidden_states(x, lengths)
    assert states.shape[:2] == x.shape[:2] and torch.isfinite(states).all()
    taps = torch.zeros(*x.shape[:2], model.input.dim, requires_grad=True)
    last = model.hidden_states(x, None, taps=taps)[:, -1]
    # a random read-out: the plain sum of a LayerNorm's output is constant, so its gradient is 0
    (last * torch.randn_like(last)).sum().backward()
    assert taps.grad[:, -1].abs().sum() > 0  # the last state depends on the last input
