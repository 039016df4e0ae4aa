"""Hostile command-line arguments: malformed or huge `--set` values, `${...}` in them, unknown
profiles, pipeline paths that are a folder, missing, unreadable or binary. `check`, `plan`, `run`
(its validation path only), `schedule` (where it fails before a server is asked) and `history` each
answer with one clear error line (and the command's summary line), exit status 2, no traceback,
and write nothing in the working folder.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app

C = "tests.support.engine_components"
PIPELINE = (
    "name: hostile\nparams: {n: 1}\nschedule: {cron: '0 2 * * *'}\n"
    f"steps:\n  a: {{uses: '{C}:numbers', with: {{n: '${{params.n}}'}}}}\n"
)
SUMMARY = {
    "check": "1 of 1 file(s) invalid",
    "plan": "1 error(s); nothing was run.",
    "run": "1 error(s); nothing was run.",
    "schedule": "1 error(s); nothing was scheduled.",
}
COMMANDS = sorted(SUMMARY)
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256))


class WentTooFar(Exception):
    """The command got past validation: `run` was about to start, `schedule` to ask the server."""


def _went_too_far(*args, **kwargs):
    raise WentTooFar("got past validation")


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working folder holding p.yaml (and the hostile files), as the current directory; state
    (BOTTLENECKS_HOME) elsewhere; `run` and `schedule` stopped where they would start or ask a server."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "p.yaml").write_text(PIPELINE)
    (folder / "dir.yaml").mkdir()
    (folder / "binary.yaml").write_bytes(PNG)
    (folder / "bad.yaml").write_text("name: hostile\nsteps: {}\n")
    (folder / "unscheduled.yaml").write_text(PIPELINE.replace("schedule: {cron: '0 2 * * *'}\n", ""))
    (folder / "secret.yaml").write_text(PIPELINE)
    (folder / "secret.yaml").chmod(0)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("BOTTLENECKS_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    run_module = sys.modules["flows.cli.run"]
    monkeypatch.setattr(run_module, "require_servers", _went_too_far)
    from flows.cli import schedules

    monkeypatch.setattr(schedules, "prefect_server", _went_too_far)
    before = listing(folder)
    yield folder
    (folder / "secret.yaml").chmod(0o644)
    assert listing(folder) == before, "the command wrote in the working folder"
    state = tmp_path / "state"
    assert not state.exists() or not any(state.iterdir()), f"the command left state: {list(state.rglob('*'))}"


def listing(folder: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p.relative_to(folder)), p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*"))


def refused(args: list[str], summary: str | None = None) -> str:
    """Invoke the CLI; check exit 2, no traceback, nothing on stdout, one error line (then
    ``summary`` when given); return the error line."""
    result = CliRunner().invoke(app, args)
    assert not isinstance(result.exception, WentTooFar), f"{args[0]} got past validation: {result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    if summary is not None:
        assert lines[-1:] == [summary], lines
        lines = lines[:-1]
    assert len(lines) == 1, f"{len(lines)} error lines for one mistake: {lines}"
    return lines[0]


# -- --set ----------------------------------------------------------------------------------------
SETS = {
    "only an equals sign": ("=", "--set:1:1: expected KEY=VALUE, got '='"),
    "no equals sign": ("noequals", "--set:1:1: expected KEY=VALUE, got 'noequals'"),
    "no key": ("=1", "--set:1:1: expected KEY=VALUE, got '=1'"),
    "a blank key": ("  =1", "--set:1:1: expected KEY=VALUE, got '  =1'"),
    "an unknown param": ("nope=1", "--set:1:1: unknown param 'nope'; params: n"),
    "an unknown step": ("nope.n=1", "--set:1:1: unknown param or step 'nope'"),
    "three parts": (
        "a.b.c=1",
        "--set:1:3: step 'a': unknown parameter 'b.c' for enginetest.numbers; parameters: n, offset",
    ),
    "a reference to an unknown step": (
        "a.n=${nope.x}",
        "--set:1:5: step 'a': reference ${nope.x} names unknown step 'nope'",
    ),
    "a markup and emoji value": ("[red]x:100:=1", "--set:1:1: unknown param '[red]x:100:'; params: n"),
    "a huge value": pytest.param(
        "n=" + "x" * 200_000,
        "--set:1:10003: line is 200,000 characters long; at most "
        "10,000 are allowed (break long lists over several lines)",
    ),
    "deeply nested YAML": pytest.param(
        "n=" + "[" * 100 + "]" * 100,
        "--set:1:67: values nest 65 levels deep here; at most 64 are allowed",
    ),
    "a recursive alias": pytest.param(
        "n=&a [*a]",
        "--set:1:7: alias *a is used inside its own anchor; recursive structures are not allowed",
    ),
    "a value that is not YAML": ("n=[[[", "--set:1:3: --set n=[[[: the value is not valid YAML"),
    "a params reference": pytest.param("n=${params.n}", "--set:1:3: "),
    "a step output reference": pytest.param("n=${a.total}", "--set:1:3: "),
}


@pytest.mark.parametrize("value, expected", SETS.values(), ids=SETS.keys())
@pytest.mark.parametrize("command", COMMANDS)
def test_a_hostile_set_is_one_error_and_exit_2(command, value, expected, work):
    line = refused([command, "p.yaml", "--set", value], SUMMARY[command])
    assert line.startswith(expected), line


@pytest.mark.parametrize("value", ["a.b.c=1", "a.n=${nope.x}"])
def test_a_set_error_points_at_the_set_not_at_the_file(value, work):
    line = refused(["check", "p.yaml", "--set", value], SUMMARY["check"])
    assert line.startswith("--set:1:"), line


# -- profiles -------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["nope", "", "[red]x:100:", "x" * 5000])
@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_profile_is_one_error_and_exit_2(command, profile, work):
    line = refused([command, "p.yaml", "--profile", profile], SUMMARY[command])
    assert line == f"p.yaml:1:1: unknown profile {profile!r} (profiles: none defined)"


# -- the pipeline path ----------------------------------------------------------------------------
GIVE = "give the path of a pipeline's .yaml file"
PATHS = {
    "a folder": ("dir.yaml", "dir.yaml:1:1: this is a directory, not a pipeline file; " + GIVE),
    "a missing file": (
        "missing.yaml",
        "missing.yaml:1:1: cannot read pipeline file: No such file or directory; "
        "check the path (it is relative to the current folder)",
    ),
    "a binary file": (
        "binary.yaml",
        "binary.yaml:1:1: the file is not UTF-8 text (byte 0x89 cannot start a "
        "character); is it a binary file? Pipelines are YAML text in UTF-8",
    ),
    "the null device": (os.devnull, f"{os.devnull}:1:1: this is a character device, not a pipeline file; " + GIVE),
}


@pytest.mark.parametrize("case", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_pipeline_path_is_one_error_and_exit_2(command, case, work):
    path, expected = case
    assert refused([command, path], SUMMARY[command]) == expected


@pytest.fixture
def unreadable(work):
    """secret.yaml, of mode 000 (skipped where that does not stop reading it: running as root)."""
    path = work / "secret.yaml"
    try:
        path.read_bytes()
    except PermissionError:
        return path
    pytest.skip("running as root: a file of mode 000 is still readable")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unreadable_pipeline_is_one_error_and_exit_2(command, unreadable):
    line = refused([command, unreadable.name], SUMMARY[command])
    assert line == (
        "secret.yaml:1:1: cannot read pipeline file: Permission denied; make the file readable (chmod u+r) "
        "or run as a user who may read it"
    )


# -- run: refused before anything starts ----------------------------------------------------------
def test_run_refuses_an_unknown_executor_before_starting(work):
    assert refused(["run", "p.yaml", "--executor", "nope"]) == (
        "--executor must be one of threads, processes, dask, got 'nope'"
    )


@pytest.mark.parametrize("workers", ["0", "-3"])
def test_run_refuses_a_number_of_workers_below_one(workers, work):
    line = refused(["run", "p.yaml", "--workers", workers])
    assert "--workers" in line


def test_run_refuses_a_cluster_that_is_no_address(work):
    line = refused(["run", "p.yaml", "--cluster", "nonsense"])
    assert "--cluster" in line


# -- schedule: refused before a server is asked ---------------------------------------------------
SCHEDULES = {
    "no pipeline": ([], None, "give a PIPELINE file (or --list)"),
    "an invalid pipeline": (["bad.yaml"], SUMMARY["schedule"], "bad.yaml:2:8: 'steps' is empty; add at least one step"),
    "a cron that is none": (
        ["p.yaml", "--cron", "not a cron"],
        None,
        "invalid schedule cron='not a cron' timezone='UTC': Invalid cron string",
    ),
    "an unknown timezone": (
        ["p.yaml", "--timezone", "Mars/Base"],
        None,
        "invalid schedule cron='0 2 * * *' timezone='Mars/Base': Invalid timezone",
    ),
}


@pytest.mark.parametrize("case", SCHEDULES.values(), ids=SCHEDULES.keys())
def test_schedule_refuses_before_asking_a_server(case, work):
    args, summary, expected = case
    assert refused(["schedule", *args], summary).startswith(expected)


def test_schedule_of_a_pipeline_without_schedule_names_the_fix(work):
    assert refused(["schedule", "unscheduled.yaml"]) == (
        'unscheduled.yaml: no schedule: pass --cron "0 2 * * *" or add \'schedule: {cron: "0 2 * * *"}\' to the '
        "pipeline file"
    )


# -- history --------------------------------------------------------------------------------------
NO_RUNS = re.compile(
    r"^no runs of pipeline '(?P<name>.*)' in the MLflow store \S+; the experiment is named after "
    r"the pipeline's 'name:' \(run it first, or point MLFLOW_TRACKING_URI at the right server\)$"
)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["no-such-pipeline", "[red]x:100:", "", "x" * 300])
def test_history_of_a_pipeline_that_never_ran(name, work):
    m = NO_RUNS.match(refused(["history", name]))
    assert m and m["name"] == name


def test_history_refuses_a_bad_threshold(work):
    line = refused(["history", "no-such-pipeline", "--threshold", "junk"])
    assert line.startswith("--threshold 'junk': expected a number like 0.2")


@pytest.mark.parametrize("case", ["a missing file", "a folder"])
def test_history_of_a_yaml_path_that_is_no_file_is_its_error_not_a_pipeline_name(case, work):
    """Not read as the name of a pipeline without runs: refused as `check` refuses it."""
    path, expected = PATHS[case]
    assert refused(["history", path], "1 error(s); no history shown.") == expected


@pytest.mark.parametrize("case", ["a missing file", "a folder"])
def test_removing_the_schedule_of_a_yaml_path_that_is_no_file_is_its_error(case, work):
    path, expected = PATHS[case]
    assert refused(["schedule", path, "--remove"], "1 error(s); nothing was removed.") == expected


@pytest.mark.parametrize(
    "path, expected",
    [
        ("bad.yaml", "bad.yaml:2:8: 'steps' is empty; add at least one step"),
        ("binary.yaml", PATHS["a binary file"][1]),
    ],
)
def test_history_of_an_invalid_pipeline_file_is_its_error_and_exit_2(path, expected, work):
    result = CliRunner().invoke(app, ["history", path])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == expected and len(lines) <= 2, lines  # the error, then at most a summary line
