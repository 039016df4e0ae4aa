"""Bahdanau 2015's GRU (appendix A.1.1) against its equations, and the models that use it."""

import numpy as np
import pytest
import torch

from components.models import build, config
from components.models.cells import BahdanauGRUCell
from components.models.recurrent import Recurrent
from components.models.registry import ModelError

BOS, EOS = 1, 2


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def paper_step(x, h, w_ih, w_hh, b_ih, b_hh):
    """The paper's equations, written out with its separate matrices (numpy, float64).

    r = sigma(W_r x + U_r h), z = sigma(W_z x + U_z h), h~ = tanh(W x + U (r o h)),
    h' = (1 - z) o h + z o h~ (biases where PyTorch puts them).
    """
    H = h.shape[-1]
    W_r, W_z, W = w_ih[:H], w_ih[H : 2 * H], w_ih[2 * H :]
    U_r, U_z, U = w_hh[:H], w_hh[H : 2 * H], w_hh[2 * H :]
    r = sigmoid(x @ W_r.T + b_ih[:H] + h @ U_r.T + b_hh[:H])
    z = sigmoid(x @ W_z.T + b_ih[H : 2 * H] + h @ U_z.T + b_hh[H : 2 * H])
    h_tilde = np.tanh(x @ W.T + b_ih[2 * H :] + (r * h) @ U.T + b_hh[2 * H :])
    return (1 - z) * h + z * h_tilde


def weights(module, suffix=""):
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    return [getattr(module, n + suffix).detach().double().numpy() for n in names]


def test_one_step_is_the_papers_equations_and_not_pytorchs_gru():
    torch.manual_seed(0)
    cell = BahdanauGRUCell(5, 4)
    x, h = torch.randn(3, 5), torch.randn(3, 4)
    with torch.no_grad():
        got = cell(x, h)
        torch_gru = torch.nn.GRUCell(5, 4)
        torch_gru.load_state_dict(cell.state_dict())  # the same names and shapes
        other = torch_gru(x, h)
    want = paper_step(x.double().numpy(), h.double().numpy(), *weights(cell))
    np.testing.assert_allclose(got.double().numpy(), want, atol=1e-6)
    assert np.abs(other.double().numpy() - want).max() > 1e-2  # PyTorch's form is another function


def test_z_weighs_the_new_candidate_as_the_paper_writes():
    cell = BahdanauGRUCell(2, 3)
    with torch.no_grad():
        cell.bias_ih.zero_()
        cell.bias_hh.zero_()
        cell.bias_ih[3:6] = -30.0  # z ~ 0: the paper's h' = (1 - z) h + z h~ keeps h
        h = torch.randn(4, 3)
        assert torch.allclose(cell(torch.randn(4, 2), h), h, atol=1e-6)


def test_a_sequence_through_the_encoder_layer_is_the_papers_recursion():
    torch.manual_seed(1)
    layer = Recurrent("gru_bahdanau", 5, 4, bidirectional=True)
    x, lengths = torch.randn(2, 6, 5), torch.tensor([6, 4])
    with torch.no_grad():
        out, final = layer(x, lengths)
    for d, suffix in enumerate(("_l0", "_l0_reverse")):
        w = weights(layer.core, suffix)
        for b, n in enumerate(lengths.tolist()):
            seq = x[b, :n].double().numpy()
            if d:
                seq = seq[::-1]
            h, hs = np.zeros(4), []
            for x_t in seq:
                h = paper_step(x_t, h, *w)
                hs.append(h)
            hs = np.stack(hs if not d else hs[::-1])
            np.testing.assert_allclose(out[b, :n, 4 * d : 4 * (d + 1)].double().numpy(), hs, atol=1e-6)
            np.testing.assert_allclose(final[d, b].double().numpy(), h, atol=1e-6)
    assert (out[1, 4:] == 0).all()  # padding stays zero


def test_the_paper_models_use_it_and_the_other_variants_keep_pytorchs():
    assert config("rnnsearch-50").gru == "bahdanau" and config("rnnencdec-50").gru == "bahdanau"
    for name in ("seq2seq-small", "seq2seq-reverse-small", "luong-dot-small", "bahdanau-small", "rnnsearch-tiny"):
        assert config(name).gru == "pytorch", name
    model = build("rnnsearch-50", src_vocab_size=30, tgt_vocab_size=30, hidden_size=8, embed_dim=6, maxout_dim=4)
    assert isinstance(model.cell, BahdanauGRUCell) and model.encoder.rnn.cell == "gru_bahdanau"
    assert model.encoder.rnn.impl == "loop"
    names = {n for n, _ in model.named_parameters()}
    assert {"cell.weight_hh", "encoder.rnn.core.weight_hh_l0_reverse"} <= names  # nn.GRU's names, for paper_init
    H = 8
    for name in ("cell.weight_hh", "encoder.rnn.core.weight_hh_l0", "encoder.rnn.core.weight_hh_l0_reverse"):
        for block in dict(model.named_parameters())[name].detach().split(H, 0):  # U_r, U_z, U orthogonal
            assert torch.allclose(block @ block.T, torch.eye(H), atol=1e-5), name
    assert model.init_rules["cell.weight_hh"] == "orthogonal"


@pytest.mark.parametrize("name", ["rnnencdec-tiny", "rnnsearch-tiny"])
def test_the_paper_models_differ_from_pytorchs_gru_on_the_same_weights(name):
    """Step-by-step decoding against teacher forcing is checked for both GRUs in
    test_models_paper_rnn.py; here the two equations give different outputs from one set of weights."""
    torch.manual_seed(2)
    model = build(name, src_vocab_size=20, tgt_vocab_size=20, init="pytorch", gru="bahdanau").eval()
    assert isinstance(model.cell, BahdanauGRUCell)
    src, lengths = torch.randint(3, 20, (3, 6)), torch.tensor([6, 3, 5])
    tgt = torch.cat([torch.full((3, 1), BOS), torch.randint(3, 20, (3, 4))], 1)
    pytorch_gru = build(name, src_vocab_size=20, tgt_vocab_size=20, init="pytorch")
    pytorch_gru.load_state_dict(model.state_dict())  # the same weights, PyTorch's equations
    with torch.no_grad():
        logits, _ = model(src, lengths, tgt)
        other, _ = pytorch_gru.eval()(src, lengths, tgt)
    assert (other - logits).abs().max() > 1e-3


def test_bad_gru_choices_say_what_to_set():
    with pytest.raises(ModelError, match="gru must be one of"):
        config("rnnsearch-tiny", gru="cho")
    with pytest.raises(ModelError, match="set cell 'gru' or gru 'pytorch'"):
        config("rnnsearch-50", cell="lstm")
    with pytest.raises(ModelError, match="set update_bias null"):
        config("rnnsearch-50", update_bias=1.0)
