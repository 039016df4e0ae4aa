"""The read-only commands: components, plan, schema; plugins through entry points."""

import json
import textwrap
from importlib import metadata

import pytest
from typer.testing import CliRunner

from components import registry as reg
from flows.cli import app
from flows.language.schema import pipeline_schema

C = "tests.support.engine_components"


@pytest.fixture
def cli():
    return CliRunner()


def test_components_lists_params_types_defaults_and_outputs(cli):
    result = cli.invoke(app, ["components"])
    assert result.exit_code == 0
    assert "train.model" in result.output
    one = cli.invoke(app, ["components", f"{C}:total"])
    assert one.exit_code == 0
    assert "values: a list of integers required" in one.output
    assert "scale: a number = 1.0" in one.output
    assert "outputs: total, run_id" in one.output


def test_plan_shows_cache_status(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: plan-cli
        steps:
          a: {{uses: {C}:numbers, matrix: {{n: [1, 2]}}, with: {{n: "${{matrix.n}}"}}}}
        """)
    )
    result = cli.invoke(app, ["plan", str(path)])
    assert result.exit_code == 0
    assert "a[n=1]" in result.output and "will run" in result.output


def test_schema_checks_components_and_parameters(cli):
    import jsonschema

    schema = pipeline_schema()
    validator = jsonschema.Draft202012Validator(schema)
    good = {"name": "x", "steps": {"a": {"uses": "enginetest.numbers", "with": {"n": "${params.n}"}}}}
    assert list(validator.iter_errors(good)) == []
    bad_param = {"name": "x", "steps": {"a": {"uses": "enginetest.numbers", "with": {"nn": 2}}}}
    assert list(validator.iter_errors(bad_param))
    bad_key = {"name": "x", "steps": {"a": {"uses": "enginetest.numbers", "wiht": {}}}}
    assert list(validator.iter_errors(bad_key))
    result = cli.invoke(app, ["schema"])
    assert result.exit_code == 0 and json.loads(result.output)["title"] == "bottlenecks pipeline"


def test_entry_point_plugins_register_components(monkeypatch, tmp_path):
    plugin = tmp_path / "my_plugin.py"
    plugin.write_text(
        textwrap.dedent("""\
        from components import component

        @component("myorg.echo", outputs=["text"])
        def echo(ctx, *, text: str = "hi") -> dict:
            '''Echo the text.'''
            return {"text": text}
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = metadata.EntryPoint(name="myorg", value="my_plugin", group=reg.ENTRY_POINT_GROUP)
    real = metadata.entry_points
    monkeypatch.setattr(
        metadata, "entry_points", lambda **kw: [ep] if kw.get("group") == reg.ENTRY_POINT_GROUP else real(**kw)
    )
    reg.load_plugins()
    assert reg.get("myorg.echo").outputs == ("text",)


def test_a_component_needs_typed_keyword_parameters():
    with pytest.raises(reg.ComponentError, match="parameter 'n' needs a type annotation"):

        @reg.component("bad.untyped")
        def untyped(ctx, *, n=3):
            return {}

    with pytest.raises(reg.ComponentError, match="first parameter must be 'ctx'"):

        @reg.component("bad.noctx")
        def noctx(n: int = 3):
            return {}
