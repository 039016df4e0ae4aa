"""`bottlenecks check` resolves every claim's references (the measurement's step, the matrix label, the
summary key) against the keys each step's component declares, before anything runs: a bad one is a
``FILE:LINE:COL`` error with a did-you-mean (exit 2); a source whose component declares no keys is a
warning."""

from __future__ import annotations

import sys
import textwrap

import pytest
from typer.testing import CliRunner

from components import registry as reg
from flows.cli import app

TYPOS = """\
name: claims-typos
params: {seeds: [0, 1, 2]}
steps:
  data: {uses: data.delayed_recall, with: {lag: 10}}
  train:
    uses: train.model
    with: {data: "${data.dataset}", model: "${matrix.arch}", steps: 200, seed: "${matrix.seed}"}
    matrix: {arch: [gru-small, lstm-small], seed: "${params.seeds}"}
  card:
    uses: report.scorecard
    with:
      measurements: {train: "${train.summary}"}
      expect:
        - id: step
          claim: the GRU learns the task
          check: at_least
          value: "trian.test_acc"
          than: 0.9
        - id: label
          claim: the GRU beats chance
          check: above
          value: "train[arch=gru-smal].test_acc"
          than: 0.2
        - id: key
          claim: no training diverges
          check: finite
          value: "train[*].test_accuracy"
"""


@pytest.fixture
def cli():
    return CliRunner()


def test_an_unknown_step_label_and_key_are_three_located_errors_with_did_you_mean(cli, tmp_path, home):
    path = tmp_path / "claims.yaml"
    path.write_text(TYPOS)
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 2, result.output
    head = f"{path}:{{}}:19: step 'card' (report.scorecard): expect[{{}}] (claim {{}}): reference "
    assert result.stderr.splitlines() == [
        head.format(17, 0, "step") + "'trian.test_acc': no source 'trian' in measurements "
        "(did you mean 'train'?); have: train",
        head.format(22, 1, "label") + "'train[arch=gru-smal].test_acc': train: no instance matches "
        "[arch=gru-smal] (did you mean 'arch=gru-small'?); arch is one of gru-small, lstm-small",
        head.format(27, 2, "key") + "'train[*].test_accuracy': train[arch=gru-small,seed=0]: no measurement "
        "'test_accuracy' (did you mean 'test_acc'?)",
        "1 of 1 file(s) invalid",
    ]
    ran = cli.invoke(app, ["run", str(path)])  # run refuses it the same way, before anything starts
    assert ran.exit_code == 2 and ran.stderr.splitlines()[-1] == "3 error(s); nothing was run."


def test_the_mlflow_name_of_a_training_value_reads_its_summary_key(cli, tmp_path, home):
    text = TYPOS.replace("trian.test_acc", "train[*].test/acc").replace("gru-smal]", "gru-small]")
    path = tmp_path / "claims.yaml"
    path.write_text(text.replace("train[*].test_accuracy", "train[*].vitals/steps"))
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr == "" and result.stdout.startswith(f"ok {path}")


USER_STEPS = '''
from components import Context, component


@component("claimtest.count", outputs=["summary"])
def count(ctx: Context, *, words: list[str]) -> dict:
    """Count words; its summary keys are declared nowhere."""
    return {"summary": {f"hits/{w}": 1 for w in words}}


@component("claimtest.tally", outputs=["summary"], summary=["hits/{words}", "total"])
def tally(ctx: Context, *, words: list[str]) -> dict:
    """Count words; declares hits/<word> and total."""
    return {"summary": {**{f"hits/{w}": 1 for w in words}, "total": len(words)}}
'''

USER_PIPELINE = """\
name: user-claims
steps:
  count:
    uses: claim_user_steps:count
    with: {words: [a, b]}
    matrix: {seed: [0, 1]}
  tally: {uses: "claim_user_steps:tally", with: {words: [a, b]}}
  card:
    uses: report.scorecard
    with:
      measurements: {count: "${count.summary}", tally: "${tally.summary}"}
      expect:
        - {id: 1, claim: a is counted, check: above, value: "count[*].hits/anything", than: 0}
        - {id: 2, claim: b is counted, check: above, value: "tally.hits/b", than: 0}
"""


