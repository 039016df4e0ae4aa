"""`plan` fits the terminal it prints to: under 120 columns, the step run, its cache and why, wrapped."""

from typer.testing import CliRunner

from flows.cli import app
from tests.support.files import write

C = "tests.support.engine_components"
PIPE = f"""\
    name: wide-enough
    steps:
      nums_with_a_rather_long_step_name:
        uses: {C}:numbers
        matrix: {{offset: [0, 100, 200]}}
        with: {{n: 3, offset: "${{matrix.offset}}"}}
      total_of_every_instance_of_the_numbers:
        uses: {C}:total
        with: {{values: [1, 2, 3]}}
        needs: [nums_with_a_rather_long_step_name]
    """


def test_plan_fits_80_columns_and_shows_every_column_when_wide(tmp_path, home):
    path = write(tmp_path, PIPE)
    narrow = CliRunner().invoke(app, ["plan", str(path)], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    lines = narrow.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, narrow.stdout
    header = next(line for line in lines if "step run" in line)
    assert "why" in header and "key" not in header and "component" not in header
    assert "`plan --json` has them" in narrow.output
    wide = CliRunner().invoke(app, ["plan", str(path)], env={"COLUMNS": "200"})
    header = next(line for line in wide.stdout.splitlines() if "step run" in line)
    assert all(col in header for col in ("component", "after", "cache", "why", "key"))
