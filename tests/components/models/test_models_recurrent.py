"""Recurrent family: our cell loops match nn.RNN/LSTM/GRU with copied weights; padding; gate biases."""

import pytest
import torch
from torch import nn

from components.models import ModelError, build
from components.models.recurrent import Recurrent

torch.set_num_threads(1)
REFERENCE = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_cell_loop_matches_pytorch_with_copied_weights(cell, layers, bidirectional):
    torch.manual_seed(0)
    ref = REFERENCE[cell](5, 7, layers, batch_first=True, bidirectional=bidirectional)
    ours = Recurrent(cell, 5, 7, layers, bidirectional, impl="loop")
    ours.core.load_state_dict(ref.state_dict())
    x = torch.randn(3, 6, 5)
    out_ref, final_ref = ref(x)
    out, final = ours(x)
    assert torch.allclose(out, out_ref, atol=1e-6)
    for a, b in zip(final if cell == "lstm" else [final], final_ref if cell == "lstm" else [final_ref]):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "lstm1997", "gru"])
@pytest.mark.parametrize("impl", ["fused", "loop"])
def test_padded_batch_equals_sequences_one_by_one(cell, impl):
    if impl == "fused" and cell == "lstm1997":
        pytest.skip("the 1997 LSTM has no fused kernel")
    torch.manual_seed(0)
    rnn = Recurrent(cell, 4, 6, num_layers=2, bidirectional=True, impl=impl)
    lengths = torch.tensor([5, 2, 4])
    x = torch.randn(3, 5, 4)
    out, final = rnn(x, lengths)
    h_n = final[0] if cell.startswith("lstm") else final
    for b, n in enumerate(lengths.tolist()):
        out_b, final_b = rnn(x[b : b + 1, :n])
        h_b = final_b[0] if cell.startswith("lstm") else final_b
        assert torch.allclose(out[b, :n], out_b[0], atol=1e-6)
        assert torch.allclose(h_n[:, b], h_b[:, 0], atol=1e-6)
        assert out[b, n:].abs().max() == 0 if n < 5 else True


def test_fused_and_loop_agree_on_the_same_weights():
    torch.manual_seed(0)
    model = build("bilstm-small", vocab_size=11, num_classes=3)
    x, lengths = torch.randint(1, 11, (4, 9)), torch.tensor([9, 3, 7, 1])
    fused = model.rnn(model.input(x), lengths, impl="fused")[0]
    assert torch.allclose(model.hidden_states(x, lengths), fused, atol=1e-5)


def test_forget_and_update_gate_bias_init():
    lstm = build("lstm-small", vocab_size=10, num_classes=8, forget_bias=3.0).rnn.core
    H = 64
    assert torch.all(lstm.bias_ih_l0[H : 2 * H] + lstm.bias_hh_l0[H : 2 * H] == 3.0)
    assert build("lstm-small").config.forget_bias == 1.0
    gru = build("gru-small", update_bias=2.5).rnn.core
    assert torch.all(gru.bias_ih_l0[H : 2 * H] + gru.bias_hh_l0[H : 2 * H] == 2.5)


def test_1997_lstm_has_no_forget_gate_so_its_cell_state_only_accumulates():
    torch.manual_seed(0)
    rnn = Recurrent("lstm1997", 3, 4)
    assert rnn.core.weight_hh_l0.shape == (3 * 4, 4)  # gates i, g, o only
    with torch.no_grad():  # with g saturated at +1 and i>0, c must grow every step (no decay)
        rnn.core.bias_ih_l0[4:8].fill_(50.0)
    _, (h, c) = rnn(torch.zeros(1, 30, 3))
    c_short = rnn(torch.zeros(1, 10, 3))[1][1]
    assert torch.all(c > c_short + 5)


def test_taps_give_gradients_per_step_and_one_to_many_shape():
    model = build("rnn-tiny")
    x = torch.randint(1, 16, (2, 12))
    taps = torch.zeros(2, 12, 8, requires_grad=True)
    model(x, taps=taps).sum().backward()
    norms = taps.grad.norm(dim=-1)[0]
    assert norms[-1] > 0 and norms[0] > 0
    gen = build("lstm-generator-small", input_dim=5, vocab_size=0, out_len=7)
    assert gen(torch.randn(3, 5)).shape == (3, 7, 8)
    assert gen.hidden_states(torch.randn(3, 5)).shape == (3, 7, 64)


def test_bad_inputs_say_what_is_expected():
    model = build("lstm-tiny")
    with pytest.raises(ModelError, match=r"lengths must lie in \[1, 4\]"):
        model(torch.randint(0, 16, (2, 4)), torch.tensor([4, 0]))
    with pytest.raises(ModelError, match="out of range for vocab_size 16"):
        model(torch.full((2, 4), 16))
    with pytest.raises(ModelError, match="no fused PyTorch kernel"):
        build("lstm1997-small", impl="fused")
    with pytest.raises(ModelError, match=r"cell must be one of .*did you mean 'gru'"):
        build("lstm-small", cell="gur")
