"""References into measurements: plain, matrixed, bare labels, wildcards, and absent data."""

import math

import pytest

from components.report.refs import Resolver

LAG = {
    f"arch={a},lag={lag},seed={s}": {"acc": 0.1 * s + (0.9 if a == "lstm" else 0.0) + lag / 1000}
    for a in ("rnn", "lstm")
    for lag in (15, 50)
    for s in range(3)
}
MEAS = {
    "lag": LAG,
    "grad": {"rnn": {"rho": 0.5}, "lstm": {"rho": 0.62}},
    "timing": {"speedup": 3.0, "steps_rnn": 512, "note": "text"},
    "bleu": {"seed=0": {"long": 12.0}, "seed=1": {"long": math.nan}},
    "train": {"acc/seed_0": 0.9, "acc/seed_1": 0.8, "loss": None},
    "recall": {"0": {"acc": 0.9}, "1": {"acc": 0.8}},
    "wrapped": {"summary": {"x": 1.0}, "run_id": "abc"},
}
RUNS = {"lag": {k: f"run-{k}" for k in LAG}, "timing": "run-timing"}


@pytest.fixture
def r():
    return Resolver(MEAS, RUNS)


def test_plain_summary_key_resolves_to_one_value_with_its_run(r):
    s = r.resolve("timing.speedup")
    assert s.ok and s.values == {"": 3.0} and s.run_ids == ["run-timing"]


def test_bracket_selector_collects_seeds_and_their_runs(r):
    s = r.resolve("lag[arch=lstm,lag=50].acc")
    assert s.values == pytest.approx({"0": 0.95, "1": 1.05, "2": 1.15})
    assert s.run_ids == [f"run-arch=lstm,lag=50,seed={i}" for i in range(3)]


def test_dotted_selector_is_the_same_as_brackets(r):
    assert r.resolve("lag.arch=rnn,lag=50.acc").values == r.resolve("lag[arch=rnn,lag=50].acc").values


def test_bare_label_of_a_single_axis_matrix(r):
    assert r.resolve("grad[lstm].rho").values == {"": 0.62}
    assert r.resolve("grad.rnn.rho").values == {"": 0.5}


def test_a_single_instance_keeps_its_seed_so_it_pairs_by_seed():
    r = Resolver({"s": {"arch=a,seed=1": {"x": 1.0}, "arch=b,seed=1": {"x": 2.0}}})
    assert r.resolve("s[arch=a].x").values == {"1": 1.0}


def test_seeds_come_in_numeric_order():
    r = Resolver({"s": {f"seed={i}": {"x": float(i)} for i in (10, 2, 1)}})
    assert list(r.resolve("s[*].x").values) == ["1", "2", "10"]


def test_numeric_label_values_compare_as_numbers(r):
    assert r.resolve("lag[arch=rnn,lag=50.0].acc").ok


def test_star_selector_takes_every_instance_as_a_seed_and_keeps_nan(r):
    s = r.resolve("bleu[*].long")
    assert s.values["0"] == 12.0 and math.isnan(s.values["1"])
    assert s.shown() == {"0": 12.0, "1": "nan"}


def test_wildcard_key_makes_one_seed_per_match(r):
    assert r.resolve("train.acc/seed_*").values == {"0": 0.9, "1": 0.8}


def test_null_is_a_diverged_value_not_a_missing_one(r):
    s = r.resolve("train.loss")
    assert s.ok and math.isnan(s.values[""])


def test_a_seed_only_matrix_needs_a_star_and_says_so(r):
    assert "write recall[*].acc to take every instance as a seed" in r.resolve("recall.acc").missing
    assert r.resolve("recall[*].acc").values == {"0": 0.9, "1": 0.8}


def test_whole_step_output_is_unwrapped_with_its_run_id(r):
    s = r.resolve("wrapped.x")
    assert s.values == {"": 1.0} and s.run_ids == ["abc"]


def test_numbers_are_constants(r):
    s = r.resolve(1.5)
    assert s.constant and s.values == {"": 1.5}


@pytest.mark.parametrize(
    "ref, why",
    [
        ("lagg[arch=rnn].acc", "no source 'lagg'.*did you mean 'lag'"),
        ("timing.speedupp", "no measurement 'speedupp'.*did you mean 'speedup'"),
        ("lag[arch=gru,lag=50].acc", r"no instance matches \[arch=gru,lag=50\]"),
        ("lag[arch=rnn].acc", "differ in lag: name it in the selector"),
        ("timing.note", "'note' is 'text', not a number"),
        ("train.loss/*", "no key matches"),
    ],
)
def test_absent_or_ambiguous_data_is_a_reason_not_an_error(r, ref, why):
    s = r.resolve(ref)
    assert not s.ok
    assert __import__("re").search(why, s.missing), s.missing


def test_a_source_that_did_not_run_is_missing():
    assert "is empty" in Resolver({"x": None}).resolve("x.y").missing


@pytest.mark.parametrize(
    "ref, why",
    [
        ("lag[arch=gru,lag=50].acc", r"\[arch=gru,lag=50\]; arch is one of rnn, lstm$"),
        ("lag[arch=lstmm,lag=50].acc", r"\(did you mean 'arch=lstm'\?\); arch is one of rnn, lstm$"),
        ("lag[archh=lstm].acc", r": it has no axis 'archh' \(did you mean 'arch'\?\); its axes: arch, lag, seed$"),
        ("grad[lstn].rho", r"\(did you mean 'lstm'\?\); its labels: rnn, lstm$"),
        ("lag[arch=rnn,lag=51].acc", r"lag is one of 15, 50$"),
    ],
)
def test_a_selector_no_instance_matches_names_the_closest_label(r, ref, why):
    s = r.resolve(ref)
    assert not s.ok and __import__("re").search(why, s.missing), s.missing


def test_a_training_value_may_be_named_as_mlflow_names_it():
    r = Resolver({"train": {"0": {"test_acc": 0.9, "valid_loss": 0.3, "steps": 10}, "1": {"test_acc": 0.7}}})
    assert r.resolve("train[*].test/acc").values == r.resolve("train[*].test_acc").values == {"0": 0.9, "1": 0.7}
    assert r.resolve("train[0].valid/loss").values == {"": 0.3}
    assert r.resolve("train[0].vitals/steps").values == {"": 10.0}
    missing = r.resolve("train[0].test/accuracy").missing
    assert "no measurement 'test/accuracy' (did you mean 'test_acc'?)" in missing
    assert "did you mean 'test_acc'?" in r.resolve("train[0].test_accuracy").missing
    # a summary holding the slash name itself reads it as written
    assert Resolver({"p": {"test/acc": 0.5, "test_acc": 0.1}}).resolve("p.test/acc").values == {"": 0.5}


def test_before_a_run_references_resolve_against_the_declared_keys():
    from components.summary_keys import Keys

    declared = {"train": {"arch=lstm,seed=0": Keys(["test_acc", "converged"]), "arch=rnn,seed=0": Keys(["test_acc"])}}
    r = Resolver({**declared, "grad": Keys(["rho", "grad/d_*"]), "user": Keys(["*"])})
    assert r.resolve("train[arch=lstm].test/acc").ok and r.resolve("train[*].test_acc").ok
    assert r.resolve("grad.grad/d_5").ok and r.resolve("grad.grad/*").ok and r.resolve("user.anything").ok
    assert r.resolve("train[arch=lstm].converged").trainings == {}  # no convergence record before it runs
    assert "did you mean 'rho'" in r.resolve("grad.rhoo").missing
    assert "no key matches 'loss/*'" in r.resolve("grad.loss/*").missing
