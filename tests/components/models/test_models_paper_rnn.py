"""RNNencdec-50 and RNNsearch-50 as Bahdanau et al. (2015) built them: one decoder, two sources of context."""

import pytest
import torch
import torch.nn.functional as F

from components.models import ModelError, build
from components.models.init import orthogonal_blocks
from components.models.rnnsearch import BackwardBridge, RNNEncDec, RNNPaperConfig, RNNSearch

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

torch.set_num_threads(1)
BOS, EOS = 1, 2
PAPER = {"src_vocab_size": 90, "tgt_vocab_size": 80}  # the papers' widths, a small vocabulary


@pytest.fixture(scope="module")
def paper():
    torch.manual_seed(0)
    return build("rnnsearch-50", **PAPER), build("rnnencdec-50", **PAPER)


def _shapes(model):
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def test_the_paper_pair_shares_embedding_620_gru_1000_and_maxout_500(paper):
    search, encdec = paper
    s, e = _shapes(search), _shapes(encdec)
    for shapes in (s, e):
        assert shapes["embed.weight"] == (80, 620) and shapes["encoder.embed.weight"] == (90, 620)
        assert shapes["cell.weight_hh"] == (3000, 1000) and shapes["out.weight"] == (80, 500)
        assert shapes["encoder.rnn.core.weight_hh_l0"] == (3000, 1000)
    # the context is h_j = [h->_j; h<-_j] (2000) for RNNsearch, c = tanh(V h_T) (1000) for RNNencdec
    assert s["cell.weight_ih"] == (3000, 620 + 2000) and e["cell.weight_ih"] == (3000, 620 + 1000)
    assert s["deep.weight"] == (1000, 1000 + 620 + 2000) and e["deep.weight"] == (1000, 1000 + 620 + 1000)
    only_search = set(s) - set(e)
    only_encdec = set(e) - set(s)
    assert only_search == {
        "attn.w1.weight",
        "attn.w2.weight",
        "attn.w2.bias",
        "attn.v.weight",
        "encoder.bridge_h.proj.weight",
        "encoder.bridge_h.proj.bias",
        *(f"encoder.rnn.core.{k}_l0_reverse" for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
    }
    assert only_encdec == {"context.weight", "context.bias", "bridge.weight", "bridge.bias"}
    assert s["attn.w1.weight"] == (1000, 1000) and s["attn.w2.weight"] == (1000, 2000)
    assert s["encoder.bridge_h.proj.weight"] == (1000, 1000)  # s_0 = tanh(W_s h<-_1): the backward state only


def test_with_the_same_encoder_the_two_differ_only_in_attention_against_a_fixed_context():
    search = RNNSearch(RNNPaperConfig(attention="bahdanau", embed_dim=8, hidden_size=16, maxout_dim=8))
    encdec = RNNEncDec(RNNPaperConfig(attention="none", embed_dim=8, hidden_size=16, maxout_dim=8))
    s, e = _shapes(search), _shapes(encdec)
    assert {k: v for k, v in s.items() if not k.startswith("attn.")} == {
        k: v for k, v in e.items() if not k.startswith(("context.", "bridge."))
    }


class FixedContext(torch.nn.Module):
    """Stands in for the attention: returns the given context at every step, whatever the query."""

    def __init__(self, c):
        super().__init__()
        self.c = c

    def prepare(self, values):
        return values

    def forward(self, query, keys, values, mask=None):
        B, T = query.shape[:2]
        return self.c[:, None].expand(B, T, -1), torch.full((B, T, keys.shape[1]), 1.0 / keys.shape[1])


def test_rnnsearch_fed_rnnencdecs_context_computes_rnnencdecs_outputs():
    """The forward-pass check: replace RNNsearch's c_i by RNNencdec's c and the decoders agree exactly."""
    torch.manual_seed(1)
    cfg = {"embed_dim": 8, "hidden_size": 16, "maxout_dim": 8, "src_vocab_size": 20, "tgt_vocab_size": 20}
    encdec = RNNEncDec(RNNPaperConfig(attention="none", init="pytorch", **cfg)).eval()
    search = RNNSearch(RNNPaperConfig(attention="bahdanau", init="pytorch", **cfg)).eval()
    search.load_state_dict({k: v for k, v in encdec.state_dict().items() if k in search.state_dict()}, strict=False)
    src, lengths = torch.randint(3, 20, (4, 7)), torch.tensor([7, 4, 6, 2])
    tgt = torch.randint(3, 20, (4, 5))
    with torch.no_grad():
        memory = encdec.encode(src, lengths)
        search.attn = FixedContext(memory["context"])
        search.init_state = lambda _m: encdec.init_state(memory)
        want, none = encdec(src, lengths, tgt)
        got, _ = search(src, lengths, tgt)
    assert none is None
    assert torch.allclose(want, got, atol=1e-6)
    assert not torch.allclose(want[:, 0], want[:, 1], atol=1e-3)  # the outputs move with the target prefix


@pytest.mark.parametrize("gru", ["pytorch", "bahdanau"])  # PyTorch's GRU equations and Bahdanau 2015's
@pytest.mark.parametrize("name", ["rnnencdec-tiny", "rnnsearch-tiny"])
def test_stepwise_decoding_gives_the_teacher_forced_log_probs(name, gru):
    torch.manual_seed(2)
    model = build(name, src_vocab_size=20, tgt_vocab_size=20, init="pytorch", gru=gru).eval()
    src, lengths = torch.randint(3, 20, (3, 6)), torch.tensor([6, 3, 5])
    tgt = torch.cat([torch.full((3, 1), BOS), torch.randint(3, 20, (3, 4))], 1)
    with torch.no_grad():
        logits, _ = model(src, lengths, tgt)
        memory = model.encode(src, lengths)
        state = model.init_state(memory)
        for i in range(tgt.shape[1]):
            logp, state, _ = model.step(tgt[:, i], state, memory)
            assert torch.allclose(logp, F.log_softmax(logits[:, i], -1), atol=1e-5)
    out = model.beam_search(src, lengths, 3, 8, BOS, EOS)
    assert out.shape[0] == 3 and out.shape[1] <= 8


def test_the_papers_initialisation():
    torch.manual_seed(3)
    model = build("rnnsearch-tiny", src_vocab_size=30, tgt_vocab_size=30, hidden_size=64, embed_dim=96, maxout_dim=32)
    params = {n: p.detach() for n, p in model.named_parameters()}
    H = 64
    for name in ("cell.weight_hh", "encoder.rnn.core.weight_hh_l0", "encoder.rnn.core.weight_hh_l0_reverse"):
        for block in params[name].split(H, 0):  # U_r, U_z, U: each orthogonal on its own
            assert torch.allclose(block @ block.T, torch.eye(H), atol=1e-5)
    for name, p in params.items():
        if "bias" in name.rsplit(".", 1)[-1]:
            assert (p == 0).all(), name
    assert (params["attn.v.weight"] == 0).all()  # v_a zero: attention starts uniform
    for name in ("attn.w1.weight", "attn.w2.weight"):
        assert 0.0008 < float(params[name].std()) < 0.0012, name  # N(0, 0.001^2)
    for name in ("cell.weight_ih", "deep.weight", "out.weight", "encoder.rnn.core.weight_ih_l0"):
        assert 0.009 < float(params[name].std()) < 0.011, name  # N(0, 0.01^2)
    assert (model.embed.weight[model.config.pad_id] == 0).all()
    assert model.init_rules["cell.weight_hh"] == "orthogonal" and model.init_rules["attn.v.weight"] == "zero"


def test_pytorch_initialisation_stays_selectable_and_differs():
    torch.manual_seed(4)
    model = build("rnnsearch-tiny", init="pytorch", init_state="both")
    block = model.cell.weight_hh.detach()[:16]
    assert not torch.allclose(block @ block.T, torch.eye(16), atol=1e-2)
    assert float(model.attn.v.weight.detach().abs().sum()) > 0 and model.init_rules == {}
    assert not isinstance(model.encoder.bridge_h, BackwardBridge)  # s_0 from both directions
    assert isinstance(build("rnnsearch-tiny").encoder.bridge_h, BackwardBridge)


def test_the_initial_state_reads_only_the_backward_encoder_state():
    torch.manual_seed(5)
    model = build("rnnsearch-tiny", src_vocab_size=20, tgt_vocab_size=20).eval()
    joined = torch.randn(1, 2, 32)
    moved = joined.clone()
    moved[..., :16] += 1.0  # the forward direction's final state
    with torch.no_grad():
        assert torch.equal(model.encoder.bridge_h(joined), model.encoder.bridge_h(moved))


def test_bad_paper_configs_say_what_is_wrong():
    with pytest.raises(ModelError, match="init must be one of"):
        build("rnnsearch-tiny", init="xavier")
    with pytest.raises(ModelError, match="init_state must be one of"):
        build("rnnsearch-tiny", init_state="forward")
    with pytest.raises(ModelError, match="RNNencdec: none"):
        build("rnnencdec-tiny", attention="dot")
    with pytest.raises(ModelError, match="reads the source one way"):
        build("rnnencdec-tiny", bidirectional_encoder=True)
    with pytest.raises(ModelError, match=r"\(G\*4, 4\)"):
        orthogonal_blocks(torch.zeros(6, 4), 4)
