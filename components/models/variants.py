"""Named variants, tiny (tests, CPU) to the papers' sizes; each sets sizes and names its family builder."""
from __future__ import annotations

from components.models.mlp import MLP, MLPConfig
from components.models.recurrent_model import RecurrentConfig, build_recurrent
from components.models.registry import variant

# -- one-to-one baseline (B1) ------------------------------------------------------------------------


@variant("mlp-small", MLP)
def mlp_small():
    """MLP over a fixed 32-step window: cannot take longer inputs (B1)."""
    return MLPConfig()


# -- recurrent (B1, B2) ------------------------------------------------------------------------------


def _rnn(cell, **kw):
    return RecurrentConfig(cell=cell, **kw)


@variant("rnn-tiny", build_recurrent)
def rnn_tiny():
    """Vanilla tanh RNN, hidden 16 (tests)."""
    return _rnn("rnn", embed_dim=8, hidden_size=16)


@variant("rnn-small", build_recurrent)
def rnn_small():
    """Vanilla tanh RNN, hidden 64 (quick profile probes)."""
    return _rnn("rnn")


@variant("lstm-tiny", build_recurrent)
def lstm_tiny():
    """LSTM with forget gate, hidden 16 (tests)."""
    return _rnn("lstm", embed_dim=8, hidden_size=16)


@variant("lstm-small", build_recurrent)
def lstm_small():
    """LSTM with forget gate (bias 1.0), hidden 64."""
    return _rnn("lstm")


@variant("lstm1997-small", build_recurrent)
def lstm1997_small():
    """1997 LSTM: input/output gates and constant error carousel, no forget gate; hidden 64."""
    return _rnn("lstm1997")


@variant("gru-tiny", build_recurrent)
def gru_tiny():
    """GRU, hidden 16 (tests)."""
    return _rnn("gru", embed_dim=8, hidden_size=16)


@variant("gru-small", build_recurrent)
def gru_small():
    """GRU, hidden 64."""
    return _rnn("gru")


@variant("bilstm-small", build_recurrent)
def bilstm_small():
    """Bidirectional 2-layer LSTM tagger, hidden 64 per direction."""
    return _rnn("lstm", bidirectional=True, num_layers=2, head="many_to_many")


@variant("lstm-2x256", build_recurrent)
def lstm_2x256():
    """Two-layer LSTM, hidden 256 (standard profile)."""
    return _rnn("lstm", embed_dim=128, hidden_size=256, num_layers=2, dropout=0.2)


@variant("lstm-generator-small", build_recurrent)
def lstm_generator_small():
    """One-to-many LSTM: generate out_len steps from one input vector."""
    return _rnn("lstm", head="one_to_many")
