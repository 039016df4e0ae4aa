"""The scorecard names the trainings a claim reads that were still improving when they stopped, and
a claim that ``requires: converged`` is not decided on them."""

import pytest

from components.report.checks import FAILS, HOLDS, INCONCLUSIVE
from components.report.claims import judge
from components.report.refs import Resolver, trainings_of
from components.report.vocabulary import ScorecardError, validate_expectations


def bleu_instances(still_improving_seed=None):
    """eval.bleu summaries of three seeds with the record of the checkpoints each read."""
    out = {}
    for i, (s2s, att) in enumerate([(20.0, 95.0), (25.0, 96.0), (22.0, 97.0)]):
        out[f"seed={i}"] = {
            "bleu/s2s/longest": s2s,
            "bleu/att/longest": att,
            "converged/s2s": i != still_improving_seed,
            "late_gain/s2s": 6.5 if i == still_improving_seed else 0.4,
            "converged/att": True,
            "late_gain/att": 0.0,
        }
    return {"bleu": out}


CLAIM = {
    "id": 1,
    "claim": "Attention beats seq2seq on long sentences.",
    "check": "beats",
    "a": "bleu[*].bleu/att/longest",
    "b": "bleu[*].bleu/s2s/longest",
}


def judged(measurements, **extra):
    claim = validate_expectations([CLAIM | extra])[0]
    return judge(claim, Resolver(measurements), device="cpu", min_seeds=3)


def test_a_claim_names_the_training_still_improving_and_keeps_its_verdict():
    entry = judged(bleu_instances(still_improving_seed=1))
    assert entry["verdict"] == HOLDS
    assert entry["trainings"] == {"read": 6, "still_improving": ["bleu[seed=1] s2s"], "requires": None}
    assert (
        "Still improving when training stopped: bleu[seed=1] s2s (headline metric +6.5 over the last 20% of steps)"
        in (entry["reason"])
    )


def test_requires_converged_leaves_a_claim_on_an_unconverged_training_undecided_and_says_why():
    entry = judged(bleu_instances(still_improving_seed=2), requires="converged")
    assert entry["verdict"] == INCONCLUSIVE
    assert entry["reason"].startswith(
        "1 of the 6 trainings it reads were still improving when they stopped (requires: converged), "
        "so the checks' 'holds' is not a verdict: bleu[seed=2] s2s"
    )
    converged = judged(bleu_instances(), requires="converged")
    assert converged["verdict"] == HOLDS and converged["trainings"]["still_improving"] == []


def test_a_failing_claim_on_converged_trainings_fails():
    flipped = {
        "bleu": {k: v | {"bleu/att/longest": 10.0 + i} for i, (k, v) in enumerate(bleu_instances()["bleu"].items())}
    }
    assert judged(flipped, requires="converged")["verdict"] == FAILS


def test_the_trainings_a_value_reads_are_those_its_key_names():
    summary = bleu_instances()["bleu"]["seed=0"]
    assert set(trainings_of(summary, "bleu/s2s/longest", "bleu[seed=0]")) == {"bleu[seed=0] s2s"}
    assert set(trainings_of(summary, "n", "bleu[seed=0]")) == {"bleu[seed=0] s2s", "bleu[seed=0] att"}
    own = {"test_acc": 0.9, "converged": False, "late_gain": 0.03, "late_metric": "acc"}
    assert trainings_of(own, "test_acc", "vit[seed=0]") == {
        "vit[seed=0]": {"converged": False, "late_gain": 0.03, "late_metric": "acc"}
    }


def test_requires_takes_only_converged():
    with pytest.raises(
        ScorecardError, match="requires must be one of converged, got 'convergd' \\(did you mean 'converged'\\?\\)"
    ):
        validate_expectations([CLAIM | {"requires": "convergd"}])
