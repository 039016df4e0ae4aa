"""``@component(..., summary=[...])``: the key patterns a component declares for its summary, their
syntax, their expansion, and what the registry refuses when it registers them."""

from __future__ import annotations

import pytest

from components import registry as reg
from components.summary_keys import Keys, Placeholder, bucket_names, expand, parse


def test_a_pattern_splits_into_text_and_placeholders():
    [head, ph, tail] = parse("acc/{checkpoints.data.lag,seq_len}/len_")
    assert head == "acc/" and tail == "/len_"
    assert ph == Placeholder((("checkpoints",), ("data",), ("lag", "seq_len")), None, "{checkpoints.data.lag,seq_len}")
    assert ph.parameter == "checkpoints"
    assert parse("count/len_{buckets|bucket_names}")[1].transform == "bucket_names"


@pytest.mark.parametrize(
    "pattern, why",
    [
        ("acc/{}", r"\{\} is no placeholder"),
        ("acc/{a b}", "is no placeholder"),
        ("acc/{buckets|bucket_name}", "unknown transform 'bucket_name' .did you mean 'bucket_names'"),
        ("acc lag", "' ' cannot be part of a metric key"),
        ("", "non-empty text"),
    ],
)
def test_a_malformed_pattern_says_what_is_wrong(pattern, why):
    with pytest.raises(ValueError, match=why):
        parse(pattern)


def test_placeholders_expand_to_every_combination_written_as_key_parts():
    values = {"models": ["rnn", "arch=lstm,seed=0"], "lengths": [8, 16]}
    keys = expand("time_s/{models}/T_{lengths}", lambda ph: values[ph.parameter])
    assert keys == ["time_s/rnn/T_8", "time_s/rnn/T_16", "time_s/arch_lstm_seed_0/T_8", "time_s/arch_lstm_seed_0/T_16"]
    assert expand("acc/{models}", lambda ph: None) == ["acc/*"]  # not known before the step runs
    assert expand("error/{overrides}", lambda ph: []) == []  # null: no such key


def test_the_bucket_names_transform_names_the_probes_buckets():
    from components.probes.decode import bucket_names as probes

    assert bucket_names([1, 10, 20]) == probes([1, 10, 20]) == ["1-9", "10-19", "20-inf"]
    with pytest.raises(ValueError, match="increasing"):
        bucket_names([10, 5])


def test_keys_hold_the_written_keys_and_match_the_patterns():
    keys = Keys(["rho", "grad/d_*", "acc/lstm/len_1-9", "acc/rnn/len_1-9"])
    assert dict(keys) == {"rho": 1.0, "acc/lstm/len_1-9": 1.0, "acc/rnn/len_1-9": 1.0}
    assert keys.has("rho") and keys.has("grad/d_5") and not keys.has("grad/x")
    assert keys.matching("acc/*/len_1-9") == {"lstm": 1.0, "rnn": 1.0}
    assert keys.matching("grad/*") == {"*": 1.0}  # only a pattern may match it
    assert keys.matching("loss/*") == {}
    assert Keys(["*"]).has("anything") and Keys(["*"]).matching("x/*")


# -- the registry's view of a declaration ------------------------------------------------------------------
def _register(**kw):
    def fn(ctx, *, models: dict[str, str], buckets: list[int] = [1, 10]) -> dict:  # noqa: B006
        return {"summary": {}}

    return reg.component("sktest.probe", outputs=["summary"], **kw)(fn).component


@pytest.fixture
def clean():
    yield
    reg._REGISTRY.pop("sktest.probe", None)


def test_a_declared_summary_is_kept_with_the_component(clean):
    comp = _register(summary=["n", "acc/{models}", "count/len_{buckets|bucket_names}"])
    assert comp.summary_keys == ("n", "acc/{models}", "count/len_{buckets|bucket_names}")
    assert _register().summary_keys is None  # declares nothing: its claims are checked for step and label only


@pytest.mark.parametrize(
    "summary, why",
    [
        ("acc", "summary= takes a list of key patterns"),
        (["acc/{model}"], r"\{model\} names no parameter of it \(buckets, models\) .did you mean 'models'"),
        (["acc/{models|sorted}"], "unknown transform 'sorted'"),
        (["acc/{models}?"], "'\\?' cannot be part of a metric key"),
    ],
)
def test_a_bad_summary_declaration_is_refused_when_registered(clean, summary, why):
    with pytest.raises(reg.ComponentError, match=why):
        _register(summary=summary)


def test_a_references_declaration_names_parameters_and_a_function(clean):
    decl = {"sources": "models", "in": ["buckets"], "check": "mymod:check"}
    assert _register(references=decl).references == decl
    with pytest.raises(reg.ComponentError, match="references= names 'claims', which is none of its parameters"):
        _register(references={**decl, "in": ["claims"]})
    with pytest.raises(reg.ComponentError, match="references= takes"):
        _register(references={"sources": "models", "check": "no function"})


def test_the_shipped_components_a_scorecard_reads_declare_their_summaries():
    readers = (
        "eval.bleu eval.classify probe.capacity probe.timing probe.param_count probe.attention_entropy "
        "probe.long_lag probe.permutation probe.gradient_decay probe.attention_maps probe.position_similarity "
        "train.model"
    ).split()
    assert [n for n in readers if reg.get(n).summary_keys is None] == []
    assert reg.get("report.scorecard").references["sources"] == "measurements"
