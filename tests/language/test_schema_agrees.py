"""The JSON Schema editors check pipelines with agrees with `bottlenecks check`: every pipeline check
accepts validates under a standard validator, one check refuses for its shape (a key, a type, a
bound, a choice) is refused by the schema too, and the declared bounds are in the schema."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from flows.language.errors import PipelineInvalid
from flows.language.schema import pipeline_schema
from flows.plan.build import build

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "pipelines").glob("*.yaml"))

# references in a list mixed with a mapping of references, inside a list of numbers, from a matrix
REFS_ANYWHERE = """\
name: refs-anywhere
params: {seeds: [0, 1], steps: 20, beta2: 0.98, edge: 10}
steps:
  data: {uses: data.synthetic_translation, with: {n_train: 50, n_valid: 10, n_test: 10}}
  mt:
    uses: train.model
    with: {data: "${data.dataset}", model: seq2seq-small, steps: "${params.steps}", seed: "${matrix.seed}",
           betas: [0.9, "${params.beta2}"]}
    matrix: {seed: "${params.seeds}"}
  tr:
    uses: train.model
    with: {data: "${data.dataset}", model: bahdanau-small, steps: 10}
  bleu:
    uses: eval.bleu
    with: {checkpoints: ["${mt.checkpoint}", {attention: "${tr.checkpoint}"}], buckets: [1, "${params.edge}"]}
"""

EVERY_KEY = """\
name: every-key
description: every key the language has
params: {lag: 5}
settings: {workers: 1}
default_profile: quick
profiles:
  quick: {description: small, params: {lag: 3}, settings: {workers: 1}, steps: {recall: {with: {n_train: 20}}}}
schedule: {cron: "0 2 * * *", timezone: UTC, profile: quick}
steps:
  recall:
    uses: data.delayed_recall
    with: {lag: "${params.lag}", vocab: 4, target: tag, n_train: 40, n_valid: 8, n_test: 8}
    retries: 1
    retry_delay: 0.5
    cache: false
    description: the data
  count:
    uses: probe.param_count
    with: {model: lstm-small, lengths: [8, 16]}
    needs: recall
    resources: {gpu: 0}
  grad:
    uses: probe.gradient_decay
    with: {model: "${matrix.arch}", length: 10}
    matrix: {arch: [rnn-small, lstm-small]}
    needs: [recall, count]
  own:
    uses: tests.support.engine_components:numbers
    with: {n: 3}
