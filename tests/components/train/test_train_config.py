"""TrainConfig: the bounds train.model refuses, and what a resumed run must share."""

from __future__ import annotations

import pytest

from components import Context, get
from components.train.config import TrainConfig, TrainError

BOUNDS = "steps, eval_every, eval_batches, eval_bleu and checkpoint_every must be >= 0; batch_size and log_every >= 1"


@pytest.mark.parametrize(
    "bad,message",
    [
        (dict(steps=-1), BOUNDS),
        (dict(batch_size=0), BOUNDS),
        (dict(log_every=0), BOUNDS),
        (dict(eval_every=-1), BOUNDS),
        (
            dict(accumulate=0),
            "accumulate must be >= 1 and average_last, prefetch >= 0; got accumulate=0, average_last=0, prefetch=None",
        ),
        (
            dict(prefetch=-1),
            "accumulate must be >= 1 and average_last, prefetch >= 0; got accumulate=1, average_last=0, prefetch=-1",
        ),
        (dict(passes=3, accumulate=2), "passes must be between 1 and accumulate=2 (or null to fit the device); got 3"),
        (dict(average_last=3, checkpoint_every=0), "average_last=3 averages checkpoints: set checkpoint_every > 0"),
        (dict(betas=[0.9]), "betas must be two numbers like [0.9, 0.98], got [0.9]"),
    ],
)
def test_a_value_out_of_bounds_is_a_train_error_before_anything_runs(tmp_path, bad, message):
    with pytest.raises(TrainError) as e:
        get("train.model")(Context(tmp_path / "r"), data=str(tmp_path / "no_data"), model="lstm-small", **bad)
    assert str(e.value) == message
    assert not (tmp_path / "r" / "checkpoints").exists()


def test_a_resumed_run_may_change_only_the_resumable_settings():
    base = TrainConfig(data="d", model="lstm-small", steps=10)
    same = TrainConfig(
        data="d", model="lstm-small", steps=20, eval_every=5, eval_batches=2, eval_bleu=0, log_every=1, prefetch=0
    )
    other = TrainConfig(data="d", model="lstm-small", steps=10, lr=0.1)
    assert base.fingerprint() == same.fingerprint() != other.fingerprint()


def test_logged_params_are_every_setting_with_lists_and_dicts_as_json():
    cfg = TrainConfig(data="d", model="lstm-small", overrides={"hidden_size": 8})
    logged = cfg.logged()
    assert list(logged) == list(TrainConfig.model_fields)
    assert logged["betas"] == "[0.9, 0.999]" and logged["overrides"] == '{"hidden_size": 8}' and logged["steps"] == 1000


def test_check_refuses_parameters_that_disagree_at_the_line_that_sets_them(tmp_path):
    """Rules tying two train.model parameters together are judged by `check`, before anything runs;
    a rule that reads a reference (known when the step runs) is left to the run."""
    from flows.language.errors import PipelineInvalid
    from flows.plan.build import build

    path = tmp_path / "p.yaml"
    path.write_text(
        "name: p\nsteps:\n  data:\n    uses: data.synthetic_translation\n"
        "  a:\n    uses: train.model\n"
        '    with: {data: "${data.dataset}", model: transformer-tiny, accumulate: 3, processes: 2}\n'
        "  b:\n    uses: train.model\n"
        '    with: {data: "${data.dataset}", model: transformer-tiny, average_last: 3, checkpoint_every: 0}\n'
        "  c:\n    uses: train.model\n"
        '    with: {data: "${data.dataset}", model: transformer-tiny, accumulate: 4, processes: 2}\n'
    )
    with pytest.raises(PipelineInvalid) as e:
        build(str(path))
    text = str(e.value)
    assert "p.yaml:7:88: step 'a' (train.model): accumulate=3 must be a multiple of processes=2" in text
    assert "set accumulate to 4" in text
    assert "p.yaml:10:76: step 'b' (train.model): average_last=3 averages checkpoints" in text
    assert "step 'c'" not in text
