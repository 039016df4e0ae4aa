"""What the CLI prints from a file or a location is printed literally: `FILE:100:COL:` stays itself
(Rich used to read `:100:` as the emoji shortcode for 💯), and markup such as `[red]` in a step
id, a value or a file name is shown, not interpreted."""

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.language.errors import PipelineInvalid
from flows.plan.build import build
from tests.conftest import REPO

C = "tests.support.engine_components"
ALLOWED = "allowed: uses, with, matrix, needs, retries, retry_delay, cache, resources, description"


@pytest.fixture
def cli():
    return CliRunner()


def bad_key_on_line(line: int) -> str:
    """A pipeline whose one error, a misspelt step key, is on ``line`` (comments fill the lines before)."""
    head = f"name: t\nsteps:\n  a:\n    uses: {C}:numbers\n"
    return head + "# padding\n" * (line - 5) + "    wiht: {n: 2}\n"


def errors_of(path) -> list[str]:
    """The lines ``PipelineInvalid`` holds: what the CLI must print, character for character."""
    with pytest.raises(PipelineInvalid) as e:
        build(path)
    return [str(located) for located in e.value.errors]


@pytest.mark.parametrize("line", [100, 1234])
def test_an_error_on_line_100_prints_as_file_100_col(line, cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(bad_key_on_line(line))
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"{path}:{line}:5: unknown step 'a' key 'wiht' (did you mean 'with'?); {ALLOWED}",
        "1 of 1 file(s) invalid",
    ]
    assert "💯" not in result.output


def test_every_emoji_shortcode_line_number_stays_a_number(cli, tmp_path, home):
    """Rich knows shortcodes that are numbers (:100:, :1234:); several files, one error each, all literal."""
    paths = []
    for line in (5, 8, 100, 1234):
        path = tmp_path / f"p{line}.yaml"
        path.write_text(bad_key_on_line(line))
        paths.append(path)
    result = cli.invoke(app, ["check", *map(str, paths)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"{path}:{line}:5: unknown step 'a' key 'wiht' (did you mean 'with'?); {ALLOWED}"
        for path, line in zip(paths, (5, 8, 100, 1234))
    ] + ["4 of 4 file(s) invalid"]


def test_emoji_shortcodes_in_a_file_name_and_its_values_stay_text(cli, tmp_path, home):
    folder = tmp_path / ":100:"
    folder.mkdir()
    path = folder / ":smile:.yaml"
    path.write_text(f"name: ':thumbs_up:'\nsteps:\n  a: {{uses: {C}:numbers, wiht: ':100: :smile:'}}\n")
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[:-1] == errors_of(path)
    assert result.stderr.startswith(f"{tmp_path}/:100:/:smile:.yaml:3:")
    path.write_text(f"name: ':thumbs_up:'\nsteps:\n  a: {{uses: {C}:numbers}}\n")
    ok = cli.invoke(app, ["check", str(path)])
    assert ok.exit_code == 0
    assert ok.stdout == f"ok {path}: 1 steps, 1 step runs\n"


MARKUP = {
    "a step id": "name: t\nsteps:\n  '[red]a[/red]': {uses: '" + C + ":numbers'}\n",
    "a component name": "name: t\nsteps:\n  a: {uses: '[red]x[/red]'}\n",
    "an unknown key": "name: t\nsteps:\n  a: {uses: '" + C + ":numbers', '[bold]k': 1}\n",
    "a parameter value": "name: t\nsteps:\n  a: {uses: '" + C + ":numbers', with: {n: '[red]lots[/]'}}\n",
    "a closing tag alone": "name: t\nsteps:\n  a: {uses: '" + C + ":numbers', with: {n: '[/]'}}\n",
    "an escaped bracket": "name: t\nsteps:\n  a: {uses: '" + C + ":numbers', with: {n: '\\[red] \\\\[b]'}}\n",
    "a profile name": "name: t\nprofiles: {'[link=http://x]p[/link]': 1}\nsteps:\n  a: {uses: '" + C + ":numbers'}\n",
}


@pytest.mark.parametrize("case", sorted(MARKUP))
def test_rich_markup_in_the_file_is_printed_literally(case, cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(MARKUP[case])
    expected = errors_of(path)
    assert any("[" in line for line in expected), expected  # the case does quote the markup
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == expected + ["1 of 1 file(s) invalid"]


def test_markup_in_a_file_name_is_printed_literally(cli, tmp_path, home):
    path = tmp_path / "[bold]p[red].yaml"
    path.write_text(f"name: t\nsteps:\n  a: {{uses: {C}:numbers}}\n")
    ok = cli.invoke(app, ["check", str(path)])
    assert ok.exit_code == 0 and ok.stdout == f"ok {path}: 1 steps, 1 step runs\n"
    path.write_text("name: t\nsteps: {}\n")
    bad = cli.invoke(app, ["check", str(path)])
    assert bad.exit_code == 2
    assert bad.stderr.splitlines() == [f"{path}:2:8: 'steps' is empty; add at least one step", "1 of 1 file(s) invalid"]


def test_the_command_prints_line_100_literally_in_a_colour_terminal(tmp_path):
    """The real entry point, with colour forced: the located lines carry no emoji and no escape codes."""
    path = tmp_path / "p.yaml"
    path.write_text(bad_key_on_line(100))
    markup = tmp_path / "m.yaml"
    markup.write_text(MARKUP["a component name"])
    env = {
        **os.environ,
        "BOTTLENECKS_HOME": str(tmp_path / "home"),
        "FORCE_COLOR": "1",
        "TERM": "xterm-256color",
        "COLUMNS": "40",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "flows.cli", "check", str(path), str(markup)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert f"{path}:100:5: unknown step 'a' key 'wiht' (did you mean 'with'?); {ALLOWED}" in lines
    assert any(line.startswith(f"{markup}:3:14: step 'a': ") and "'[red]x[/red]'" in line for line in lines), lines
    assert "💯" not in proc.stderr and "Traceback" not in proc.stderr
