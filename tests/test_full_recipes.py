"""The full profile states the papers' recipes as data: the resolved step parameters say what was run."""
from pathlib import Path

import pytest

from flows.plan import build

PIPELINE = Path(__file__).resolve().parents[1] / "pipelines" / "four_bottlenecks.yaml"
SHARED = ["max_tokens", "accumulate", "optimizer", "lr", "betas", "schedule", "warmup", "clip", "clip_value",
          "label_smoothing", "steps", "bf16"]


@pytest.fixture(scope="module")
def full():
    plan = build(PIPELINE, profile="full")
    by_step = {}
    for inst in plan.instances.values():
        by_step.setdefault(inst.step.id, []).append(inst)
    return by_step


def test_rnnencdec_and_rnnsearch_share_optimiser_batch_and_schedule_at_the_papers_sizes(full):
    encdec = next(i.params for i in full["mt"] if i.bindings["arch"] == "seq2seq-small")
    search = full["mt_bahdanau"][0].params
    assert {k: encdec.get(k) for k in SHARED} == {k: search.get(k) for k in SHARED}
    assert encdec["overrides"] == {"hidden_size": 1000, "embed_dim": 620}
    assert search["overrides"] == {"hidden_size": 1000, "embed_dim": 620, "attention_dim": 1000, "maxout_dim": 500}
    assert encdec["steps"] == 100000 and encdec["max_tokens"] == 2500
    assert len(full["mt_bahdanau"]) == len([i for i in full["mt"] if i.bindings["arch"] == "seq2seq-small"])


def test_the_data_is_wmt14_with_a_shared_37k_bpe_and_the_50_word_filter(full):
    data = full["mt_data"][0].params
    assert (data["dataset"], data["vocab_size"], data["max_len"], data.get("joint", True)) == ("wmt14", 37000, 50, True)


def test_claim_8_has_a_deep_reversed_lstm_and_bleu_uses_beam_4_with_penalty_0_6(full):
    assert {i.bindings["arch"] for i in full["mt"]} >= {"seq2seq-small", "seq2seq-reverse-small", "sutskever-4x1000"}
    for step in ("bleu", "bleu_bahdanau"):
        p = full[step][0].params
        assert (p["beam"], p["length_penalty"], p["tokenize"]) == (4, 0.6, "13a")