"""

# the shipped pipelines pass check in tests/pipelines/test_pipelines.py; here the schema must accept them
SHIPPED_TEXT = {p.name: p.read_text(encoding="utf-8") for p in SHIPPED}
ACCEPTED = {
    "refs anywhere": REFS_ANYWHERE,
    "every key": EVERY_KEY,
    "keys left empty": "name: t\ndescription:\nparams:\nsettings:\nprofiles:\n  q: {params: , steps: {a: }}\n"
    "steps:\n  a: {uses: data.adding, with: , matrix: , description: }\n",
    "a whole number written 30.0": "name: t\nsteps:\n  a: {uses: data.adding, with: {seq_len: 30.0}}\n",
}


def _train(with_: str) -> str:
    return f"name: t\nsteps:\n  d: {{uses: data.adding}}\n  a:\n    uses: train.model\n    with: {{data: x, {with_}}}\n"


REFUSED = {
    "a list at the top": "- name: t\n",
    "no steps": "name: t\n",
    "empty steps": "name: t\nsteps: {}\n",
    "unknown top-level key": "name: t\nparms: {}\nsteps:\n  a: {uses: data.adding}\n",
    "name is a number": "name: 5\nsteps:\n  a: {uses: data.adding}\n",
    "unknown step key": "name: t\nsteps:\n  a: {uses: data.adding, wiht: {}}\n",
    "step without uses": "name: t\nsteps:\n  a: {with: {seq_len: 30}}\n",
    "step id with a space": "name: t\nsteps:\n  a b: {uses: data.adding}\n",
    "unknown component": "name: t\nsteps:\n  a: {uses: data.addding}\n",
    "unknown parameter": "name: t\nsteps:\n  a: {uses: data.adding, with: {seq_lenn: 30}}\n",
    "parameter of the wrong type": _train("model: lstm-small, steps: many"),
    "steps below its bound": _train("model: lstm-small, steps: -1"),
    "a negative learning rate": _train("model: lstm-small, lr: -0.001"),
    "a probability above 1": _train("model: lstm-small, label_smoothing: 1.5"),
    "an unknown choice": _train("model: lstm-small, optimizer: adamx"),
    "one beta": _train("model: lstm-small, betas: [0.9]"),
    "an empty list of lengths": "name: t\nsteps:\n  a: {uses: probe.param_count, with: {model: gru-small, lengths: []}}"
    + "\n",
    "a data bound": "name: t\nsteps:\n  a: {uses: data.adding, with: {seq_len: 10}}\n",
    "an empty matrix axis": "name: t\nsteps:\n  a: {uses: data.adding, matrix: {s: []}, with: {seed: '${matrix.s}'}}\n",
    "a matrix axis that is no list": "name: t\nsteps:\n  a: {uses: data.adding, matrix: {s: 5}}\n",
    "negative retries": "name: t\nsteps:\n  a: {uses: data.adding, retries: -1}\n",
    "a negative GPU count": "name: t\nsteps:\n  a: {uses: data.adding, resources: {gpu: -1}}\n",
    "GPUs in words": "name: t\nsteps:\n  a: {uses: data.adding, resources: {gpu: two}}\n",
    "needs a number": "name: t\nsteps:\n  a: {uses: data.adding, needs: 5}\n",
    "unknown setting": "name: t\nsettings: {workrs: 1}\nsteps:\n  a: {uses: data.adding}\n",
    "unknown profile key": "name: t\nprofiles: {q: {parms: {}}}\nsteps:\n  a: {uses: data.adding}\n",
    "schedule without cron": "name: t\nschedule: {timezone: UTC}\nsteps:\n  a: {uses: data.adding}\n",
    "cache is text": "name: t\nsteps:\n  a: {uses: data.adding, cache: sometimes}\n",
    "a number in quotes": "name: t\nsteps:\n  a: {uses: data.adding, with: {seq_len: '30'}}\n",
    "true for a number": "name: t\nsteps:\n  a: {uses: data.adding, with: {seed: true}}\n",
    "a description that is a number": "name: t\ndescription: 5\nsteps:\n  a: {uses: data.adding}\n",
    "a time zone that is a number": "name: t\nschedule: {cron: '0 2 * * *', timezone: 5}\n"
    "steps:\n  a: {uses: data.adding}\n",
    "a matrix value twice": "name: t\nsteps:\n  a: {uses: data.adding, matrix: {s: [1, 1]}, "
    "with: {seed: '${matrix.s}'}}\n",
}


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft202012Validator(pipeline_schema())


def _check(text: str, tmp_path: Path) -> list[str]:
    """The errors `bottlenecks check` reports for ``text`` (none: accepted)."""
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        build(path)
    except PipelineInvalid as e:
        return [str(err) for err in e.errors]
    return []


@pytest.mark.parametrize("name", list(SHIPPED_TEXT) + list(ACCEPTED))
def test_a_pipeline_check_accepts_validates_against_the_schema(name, validator, tmp_path):
    text = SHIPPED_TEXT.get(name) or ACCEPTED[name]
    if name in ACCEPTED:
        assert _check(text, tmp_path) == []
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(yaml.safe_load(text))]
    assert errors == []


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_pipeline_check_refuses_for_its_shape_is_refused_by_the_schema(name, validator, tmp_path):
    text = REFUSED[name]
    assert _check(text, tmp_path), "check accepted it"
    assert list(validator.iter_errors(yaml.safe_load(text))), "the schema accepted it"


def test_declared_bounds_and_choices_are_in_the_schema(validator):
    steps = validator.schema["properties"]["steps"]["additionalProperties"]["allOf"]
    train = next(c["then"] for c in steps if c["if"]["properties"]["uses"]["const"] == "train.model")
    props = train["properties"]["with"]["properties"]
    value = {name: prop["anyOf"][0] for name, prop in props.items()}  # the value's schema; anyOf[1] is a reference
    assert value["steps"]["minimum"] == 0 and value["batch_size"]["minimum"] == 1
    assert value["lr"]["exclusiveMinimum"] == 0
    assert value["label_smoothing"]["maximum"] == 1
    assert value["optimizer"]["enum"] == ["adam", "adamw", "sgd", "adadelta"]
    assert value["betas"]["minItems"] == value["betas"]["maxItems"] == 2
