"""Every invalid-pipeline case: one `FILE:LINE:COL: message` line, exit status 2, nothing run."""

import textwrap

import pytest
from typer.testing import CliRunner

from flows.cli import app

C = "tests.support.engine_components"
HEAD = f"name: t\nsteps:\n  a:\n    uses: {C}:numbers\n"

CASES = {
    "yaml syntax": (
        "name: t\nsteps: [a\n",
        "3:1: YAML syntax error: did not find expected ',' or ']' (while parsing a flow sequence)",
    ),
    "unquoted reference in a flow mapping": (
        HEAD + f"  b:\n    uses: {C}:numbers\n    with: {{n: ${{a.out}}}}\n",
        "7:16: YAML syntax error: did not find expected ',' or '}' (while parsing a flow mapping); "
        'a ${...} reference inside { } or [ ] must be quoted, e.g. data: "${step.output}"',
    ),
    "tab indentation": (
        "name: t\nsteps:\n\ta: {uses: x}\n",
        "3:1: tab character in indentation; YAML indents with spaces only",
    ),
    "duplicate key": (HEAD + f"  a:\n    uses: {C}:numbers\n", "5:3: duplicate key 'a' (first defined at line 3)"),
    "unknown top-level key": (
        "name: t\nparms: {}\n" + HEAD[8:],
        "2:1: unknown top-level key 'parms' (did you mean 'params'?); allowed: name, "
        "description, params, settings, default_profile, profiles, schedule, steps",
    ),
    "unknown step key": (
        HEAD + "    wiht: {n: 2}\n",
        "5:5: unknown step 'a' key 'wiht' (did you mean 'with'?); allowed: uses, with, "
        "matrix, needs, retries, retry_delay, cache, resources, description",
    ),
    "unknown component": (
        "name: t\nsteps:\n  a: {uses: enginetest.numbrs}\n",
        "3:13: step 'a': unknown component 'enginetest.numbrs' (did you mean 'enginetest.numbers'?)",
    ),
    "unknown parameter": (
        HEAD + "    with: {nn: 2}\n",
        "5:12: step 'a': unknown parameter 'nn' for enginetest.numbers (did you mean 'n'?); parameters: n, offset",
    ),
    "wrong parameter type": (
        HEAD + "    with: {n: lots}\n",
        "5:15: step 'a': parameter 'n' of enginetest.numbers expects an integer, got a string ('lots')",
    ),
    "missing required parameter": (
        HEAD + f"  b: {{uses: {C}:total}}\n",
        "5:7: step 'b': missing required parameter 'values' (a list of integers) for enginetest.total",
    ),
    "unknown step reference": (
        HEAD + f"  b: {{uses: {C}:total, with: {{values: '${{aa.values}}'}}}}\n",
        "5:68: step 'b': reference ${aa.values} names unknown step 'aa' (did you mean 'a'?)",
    ),
    "unknown output": (
        HEAD + f"  b: {{uses: {C}:total, with: {{values: '${{a.value}}'}}}}\n",
        "5:68: step 'b': step 'a' (enginetest.numbers) has no output 'value' "
        "(did you mean 'values'?); outputs: values, file, run_id",
    ),
    "a number in quotes": (
        HEAD + "    with: {n: '3'}\n",
        "5:16: step 'a': parameter 'n' of enginetest.numbers expects an integer, got a string ('3');"
        " write it without quotes",
    ),
    "a value below its bound": (
        "name: t\nsteps:\n  a: {uses: train.model, with: {data: x, model: lstm-small, steps: -1}}\n",
        "3:68: step 'a' (train.model): steps must be at least 0; got -1",
    ),
    "an unknown choice": (
        "name: t\nsteps:\n  a: {uses: train.model, with: {data: x, model: lstm-small, clip: nrom}}\n",
        "3:67: step 'a' (train.model): clip must be 'norm', 'value' or 'none'; got 'nrom' (did you mean 'norm'?)",
    ),
    "unknown param reference": (
        "name: t\nparams: {size: 3}\n" + HEAD[8:] + "    with: {n: '${params.sise}'}\n",
        "6:16: step 'a': unknown param 'sise' in ${params.sise} (did you mean 'size'?)",
    ),
    "unknown matrix axis": (
        HEAD + "    with: {n: '${matrix.k}'}\n    matrix: {kk: [1, 2]}\n",
        "5:16: step 'a': unknown matrix axis 'k' in ${matrix.k} (did you mean 'kk'?)",
    ),
    "cycle": (
        "name: t\nsteps:\n"
        f"  a: {{uses: {C}:total, with: {{values: '${{b.total}}'}}}}\n"
        f"  b: {{uses: {C}:total, with: {{values: '${{a.total}}'}}}}\n",
        "4:68: reference cycle: a -> b -> a; a step cannot depend on its own output",
    ),
    "empty matrix axis": (
        HEAD + "    matrix: {n: []}\n",
        "5:17: step 'a': matrix axis 'n' is empty; give at least one value",
    ),
    "needs unknown step": (HEAD + "    needs: [prep]\n", "5:13: step 'a': 'needs' names unknown step 'prep'"),
    "python tag": (
        "name: !!python/object:os.system t\nsteps: {}\n",
        "1:7: tag 'tag:yaml.org,2002:python/object:os.system' is not allowed: pipelines use plain "
        "YAML values only (no !!python/... or custom tags)",
    ),
    "custom tag": (
        HEAD + "    with: {n: !env N}\n",
        "5:15: tag '!env' is not allowed: pipelines use plain YAML values only (no !!python/... or custom tags)",
    ),
    "empty file": ("", "1:1: the file is empty; a pipeline needs at least 'name' and 'steps'"),
    "comments only": ("# nothing yet\n", "1:1: the file is empty; a pipeline needs at least 'name' and 'steps'"),
    "root not a mapping": ("- a\n- b\n", "1:1: the top level must be a mapping with 'name' and 'steps', got a list"),
}


