"""The settings block is defined once: validation, planning, the schema and the docs agree with it."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows import settings
from flows.cli import app
from flows.language.schema import pipeline_schema
from flows.plan.build import build

REPO = Path(__file__).resolve().parents[1]
C = "tests.support.engine_components"


def _pipeline(tmp_path, block: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: t\nsettings: {block}\nsteps:\n  a: {{uses: '{C}:numbers', with: {{n: 2}}}}\n")
    return path


def test_the_docs_show_the_definition():
    assert settings.markdown_table() in (REPO / "docs" / "pipelines.md").read_text(), (
        "docs/pipelines.md: paste flows.settings.markdown_table() in place of the settings table"
    )


def test_the_schema_lists_every_setting_with_its_doc():
    props = pipeline_schema()["properties"]["settings"]["properties"]
    assert list(props) == list(settings.NAMES)
    assert props["workers"]["description"] == "steps run at once on CPU workers"
    assert props["executor"]["enum"] == ["threads", "processes", "dask"]


def test_a_plan_reads_defaults_and_written_values_by_attribute(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_EXECUTOR", "threads")
    plan = build(_pipeline(tmp_path, "{workers: 3, lease_timeout: 5}"))
    assert isinstance(plan.settings, settings.Settings)
    assert (plan.settings.workers, plan.settings.lease_timeout, plan.settings.executor) == (3, 5, "threads")
    assert (plan.settings.seed, plan.settings.devices, plan.settings.address) == (0, "auto", None)


@pytest.mark.parametrize(
    "block, message",
    [
        ("{workers: two}", "2:21: settings.workers must be an integer, got 'two'"),
        ("{lease_timeout: soon}", "2:27: settings.lease_timeout must be a number, got 'soon'"),
        (
            "{executor: proceses}",
            "2:22: settings.executor must be one of threads, processes, dask, got 'proceses' "
            "(did you mean 'processes'?)",
        ),
        ("{devices: [0, 0]}", "2:21: settings.devices lists a GPU twice: [0, 0]"),
        (
            "{wrokers: 2}",
            "2:12: unknown settings key 'wrokers' (did you mean 'workers'?); allowed: " + ", ".join(settings.NAMES),
        ),
    ],
)
def test_a_bad_setting_is_one_located_line(tmp_path, block, message):
    path = _pipeline(tmp_path, block)
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert f"{path}:{message}" in result.output.splitlines()
