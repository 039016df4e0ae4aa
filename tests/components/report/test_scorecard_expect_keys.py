"""Every scorecard reference (source, selector and key) resolves against what its step will measure.

Each component a shipped scorecard reads declares the keys its summary holds (``@component(...,
summary=[...])``, expanded per step instance from its parameters: the model labels and buckets of
eval.bleu, the lags of long_lag's data). `bottlenecks check` resolves every reference of the claims
with the scorecard's own Resolver against those would-be summaries, so a misspelt key, a selector no
instance has, or a model label no step trains is refused before anything runs instead of turning into
`not measured` an hour into a run.
"""

from pathlib import Path

import pytest
import yaml

from components.report.references import references, unresolved
from flows.language.errors import PipelineInvalid
from flows.plan._summaries import _Declared
from flows.plan.build import Plan, build

PIPELINES = Path(__file__).resolve().parents[3] / "pipelines"
SHIPPED = [
    "four_bottlenecks",
    "b1_hidden_state",
    "b2_gradients",
    "b3_bleu_by_length",
    "b4_sequential",
    "vit_patches",
    "ablations",
]


def _profiles():
    for name in SHIPPED:
        yield pytest.param(name, None, id=name)
        spec = yaml.safe_load((PIPELINES / f"{name}.yaml").read_text())
        for profile in spec.get("profiles") or {}:
            if profile != spec.get("default_profile"):
                yield pytest.param(name, profile, id=f"{name}-{profile}")


def would_be_measurements(plan: Plan, card) -> dict:
    """Source -> the keys (or label -> keys) each measurement's producers declare they will write."""
    declared = _Declared(plan.instances)
    out = {}
    for source, ref in card.params["measurements"].items():
        keys, silent = declared.of(ref)
        assert keys is not None, f"measurement {source!r} should be one ${{step.summary}} reference"
        assert not silent, f"{silent[0].component.name} (measurement {source!r}) declares no summary keys"
        out[source] = keys
    return out


def unresolved_in(plan: Plan) -> list[str]:
    """Why each reference of each scorecard in ``plan`` would not resolve (empty: all resolve)."""
    problems = []
    for inst in plan.instances.values():
        if inst.component.name != "report.scorecard":
            continue
        params = {k: inst.params.get(k) for k in ("expect", "architectures")}
        problems += [f"{inst.id}: {why}" for _, why in unresolved(params, would_be_measurements(plan, inst))]
    return problems


@pytest.mark.parametrize("name,profile", list(_profiles()))
def test_every_scorecard_reference_resolves_to_a_declared_measurement(name, profile):
    plan = build(PIPELINES / f"{name}.yaml", profile=profile)  # check resolves them too: it would refuse
    cards = [i for i in plan.instances.values() if i.component.name == "report.scorecard"]
    assert cards and plan.warnings == []
    assert all(references({k: c.params.get(k) for k in ("expect", "architectures")}) for c in cards)
    problems = unresolved_in(plan)
    assert not problems, "\n".join(problems)


def test_the_transformer_is_in_the_shipped_comparison_and_its_references_resolve():
    plan = build(PIPELINES / "four_bottlenecks.yaml")
    card = next(i for i in plan.instances.values() if i.component.name == "report.scorecard")
    refs = [ref for _, _, ref, _ in references(card.params)]
    assert "bleu_attention[*].bleu/transformer/longest" in refs
    assert "mt_transformer[*].tokens_per_s" in refs
    arch = card.params["architectures"]["transformer"]
    assert {"B2", "B3", "B4"} <= set(arch)
    trained = [i for i in plan.instances.values() if i.step.id == "mt_transformer"]
    rnn = [i for i in plan.instances.values() if i.step.id == "mt_attention"]
    assert sorted(i.bindings["seed"] for i in trained) == sorted(i.bindings["seed"] for i in rnn) == [0, 1, 2, 3]
    for key in ("steps", "batch_size"):  # the same training budget as the attention RNN
        assert {i.params[key] for i in trained} == {i.params[key] for i in rnn}


@pytest.mark.parametrize(
    "typo",
    [
        ("bleu_attention[*].bleu/transformer/longest", "bleu_attention[*].bleu/transformr/longest"),  # a model label
        ("bleu[*].bleu/luong-dot-small/longest", "bleu[*].bleu/luong-dot-small/longst"),  # a key
        ('"grad[arch=rnn-small].rho"', '"grad[arch=rnn-smal].rho"'),  # a selector
        ("lag_lstm[forget_bias=3].acc/lag_50", "lag_lstm[forget_bias=3].acc/lag_51"),  # a lag
        ("timing.seq_steps_per_layer/rnn/T_256", "timing.seq_steps_per_layer/rnn/T_265"),  # a length
    ],
)
def test_a_typo_in_the_shipped_comparison_is_refused_at_its_line(typo, tmp_path):
    text = (PIPELINES / "four_bottlenecks.yaml").read_text()
    old, new = typo
    assert old in text
    path = tmp_path / "four_bottlenecks.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(PipelineInvalid) as e:
        build(path)
    [error] = e.value.errors
    line = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if new in t)
    assert error.line == line and new.strip('"') in error.message, error
