"""Bounds a component declares with its parameters: check refuses a value outside them at the line that
sets it, in words ("steps must be at least 0; got -1"), and a direct call refuses it too."""

from __future__ import annotations

import pytest
from pydantic import ValidationError, create_model

from components import ComponentError, Context, component
from components.bounds import Count, Fraction, Positive, Probability, Size, Sizes, refusal
from flows.language.errors import PipelineInvalid
from flows.plan.build import build


def _words(annotation, value) -> str:
    model = create_model("M", x=(annotation, ...))
    with pytest.raises(ValidationError) as e:
        model.model_validate({"x": value})
    return refusal(e.value.errors()[0])


@pytest.mark.parametrize(
    "annotation,value,words",
    [
        (Size, 0, "x must be at least 1; got 0"),
        (Count, -1, "x must be at least 0; got -1"),
        (Positive, -0.5, "x must be greater than 0; got -0.5"),
        (Probability, 1.5, "x must be at most 1; got 1.5"),
        (Fraction, 1.0, "x must be less than 1; got 1.0"),
        (Sizes, [], "x must not be empty; got []"),
        (list[Size], [4, 0], "x[1] must be at least 1; got 0"),
    ],
)
def test_a_bound_is_said_in_words_with_the_value_given(annotation, value, words):
    assert _words(annotation, value) == words


def test_a_wrong_type_is_no_bound():
    model = create_model("M", x=(Size, ...))
    with pytest.raises(ValidationError) as e:
        model.model_validate({"x": "many"})
    assert refusal(e.value.errors()[0]) is None


def _check(tmp_path, text: str, sets: list[str] | None = None) -> list[str]:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(PipelineInvalid) as e:
        build(path, sets=sets)
    return [f"{err.line}:{err.col}: {err.message}" for err in e.value.errors]


TRAIN = "name: t\nparams: {steps: 5}\nsteps:\n  a:\n    uses: train.model\n    with: {data: x, model: lstm-small, %s}\n"


def test_check_refuses_a_value_out_of_bounds_at_its_line(tmp_path):
    assert _check(tmp_path, TRAIN % "steps: -1, lr: -0.001, betas: [0.9, 1.0], optimizer: adamw") == [
        "6:47: step 'a' (train.model): steps must be at least 0; got -1",
        "6:55: step 'a' (train.model): lr must be greater than 0; got -0.001",
        "6:70: step 'a' (train.model): betas[1] must be less than 1; got 1",  # read as JSON: 1.0 is 1
    ]


def test_a_param_out_of_bounds_is_named_where_it_is_used(tmp_path):
    assert _check(tmp_path, TRAIN % "steps: '${params.steps}'", ["steps=-1"]) == [
        "6:48: step 'a' (train.model): steps must be at least 0; got -1 (from ${params.steps}, set by --set steps=-1)"
    ]


def test_an_unknown_choice_gets_a_did_you_mean(tmp_path):
    assert _check(tmp_path, TRAIN % "clip: nrom") == [
        "6:46: step 'a' (train.model): clip must be 'norm', 'value' or 'none'; got 'nrom' (did you mean 'norm'?)"
    ]


def test_a_value_is_read_as_json_reads_it(tmp_path):
    base = "name: t\nsteps:\n  a: {uses: data.adding, with: {seq_len: %s}}\n"
    assert _check(tmp_path, base % "'30'") == [
        "3:43: step 'a': parameter 'seq_len' of data.adding expects an integer, got a string ('30');"
        " write it without quotes"
    ]
    assert _check(tmp_path, base % "true") == [
        "3:42: step 'a': parameter 'seq_len' of data.adding expects an integer, got true"
    ]
    (tmp_path / "p.yaml").write_text(base % "30.0")
    assert len(build(tmp_path / "p.yaml").instances) == 1  # 30.0 is the integer 30, as JSON Schema says


@component("boundstest.sized", outputs=["n"])
def _sized(ctx, *, n: Size = 1, p: Probability = 0.5) -> dict:
    """Return n."""
    return {"n": n}


def test_a_direct_call_refuses_a_value_out_of_bounds_in_the_same_words(tmp_path):
    with pytest.raises(ComponentError) as e:
        _sized.component(Context(tmp_path), n=0, p=2)
    assert str(e.value) == "boundstest.sized: n must be at least 1; got 0; p must be at most 1; got 2"
    assert _sized.component(Context(tmp_path), n=2) == {"n": 2}


def test_a_parameter_is_listed_with_its_bounds():
    from components import get
    from flows.plan.build import type_name

    listed = {name: type_name(ann) for name, (ann, _, _) in get("train.model").parameters().items()}
    assert listed["steps"] == "an integer >= 0" and listed["lr"] == "a number > 0"
    assert listed["label_smoothing"] == "a number in [0, 1]" and listed["prefetch"] == "an integer >= 0 or null"
    assert listed["betas"] == "a list of numbers in [0, 1) (2 items)"
    assert type_name(get("probe.param_count").parameters()["lengths"][0]) == "a list of integers >= 1 (non-empty)"
    assert type_name(Sizes) == "a list of integers >= 1 (non-empty)" and type_name(list[int]) == "a list of integers"
