"""docs/scale.md's deviations table states the full profile as resolved: every cell is checked against the plan."""

import inspect
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from components.models import config as model_config
from flows.plan.build import build

REPO = Path(__file__).resolve().parents[2]
PIPELINE = REPO / "pipelines" / "four_bottlenecks.yaml"
DOC = REPO / "docs" / "scale.md"
SECTION = "## Deviations from the papers"


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


def resolved(plan, key: str):
    """The full profile's value of ``step.param[.field]`` (all of a step's runs agree) or ``model:variant.field``."""
    if key.startswith("model:"):
        variant, field = key[len("model:") :].rsplit(".", 1)
        return getattr(model_config(variant), field)
    step, param, *field = key.split(".")
    runs = [inst for inst in plan.instances.values() if inst.step.id == step]
    assert runs, f"no step {step!r} in the full profile"
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
    keys = {row[0].strip("`") for row in table_rows()}
    assert len(keys) == len(table_rows())  # no setting twice
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
    ):
        assert key in keys, key


@pytest.mark.parametrize("row", table_rows(), ids=lambda r: r[0].strip("`"))
def test_every_profile_cell_is_the_resolved_full_profile(plan, row):
    key, paper, cell, why = row
    value = re.fullmatch(r"`([^`]*)`", cell)
    assert value, f"{key}: the profile cell must be one `value`, got {cell!r}"
    assert resolved(plan, key.strip("`")) == yaml.safe_load(value.group(1))
    assert paper and why  # each row says what the paper did and why the profile does what it does
    if why.startswith("as the paper"):
        assert "deviation" not in why


def test_plan_of_the_full_profile_links_to_the_table(home):
    from flows.cli import app

    result = CliRunner().invoke(app, ["plan", str(PIPELINE), "--profile", "full"])
    assert result.exit_code == 0, result.output
    assert "docs/scale.md#deviations-from-the-papers" in " ".join(result.stdout.split())