@pytest.fixture
def user_steps(tmp_path, monkeypatch):
    (tmp_path / "claim_user_steps.py").write_text(USER_STEPS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in ("claimtest.count", "claimtest.tally", "claim_user_steps:count", "claim_user_steps:tally"):
        reg._REGISTRY.pop(name, None)
    sys.modules.pop("claim_user_steps", None)


def test_a_users_component_that_declares_no_keys_is_a_warning_not_an_error(cli, tmp_path, home, user_steps):
    path = tmp_path / "user.yaml"
    path.write_text(USER_PIPELINE)
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"{path}:11:30: warning: step 'card' (report.scorecard): measurements 'count' reads step 'count' "
        "(claimtest.count), whose component declares no summary keys, so its references are checked for their "
        "step and label only; declare them with @component('claimtest.count', ..., "
        'summary=["key", "key/{param}"]) (docs/contracts.md)'
    ]
    assert result.stdout.startswith(f"ok {path}: 3 steps, 4 step runs")


def test_a_users_declared_keys_are_resolved_and_its_labels_checked(cli, tmp_path, home, user_steps):
    path = tmp_path / "user.yaml"
    text = USER_PIPELINE.replace("tally.hits/b", "tally.hits/c").replace("count[*]", "count[seed=2]")
    path.write_text(text)
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if ": warning: " not in line]
    lines = text.splitlines()
    count, tally = (
        f"{n}:{lines[n - 1].index(ref) + 2}" for n, ref in ((13, '"count['), (14, '"tally.'))
    )  # its first character
    assert errors == [
        f"{path}:{count}: step 'card' (report.scorecard): expect[0] (claim 1): reference "
        "'count[seed=2].hits/anything': count: no instance matches [seed=2]; its labels: 0, 1",
        f"{path}:{tally}: step 'card' (report.scorecard): expect[1] (claim 2): reference 'tally.hits/c': "
        "tally: no measurement 'hits/c' (did you mean 'hits/b'?)",
        "1 of 1 file(s) invalid",
    ]


def test_the_keys_follow_references_to_the_parameters_of_the_steps_read(tmp_path):
    """probe.long_lag's ``acc/lag_{checkpoints.data.lag,seq_len}``: the lag of each training's data."""
    from flows.plan._summaries import _Declared
    from flows.plan.build import build

    path = tmp_path / "lags.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: lags
        steps:
          recall: {uses: data.delayed_recall, with: {lag: "${matrix.lag}"}, matrix: {lag: [5, 20]}}
          adding: {uses: data.adding, with: {seq_len: 40}}
          rnn:
            uses: train.model
            with: {data: "${recall.dataset}", model: rnn-tiny, steps: 2}
            matrix: {lag: [5, 20]}
          add: {uses: train.model, with: {data: "${adding.dataset}", model: rnn-tiny, steps: 2}}
          lag: {uses: probe.long_lag, with: {checkpoints: "${rnn.checkpoint}"}}
          lag_add: {uses: probe.long_lag, with: {checkpoints: {t40: "${add.checkpoint}"}}}
        """)
    )
    plan = build(path)
    keys = _Declared(plan.instances)
    recall, adding = keys.keys(plan.instances["lag"]), keys.keys(plan.instances["lag_add"])
    assert {k for k in recall if k.startswith("acc")} == {"acc/lag_5", "acc/lag_20", "acc_min/lag_5", "acc_min/lag_20"}
    assert {"converged/5", "late_gain/20", "longest_solved"} <= set(recall) and recall.patterns == ()
    assert {k for k in adding if k.startswith("acc")} == {"acc/lag_40", "acc_min/lag_40"}
    assert "converged/t40" in adding
