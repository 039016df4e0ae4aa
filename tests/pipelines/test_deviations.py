"""docs/scale.md's deviations table states the full profile as resolved: every cell is checked against the plan."""

import inspect
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from components.data.bpe import train_bpe
from components.models import config as model_config
from flows.language.refs import Ref
from flows.plan.build import build

REPO = Path(__file__).resolve().parents[2]
PIPELINE = REPO / "pipelines" / "four_bottlenecks.yaml"
DOC = REPO / "docs" / "scale.md"
SECTION = "## Deviations from the papers"
SETTING = re.compile(r"`([^`]+)`(?: for `([^`]+)`)?")


def setting(cell: str) -> tuple[str, str | None]:
    """(key, model) of a row's setting: `key`, or `key` for `model` where one step treats several models alike."""
    match = SETTING.fullmatch(cell)
    assert match, f"a setting is `key` or `key` for `model`, got {cell!r}"
    return match.group(1), match.group(2)


def table_rows() -> list[tuple[str, str, str, str]]:
    """(setting, paper, profile value, why) for every row of the section's table."""
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("setting", "---") or not cells[0].startswith("`"):
            continue
        rows.append(tuple(cells))
    return rows


@pytest.fixture(scope="module")
def plan():
    return build(PIPELINE, profile="full")


def scored(inst) -> set[str]:
    """The model labels a step instance reads checkpoints of (the keys its references name them by)."""
    labels: set[str] = set()

    def walk(value):
        if isinstance(value, Ref):
            labels.update(k for k in value.sources if k)
        elif isinstance(value, dict):
            labels.update(k for k, v in value.items() if isinstance(v, Ref))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(inst.params)
    return labels


def resolved(plan, key: str, model: str | None = None):
    """The full profile's value of ``step.param[.field]`` (all of a step's runs agree; with ``model``, a
    model the step scores), ``model:variant.field``, or ``bpe:attribute`` (the class of that part of the
    BPE tokenizer ``data.wmt`` trains)."""
    if key.startswith("model:"):
        variant, field = key[len("model:") :].rsplit(".", 1)
        return getattr(model_config(variant), field)
    if key.startswith("bpe:"):
        return type(getattr(train_bpe(["a b. c"], vocab_size=8), key[len("bpe:") :])).__name__
    step, param, *field = key.split(".")
    runs = [inst for inst in plan.instances.values() if inst.step.id == step]
    assert runs, f"no step {step!r} in the full profile"
    if model is not None:
        assert all(model in scored(inst) for inst in runs), f"{step} does not score {model!r}"
    values = []
    for inst in runs:
        if param in inst.params:
            value = inst.params[param]
        else:
            value = inspect.signature(inst.component.fn).parameters[param].default
        for f in field:
            value = value[f]
        values.append(value)
    assert all(v == values[0] for v in values), f"{key}: the runs of {step} differ: {values}"
    return values[0]


def test_the_table_has_a_row_for_every_recipe_the_issue_names():
    settings = {setting(row[0]) for row in table_rows()}
    assert len(settings) == len(table_rows())  # no setting twice
    keys = {key for key, model in settings if model is None}
    for key in (
        "mt_bahdanau.optimizer",
        "mt_bahdanau.eps",
        "mt_bahdanau.rho",
        "mt_bahdanau.batch_size",
        "mt_bahdanau.steps",
        "model:rnnsearch-50.init",
        "model:rnnsearch-50.init_state",
        "bleu_bahdanau.length_penalty",
        "mt_transformer.eps",
        "mt_transformer.clip",
        "bleu.max_len_a",
        "bleu.max_len_b",
        "mt_data.max_ratio",
        "mt_data.dedup",
        "model:rnnsearch-50.gru",
        "model:rnnencdec-50.gru",
        "model:seq2seq-small.gru",
        "model:luong-dot-small.gru",
        "bpe:pre_tokenizer",
    ):
        assert key in keys, key
    for scoped in (("bleu.beam", "sutskever-4x1000"), ("bleu.length_penalty", "sutskever-4x1000")):
        assert scoped in settings, scoped  # the mt models scored with Vaswani's decoding
    assert ("bleu.beam", "luong-dot-small") in settings and ("bleu.length_penalty", "luong-dot-small") in settings


@pytest.mark.parametrize("row", table_rows(), ids=lambda r: r[0].replace("`", ""))
def test_every_profile_cell_is_the_resolved_full_profile(plan, row):
    key, paper, cell, why = row
    value = re.fullmatch(r"`([^`]*)`", cell)
    assert value, f"{key}: the profile cell must be one `value`, got {cell!r}"
    assert resolved(plan, *setting(key)) == yaml.safe_load(value.group(1))
    assert paper and why  # each row says what the paper did and why the profile does what it does
    if why.startswith("as the paper"):
        assert "deviation" not in why


def test_plan_of_the_full_profile_links_to_the_table(home):
    from flows.cli import app

    result = CliRunner().invoke(app, ["plan", str(PIPELINE), "--profile", "full"])
    assert result.exit_code == 0, result.output
    assert "docs/scale.md#deviations-from-the-papers" in " ".join(result.stdout.split())
