"""Every scorecard reference (source, selector and key) resolves against what its step will measure.

The plan gives each measurement source's producer instances and their resolved parameters; a key
model per component lists the summary keys such an instance writes (from its parameters, e.g. the
model labels and buckets of eval.bleu). The scorecard's own Resolver then looks every reference up in
those would-be summaries, so a misspelt key, a selector no instance has, or a model label no step
trains fails here instead of turning into `not measured` an hour into a run.
"""

from pathlib import Path

import pytest
import yaml

from components.probes.decode import bucket_names
from components.report.refs import Resolver
from flows.language.refs import Ref
from flows.plan.build import Instance, Plan, build

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
REF_KEYS = ("value", "a", "b", "base", "than", "to", "low", "high")
LIST_KEYS = ("values", "minus", "y")


def _profiles():
    for name in SHIPPED:
        yield pytest.param(name, None, id=name)
        spec = yaml.safe_load((PIPELINES / f"{name}.yaml").read_text())
        for profile in spec.get("profiles") or {}:
            if profile != spec.get("default_profile"):
                yield pytest.param(name, profile, id=f"{name}-{profile}")


# -- what each component writes into its summary, from an instance's resolved parameters ----------------


def _labels(value) -> list[str]:
    """Model labels of a ``checkpoints`` parameter: a dict, a matrixed reference, or a list of them."""
    if isinstance(value, list):
        return [lab for v in value for lab in _labels(v)]
    if isinstance(value, Ref):
        return [str(lab) for lab in value.sources if lab is not None]
    if isinstance(value, dict):
        return [str(k) for k in value]
    return []


def _producers(value, plan: Plan) -> list[Instance]:
    """The instances a reference (or a dict / list of references) reads from."""
    if isinstance(value, Ref):
        return [plan.instances[i] for i in value.sources.values()]
    if isinstance(value, dict):
        return [p for v in value.values() for p in _producers(v, plan)]
    if isinstance(value, list):
        return [p for v in value for p in _producers(v, plan)]
    return []


def _lags(inst: Instance, plan: Plan) -> set[int]:
    """Lags of long_lag's checkpoints: the ``lag`` (or ``seq_len``) of each training run's data."""
    lags = set()
    for train in _producers(inst.params["checkpoints"], plan):
        for data in _producers(train.params["data"], plan):
            lag = data.params.get("lag", data.params.get("seq_len"))
            lags.add(int(lag if lag is not None else data.component.params_model.model_fields["lag"].default))
    return lags


def _bleu(inst, plan):
    p = {**_defaults(inst), **inst.params}
    names = bucket_names(p["buckets"])
    keys = {"n"} | {f"count/len_{b}" for b in names}
    for label in _labels(p["checkpoints"]):
        for m in ("bleu", "chrf", "bleu_ci", "chrf_ci"):
            keys |= {f"{m}/{label}"} | {f"{m}/{label}/len_{b}" for b in names}
        keys |= {f"{m}/{label}/{alias}" for m in ("bleu", "chrf") for alias in ("shortest", "longest")}
    return keys


def _capacity(inst, plan):
    p = {**_defaults(inst), **inst.params}
    names = bucket_names(p["buckets"])
    keys = {f"count/len_{b}" for b in names}
    for label in _labels(p["checkpoints"]):
        keys |= {f"acc/{label}", f"ratio/{label}"}
        keys |= {f"{m}/{label}/len_{b}" for m in ("acc", "exact") for b in names}
    return keys


def _timing(inst, plan):
    p = {**_defaults(inst), **inst.params}
    keys = {"threads", "batch", "repeats", "memory_method"}
    for label in p["models"]:
        keys |= {
            f"{m}/{label}/T_{T}"
            for m in ("time_s", "memory_mb", "seq_steps", "seq_steps_per_layer", "flops_per_layer")
            for T in p["lengths"]
        }
        keys |= {f"time_exp/{label}", f"memory_exp/{label}"}
    return keys


def _param_count(inst, plan):
    p = {**_defaults(inst), **inst.params}
    return {f"{m}/T_{T}" for m in ("params", "runs") for T in p["lengths"]} | {
        "params_spread",
        "params_constant",
        "runs_all",
    }


def _entropy(inst, plan):
    p = {**_defaults(inst), **inst.params}
    return {f"entropy/{s}/dk_{d}" for s in ("scaled", "unscaled") for d in p["d_k"]} | {"unscaled_drop", "scaled_min"}


def _train(inst, plan):
    fixed = {"diverged", "diverged_step", "steps", "seconds", "params", "resumed_from_step", "tokens_per_s"}
    fixed |= {"late_metric", "late_gain", "late_loss_change", "late_from_step", "converged"}
    return fixed | {f"{split}_{m}" for split in ("valid", "test") for m in ("loss", "acc", "acc_all")}


def _defaults(inst: Instance) -> dict:
    fields = inst.component.params_model.model_fields
    return {k: f.default for k, f in fields.items() if not f.is_required()}


