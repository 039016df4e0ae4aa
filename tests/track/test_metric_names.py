"""Metric names group by namespace (docs/metrics.md), and older runs' names map to today's."""

from __future__ import annotations

import pytest

from components import Context, component, get
from flows.track.metric_names import NAMESPACES, current, place


@component("namestest.probe", outputs=["n"])
def _user_probe(ctx: Context) -> dict:
    """A user's plugin: one key of its own, one in a namespace."""
    ctx.log_metric("hits", 3.0)
    ctx.log_metric("valid/acc", 0.5, step=10)
    return {"n": 1}


@pytest.mark.parametrize(
    ("key", "component", "name"),
    [
        ("n_train", "data.wmt", "data/n_train"),
        ("dropped/too_long", "data.wmt", "data/dropped/too_long"),
        ("grad_norm/lstm", "probe.gradient_decay", "probe/gradient_decay/grad_norm/lstm"),
        ("bleu/lstm/len_1-10", "eval.bleu", "eval/bleu/bleu/lstm/len_1-10"),
        ("params", "train.model", "vitals/params"),
        ("run/steps", "train.model", "vitals/steps"),  # run/ moved after valid/ in MLflow's sections
        ("train/loss", "train.model", "train/loss"),  # already in a namespace
        ("claim/4/margin", "report.scorecard", "claim/4/margin"),
        ("hits", "mylab.thing", "mylab/thing/hits"),
        ("hits", "", "hits"),  # a context that knows no component places nothing
    ],
)
def test_a_key_is_placed_under_its_component_family(key, component, name):
    assert place(key, component) == name
    assert place(name, component) == name  # placing twice changes nothing


def test_a_user_plugin_called_through_the_registry_logs_grouped_names(tmp_path):
    ctx = Context(tmp_path)
    get("namestest.probe")(ctx)
    assert ctx.component == "namestest.probe"
    assert ctx.metrics == {"namestest/probe/hits": [(None, 3.0)], "valid/acc": [(10, 0.5)]}
    assert ctx.last_metric("hits") == 3.0  # read back by the name the component logged
    get("data.adding")(ctx, seq_len=20, n_train=4, n_valid=2, n_test=2)  # one context, a second component
    assert ctx.metrics["data/n_train"] == [(None, 4.0)] and "namestest/probe/n_train" not in ctx.metrics


@pytest.mark.parametrize(
    ("old", "component", "new"),
    [
        ("valid_loss", None, "valid/loss"),
        ("test_acc", "train.model", "test/acc"),
        ("seconds", None, "vitals/seconds"),
        ("diverged", None, "vitals/diverged"),
        ("run/seconds", None, "vitals/seconds"),  # logged as run/* until the namespace moved
        ("run/tokens_per_s", "train.model", "vitals/tokens_per_s"),
        ("n_train", None, "data/n_train"),
        ("grad_norm/init", None, "probe/gradient_decay/grad_norm/init"),
        ("acc_by_lag", None, "probe/long_lag/acc_by_lag"),
        ("time_s/lstm/T_64", None, "probe/timing/time_s/lstm/T_64"),
        ("params", "probe.param_count", "probe/param_count/params"),  # the tag tells a probe's from a run's
        ("acc/lstm/len_1-5", "probe.capacity", "probe/capacity/acc/lstm/len_1-5"),
        ("acc", None, "acc"),  # two components logged it: without the tag it stays
        ("valid/loss", None, "valid/loss"),  # current names are their own
        ("claim/3a/p_holm", None, "claim/3a/p_holm"),
        ("arch/lstm/B2", None, "arch/lstm/B2"),  # retired: older runs keep it, nothing logs it now
    ],
)
def test_older_names_map_to_todays(old, component, new):
    assert current(old, component) == new
    assert current(new, component) == new


def test_every_current_name_is_in_the_documented_table():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    assert all(f"`{ns}/" in doc for ns in NAMESPACES), "docs/metrics.md lists every namespace"


@component("namestest.old", outputs=["n"], logged_before=["hits_then"], renamed_before={"old_": "namestest/old/"})
def _user_old(ctx: Context) -> dict:
    """A user's plugin that declares the names its older versions logged."""
    return {"n": 1}


def test_a_users_component_declares_its_older_names_and_history_reads_them():
    assert current("hits_then/x") == "namestest/old/hits_then/x"  # no component tag: found by the declaration
    assert current("old_rate") == "namestest/old/rate"
    assert current("old_rate", "namestest.old") == "namestest/old/rate"


def test_the_engine_names_no_component_when_it_renames():
    """Its code holds no component's name or metric: every string in it outside a docstring is checked."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).parents[2] / "flows" / "track" / "metric_names.py").read_text())
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef)) and ast.get_docstring(n)
    }
    strings = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]
    assert not [t for t in strings if t.startswith(("probe", "train", "data.", "eval")) or t in ("rho", "seconds")], (
        strings
    )
