"""Each sentence's output limit is a * its own source length + b, whatever else is in its batch."""

import pytest
import torch

from components.models import build
from components.models.decoding import output_limits, translate
from components.models.registry import ModelError

torch.set_num_threads(1)
META = {"pad_id": 0, "bos_id": 1, "eos_id": 2}
MODELS = [("seq2seq-tiny", {}), ("rnnsearch-tiny", {"gru": "bahdanau"}), ("transformer-tiny", {})]


def _model(name: str, never_end: bool, **kw):
    """A random model; ``never_end``: pad, BOS and EOS are never chosen, so every output runs to its limit."""
    torch.manual_seed(0)
    model = build(name, src_vocab_size=20, tgt_vocab_size=20, dropout=0.0, **kw).eval()
    if never_end:
        banned = torch.zeros(20)
        banned[[0, 1, 2]] = -1e4
        out = model.generator if hasattr(model, "generator") else model.out
        out.register_forward_hook(lambda _m, _i, logits: logits + banned)
    return model


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("name,kw", MODELS, ids=[m for m, _ in MODELS])
def test_a_short_source_stops_at_its_own_limit_beside_a_long_one(name, kw, beam):
    model = _model(name, never_end=True, **kw)
    short, long = [5, 6], [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
    both = translate(model, [short, long], META, beam=beam, max_len_a=1.0, max_len_b=3)
    assert [len(o) for o in both] == [2 + 3, 12 + 3]  # unended at each one's own limit, not 15 for both
    assert translate(model, [short], META, beam=beam, max_len_a=1.0, max_len_b=3) == both[:1]


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("name,kw", MODELS, ids=[m for m, _ in MODELS])
def test_a_sentence_decodes_in_a_batch_as_it_does_alone(name, kw, beam):
    model = _model(name, never_end=False, **kw)
    g = torch.Generator().manual_seed(1)
    sources = [torch.randint(3, 20, (n,), generator=g).tolist() for n in (1, 3, 4, 7, 9, 12)]
    batched = translate(model, sources, META, beam=beam, max_len_a=0.5, max_len_b=2)
    alone = [translate(model, [s], META, beam=beam, max_len_a=0.5, max_len_b=2)[0] for s in sources]
    assert batched == alone
    assert all(len(o) <= int(0.5 * len(s) + 2) for o, s in zip(batched, sources))


def test_limits_are_per_sentence_and_checked():
    assert output_limits(torch.tensor([0, 3, 40]), 1.0, 50).tolist() == [50, 53, 90]
    assert output_limits(torch.tensor([0, 3]), 0.5, 0).tolist() == [1, 1]  # at least one token
    model = _model("seq2seq-tiny", never_end=True)
    src, lengths = torch.tensor([[5, 6, 0], [7, 8, 9]]), torch.tensor([2, 3])
    tokens, _ = model.greedy(src, lengths, torch.tensor([1, 4]), 1, 2)
    assert tokens.shape == (2, 4) and (tokens[0, 1:] == 0).all() and (tokens[1] > 2).all()
    with pytest.raises(ModelError, match=r"one per sentence \(2,\), got \(3,\)"):
        model.beam_search(src, lengths, 2, torch.tensor([4, 4, 4]), 1, 2)
    with pytest.raises(ModelError, match="max_len must be >= 1"):
        model.greedy(src, lengths, torch.tensor([0, 4]), 1, 2)
