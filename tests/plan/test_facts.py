"""Every step run carries the facts a user groups by (architecture, task, bottleneck, seed, profile) as
tags: the engine knows bottleneck, seed and profile; a component declares the rest with the parameter
that gives it (``group_by=``), shipped or a user's, and the engine names no component."""

import pytest

from flows.execute._step_runs import StepRuns
from flows.plan.build import build
from flows.plan.facts import facts, seed_axes
from tests.support.files import write

SHIPPED = """\
name: grouped
profiles: {quick: {description: small}}
default_profile: quick
steps:
  recall: {uses: data.delayed_recall, with: {lag: 5}}
  train:
    uses: train.model
    with: {data: "${recall.dataset}", model: "${matrix.arch}", steps: 2, seed: "${matrix.seed}"}
    matrix: {arch: [rnn-tiny, lstm-tiny], seed: [0, 1]}
"""


def test_a_training_run_is_tagged_with_its_architecture_task_bottleneck_seed_and_profile(tmp_path):
    plan = build(write(tmp_path, SHIPPED))
    inst = plan.instances["train[arch=lstm-tiny,seed=1]"]
    assert facts(plan, inst) == {
        "architecture": "lstm-tiny",  # train.model declares group_by={"architecture": "model", ...}
        "task": "recall",  # the data step it reads
        "bottleneck": "B2",  # the trainer names none: the one of the data it trains on
        "seed": "1",
        "profile": "quick",
    }
    tags = StepRuns(plan, tracker=None, parent_run_id="p").tags(inst)
    assert {k: tags[k] for k in ("architecture", "task", "bottleneck", "seed", "profile")} == facts(plan, inst)
    assert tags["matrix.arch"] == "lstm-tiny"  # the matrix stays as it was
    assert facts(plan, plan.instances["recall"]) == {"bottleneck": "B2", "profile": "quick"}


USER_MODULE = """
from components import Context, component


@component("lab.fit", outputs=["summary"], bottleneck="B4", group_by={"architecture": "net", "task": "corpus"})
def fit(ctx: Context, *, net: str, corpus: str = "", seed: int = 0) -> dict:
    return {"summary": {}}
"""


def test_a_users_component_declares_its_facts_as_the_shipped_trainer_does(tmp_path, monkeypatch):
    (tmp_path / "lab_steps.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    text = """\
        name: lab
        steps:
          fit:
            uses: "lab_steps:fit"
            with: {net: "${matrix.net}", corpus: wiki, seed: "${matrix.seed}"}
            matrix: {net: [mamba, rwkv], seed: [3]}
        """
    plan = build(write(tmp_path, text))
    assert facts(plan, plan.instances["fit[net=rwkv,seed=3]"]) == {
        "architecture": "rwkv",
        "task": "wiki",
        "bottleneck": "B4",
        "seed": "3",
    }  # no profile: the pipeline has none


def test_a_group_by_naming_no_parameter_is_refused_with_the_parameters():
    from components.registry import ComponentError, component

    def fit(ctx, *, net: str, corpus: str = "") -> dict:
        return {}

    refused = r"group_by= names 'nett', which is none of its parameters \(corpus, net\)"
    with pytest.raises(ComponentError, match=refused):
        component("lab.bad", outputs=[], group_by={"architecture": "nett"})(fit)
    with pytest.raises(ComponentError, match="group_by= takes fact names"):
        component("lab.bad2", outputs=[], group_by=["net"])(fit)


JUDGED_ON_TRIALS = """
from components import component


@component("trials.measure", outputs=["summary"])
def measure(ctx, *, trial: int) -> dict:
    return {"summary": {"value": trial}}


@component("trials.judge", outputs=["verdicts"], shows={"verdicts": "verdicts"})
def judge(ctx, *, measurements: dict, expect: list, design: dict | None = None) -> dict:
    return {"verdicts": ""}
"""


def test_the_seed_of_a_run_is_found_on_the_axis_its_claims_judge_over_whatever_its_name(tmp_path, monkeypatch):
    (tmp_path / "trial_steps.py").write_text(JUDGED_ON_TRIALS)
    monkeypatch.syspath_prepend(str(tmp_path))
    text = """\
        name: trials
        steps:
          m: {uses: "trial_steps:measure", with: {trial: "${matrix.trial}"}, matrix: {trial: [4, 5]}}
          j:
            uses: "trial_steps:judge"
            with: {measurements: {m: "${m.summary}"}, expect: [{id: a, over: trial}]}
        """
    plan = build(write(tmp_path, text))
    inst = plan.instances["m[trial=5]"]
    assert seed_axes(plan) == {"m": "trial"}
    assert facts(plan, inst, seed_axes(plan))["seed"] == "5"
    assert "seed" not in facts(plan, inst)  # without the plan's axes only an axis named seed is one
    assert StepRuns(plan, tracker=None, parent_run_id="p").tags(inst)["seed"] == "5"