@pytest.fixture
def cli():
    return CliRunner()


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_error_is_one_located_line_and_exit_2(case, cli, tmp_path, home):
    text, expected = CASES[case]
    path = tmp_path / "p.yaml"
    path.write_text(text)
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith(str(path))]
    assert lines == [f"{path}:{expected}"]
    assert "Traceback" not in result.output


def test_check_reports_every_error_in_every_file(cli, tmp_path, home):
    one, two, good = tmp_path / "one.yaml", tmp_path / "two.yaml", tmp_path / "good.yaml"
    one.write_text(HEAD + "    with: {nn: 2, n: x}\n    needs: zz\n")
    two.write_text("")
    good.write_text(HEAD)
    result = cli.invoke(app, ["check", str(one), str(two), str(good)])
    assert result.exit_code == 2
    assert f"{one}:5:12: step 'a': unknown parameter 'nn'" in result.output
    assert f"{one}:5:22: step 'a': parameter 'n'" in result.output
    assert f"{one}:6:12: step 'a': 'needs' names unknown step 'zz'" in result.output
    assert f"{two}:1:1: the file is empty" in result.output
    assert f"ok {good}" in result.output
    assert "2 of 3 file(s) invalid" in result.output


def test_run_on_invalid_pipeline_exits_2_and_runs_nothing(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(HEAD + "    with: {n: many}\n")
    result = cli.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert "nothing was run" in result.output
    assert not (home / "work").exists()


def test_unknown_override_and_profile(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: t
        params: {{size: 2}}
        profiles: {{quick: {{params: {{size: 1}}}}}}
        steps:
          a: {{uses: {C}:numbers, with: {{n: '${{params.size}}'}}}}
        """)
    )
    result = cli.invoke(app, ["check", str(path), "--set", "sise=3"])
    assert result.exit_code == 2
    assert "--set:1:1: unknown param 'sise' (did you mean 'size'?); params: size" in result.output
    result = cli.invoke(app, ["check", str(path), "--profile", "quik"])
    assert result.exit_code == 2
    assert f"{path}:3:1: unknown profile 'quik' (did you mean 'quick'?) (profiles: quick)" in result.output
    result = cli.invoke(app, ["check", str(path), "--set", "size=notanint"])
    assert result.exit_code == 2
    assert "expects an integer" in result.output