KEY_MODELS = {
    "eval.bleu": _bleu,
    "probe.capacity": _capacity,
    "probe.timing": _timing,
    "probe.param_count": _param_count,
    "probe.attention_entropy": _entropy,
    "probe.long_lag": lambda inst, plan: (
        {f"{m}/lag_{L}" for m in ("acc", "acc_min") for L in _lags(inst, plan)}
        | {"threshold", "longest_solved", "chance"}
    ),
    "probe.permutation": lambda inst, plan: {
        f"{m}/{label}" for m in ("error", "rel_error") for label in inst.params["models"]
    },
    "probe.gradient_decay": lambda inst, plan: {"rho", "rho_init", "length"},
    "probe.attention_maps": lambda inst, plan: {
        "n",
        "diag_mass",
        "diag_mass_uniform",
        "diag_ratio",
        "gaze_on_digit",
        "gaze_uniform",
        "gaze_corr",
    },
    "probe.position_similarity": lambda inst, plan: {
        "neighbour_cos",
        "far_cos",
        "neighbour_minus_far",
        "distance_rank_corr",
        "distance_rank_corr_null_sd",
        "distance_rank_corr_p",
        "grid_h",
        "grid_w",
    },
    "eval.classify": lambda inst, plan: {"acc", "loss", "n", "chance"},
    "train.model": _train,
}


# -- the would-be measurements and the references -------------------------------------------------------


def would_be_measurements(plan: Plan, card: Instance) -> dict:
    """Source -> the summary (or label -> summary) each measurement's producers will write, keys only."""
    out = {}
    for source, ref in card.params["measurements"].items():
        assert isinstance(ref, Ref), f"measurement {source!r} should be one ${{step.output}} reference"
        summaries = {}
        for label, iid in ref.sources.items():
            inst = plan.instances[iid]
            model = KEY_MODELS.get(inst.component.name)
            assert model, (
                f"no key model for {inst.component.name} (measurement {source!r}): add one to "
                f"KEY_MODELS listing the summary keys it writes"
            )
            summaries[label] = dict.fromkeys(model(inst, plan), 1.0)
        out[source] = summaries[None] if None in summaries else summaries
    return out


def references(card_params: dict) -> list[str]:
    """Every reference the claims and the architecture cells compare."""
    found = []

    def checks(entry):
        for c in entry.get("checks") or [entry]:
            found.extend(c[k] for k in REF_KEYS if isinstance(c.get(k), str))
            found.extend(r for k in LIST_KEYS if isinstance(c.get(k), list) for r in c[k] if isinstance(r, str))

    for claim in card_params["expect"]:
        checks(claim)
    for cells in (card_params.get("architectures") or {}).values():
        for cell in cells.values():
            if isinstance(cell, str):
                found.append(cell)
            else:
                checks(cell)
    return found


def unresolved(plan: Plan) -> list[str]:
    """Why each reference of each scorecard in ``plan`` would not resolve (empty: all resolve)."""
    problems = []
    for inst in plan.instances.values():
        if inst.component.name != "report.scorecard":
            continue
        resolver = Resolver(would_be_measurements(plan, inst))
        for ref in references(inst.params):
            if "{" in ref:
                continue  # a "{arch}" row template, expanded per axis value at run time
            sample = resolver.resolve(ref)
            if not sample.ok:
                problems.append(f"{inst.id}: {ref}: {sample.missing}")
    return problems


@pytest.mark.parametrize("name,profile", list(_profiles()))
def test_every_scorecard_reference_resolves_to_a_declared_measurement(name, profile):
    plan = build(PIPELINES / f"{name}.yaml", profile=profile)
    assert any(i.component.name == "report.scorecard" for i in plan.instances.values())
    problems = unresolved(plan)
    assert not problems, "\n".join(problems)


def test_the_transformer_is_in_the_shipped_comparison_and_its_references_resolve():
    plan = build(PIPELINES / "four_bottlenecks.yaml")
    card = next(i for i in plan.instances.values() if i.component.name == "report.scorecard")
    refs = references(card.params)
    assert "bleu_attention[*].bleu/transformer/longest" in refs
    assert "mt_transformer[*].tokens_per_s" in refs
    arch = card.params["architectures"]["transformer"]
    assert {"B2", "B3", "B4"} <= set(arch)
    trained = [i for i in plan.instances.values() if i.step.id == "mt_transformer"]
    rnn = [i for i in plan.instances.values() if i.step.id == "mt_attention"]
    assert sorted(i.bindings["seed"] for i in trained) == sorted(i.bindings["seed"] for i in rnn) == [0, 1, 2, 3, 4, 5]
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
def test_a_typo_in_the_shipped_comparison_is_caught(typo, tmp_path):
    text = (PIPELINES / "four_bottlenecks.yaml").read_text()
    old, new = typo
    assert old in text
    path = tmp_path / "four_bottlenecks.yaml"
    path.write_text(text.replace(old, new, 1))
    problems = unresolved(build(path))
    assert len(problems) == 1 and new.strip('"') in problems[0], problems
