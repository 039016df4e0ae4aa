"""What a hostile user hands `check`, `plan` and `run` instead of a pipeline file: a name too long,
a pipe, a socket, a device, a directory, a link loop, an unreadable or enormous file, a `--set`
value that is not YAML. Each ends at once with exit status 2 and one located line that names the
file and what is wrong, never a hang or a traceback; and `history` reads without writing."""

from __future__ import annotations

import errno
import os
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from flows.cli import app
from flows.language.errors import Collector, kind
from flows.language.yamlload import load
from flows.plan.build import build
from tests.language.test_fuzz import LONG, bounded

C = "tests.support.engine_components"
STEP = f"name: t\nsteps:\n  a: {{uses: '{C}:numbers'}}\n"
GIVE = "give the path of a pipeline's .yaml file"
SECONDS = 20  # each case ends in well under a second; a case past this hangs (raises CheckHung)


@pytest.fixture(scope="module")
def cli(tmp_path_factory) -> CliRunner:
    path = tmp_path_factory.mktemp("warm") / "p.yaml"
    path.write_text(STEP)
    build(path)  # import the component library once
    return CliRunner()


def refused(cli: CliRunner, *args: str, command: str = "check") -> list[str]:
    """Run ``command`` in-process; assert it refused cleanly; return its error lines."""
    with bounded(SECONDS):
        result = cli.invoke(app, [command, *args])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.output.splitlines()


# -- the file itself ---------------------------------------------------------------------------------
def test_a_name_longer_than_the_file_system_allows(cli, tmp_path, home):
    path = tmp_path / ("a" * 300 + ".yaml")
    for command in ("check", "plan", "run"):
        assert (
            f"{path}:1:1: cannot read pipeline file: File name too long; a name in a path may have at most "
            "255 bytes (a whole path 4,096); check the path" in refused(cli, str(path), command=command)
        )


@pytest.mark.parametrize("command", ["check", "plan", "run"])
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(command, cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    os.mkfifo(path)
    expected = f"{path}:1:1: this is a named pipe (FIFO), not a pipeline file; {GIVE}"
    assert expected in refused(cli, str(path), command=command)


def test_a_socket(cli, tmp_path, home):
    path = tmp_path / "s.yaml"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        assert f"{path}:1:1: this is a socket, not a pipeline file; {GIVE}" in refused(cli, str(path))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_is_refused_before_it_is_read(device, cli, home):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    assert f"{device}:1:1: this is a character device, not a pipeline file; {GIVE}" in refused(cli, device)


def test_a_directory_a_missing_file_and_a_file_used_as_a_folder(cli, tmp_path, home):
    (tmp_path / "f").write_text(STEP)
    lines = refused(cli, str(tmp_path), str(tmp_path / "nope.yaml"), str(tmp_path / "f" / "p.yaml"))
    assert f"{tmp_path}:1:1: this is a directory, not a pipeline file; {GIVE}" in lines
    assert (
        f"{tmp_path / 'nope.yaml'}:1:1: cannot read pipeline file: No such file or directory; "
        "check the path (it is relative to the current folder)" in lines
    )
    assert (
        f"{tmp_path / 'f' / 'p.yaml'}:1:1: cannot read pipeline file: Not a directory; a part of the path "
        "before the file name is a file, not a folder; check the path" in lines
    )


def test_a_symbolic_link_loop(cli, tmp_path, home):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.symlink_to(b)
    b.symlink_to(a)
    assert (
        f"{a}:1:1: cannot read pipeline file: Too many levels of symbolic links; symbolic links here lead "
        "back to themselves in a loop; point the link at a pipeline file" in refused(cli, str(a))
    )


def test_a_link_to_a_pipeline_file_is_read(cli, tmp_path, home):
    (tmp_path / "p.yaml").write_text(STEP)
    (tmp_path / "link.yaml").symlink_to(tmp_path / "p.yaml")
    result = cli.invoke(app, ["check", str(tmp_path / "link.yaml")])
    assert result.exit_code == 0, result.output


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(STEP)
    path.chmod(0)
    assert (
        f"{path}:1:1: cannot read pipeline file: Permission denied; make the file readable (chmod u+r) "
        "or run as a user who may read it" in refused(cli, str(path))
    )


def test_a_file_the_system_will_not_open(cli, tmp_path, home, monkeypatch):
    """The same refusal where mode 000 does not stop a reader (root): the system says no."""
    path = tmp_path / "p.yaml"
    path.write_text(STEP)
    real_open = os.open

    def deny(file, *args, **kwargs):
        if os.fspath(file) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    assert (
        f"{path}:1:1: cannot read pipeline file: Permission denied; make the file readable (chmod u+r) "
        "or run as a user who may read it" in refused(cli, str(path))
    )


def test_a_file_that_is_not_utf8(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_bytes("name: t\n# caf\u00e9\n".encode("latin-1"))
    assert (
        f"{path}:2:6: the file is not UTF-8 text (byte 0xe9 cannot start a character); is it a binary file? "
        "Pipelines are YAML text in UTF-8" in refused(cli, str(path))
    )


def test_a_file_in_utf16(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(STEP, encoding="utf-16")  # what some Windows editors save
    assert (
        f"{path}:1:1: the file is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8"
        in refused(cli, str(path))
    )


def test_an_enormous_file_is_read_only_up_to_the_limit(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    with open(path, "wb") as f:
        f.truncate(8 << 30)  # 8 GiB, sparse: a read of the whole would take minutes and the memory
    assert (
        f"{path}:1:1: the file is larger than 1,048,576 bytes (the largest allowed); keep big lists in a "
        "data file the step reads" in refused(cli, str(path))
    )


def test_control_characters_in_a_name_are_printed_as_escapes(cli, tmp_path, home):
    """A terminal would act on them: colour the rest of the line, ring, move the cursor."""
    path = tmp_path / "x\x1b[31mred\x07\r.yaml"
    path.mkdir()
    shown = str(path).replace("\x1b", "\\x1b").replace("\x07", "\\x07").replace("\r", "\\r")
    assert f"{shown}:1:1: this is a directory, not a pipeline file; {GIVE}" in refused(cli, str(path))


# -- --set -------------------------------------------------------------------------------------------
def test_a_set_value_that_is_not_yaml_names_the_set_its_key_and_its_text(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(STEP + "params: {seeds: [0], lr: 0.1}\n")
    lines = refused(cli, str(path), "--set", "seeds=[[[")
    located = [line for line in lines if line.startswith(("--set", str(path)))]
    assert located == [
        "--set:1:7: --set seeds=[[[: the value is not valid YAML (did not find expected node content "
        "(while parsing a flow node)); quote it to mean text, as in --set 'seeds=\"...\"'"
    ]


def test_plain_set_values_still_read_as_yaml(tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(STEP + "params: {name: x, lr: 0.1, seeds: [0]}\n")
    sets = ["name=foo", "lr=1e-3", "seeds=[0, 1]", "a.offset=2", "name=hello, world"]
    plan = build(path, sets=sets)
    assert plan.params == {"name": "hello, world", "lr": "1e-3", "seeds": [0, 1]}  # YAML 1.1: 1e-3 is text
    assert build(path, sets=['name="[[["']).params["name"] == "[[["  # quoted: text, as the message says


# -- messages in the user's words --------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("{a: 1}", "a mapping"),
        ("[1]", "a list"),
        ("x", "a string"),
        ("3", "an integer"),
        ("0.5", "a number"),
        ("yes", "true or false"),
        ("~", "nothing (null)"),
        ("2026-12-03", "a date"),
        ("!!binary aGk=", "binary data"),
    ],
)
def test_every_yaml_value_has_a_kind_in_words(text, expected):
    errors = Collector("x")
    assert kind(load(text, errors)) == expected and not errors.errors


@pytest.mark.parametrize(
    "text, got",
    [("- a\n- b\n", "a list"), ("just a string\n", "a string"), ("42\n", "an integer"), ("true\n", "true or false")],
)
def test_a_top_level_that_is_not_a_mapping_is_named_in_yaml_words(text, got, cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    expected = f"{path}:1:1: the top level must be a mapping with 'name' and 'steps', got {got}"
    assert expected in refused(cli, str(path))


def test_a_section_that_is_not_a_mapping_is_named_in_yaml_words(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(STEP + "params: [1, 2]\n")
    assert f"{path}:4:9: 'params' must be a mapping, got a list" in refused(cli, str(path))


# -- commands that only read -------------------------------------------------------------------------
def test_the_history_of_a_new_folder_reads_no_store_into_being(tmp_path, monkeypatch):
    from flows.ops import history

    store = tmp_path / ".bottlenecks" / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store}")
    with pytest.raises(history.HistoryError, match="no runs of pipeline 'nothing-here' in the MLflow store"):
        history.table("nothing-here")
    assert not store.exists()


@pytest.mark.slow  # the whole command: imports Prefect, asks the servers
def test_history_of_a_new_folder_creates_no_store(tmp_path, monkeypatch):
    store = tmp_path / ".bottlenecks" / "mlflow.db"
    monkeypatch.setenv("BOTTLENECKS_HOME", str(store.parent))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{store}")
    import mlflow

    before = mlflow.get_tracking_uri()  # an earlier test in this process may have set one
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    try:
        result = CliRunner().invoke(app, ["history", "nothing-here", "--no-plot"])
    finally:
        mlflow.set_tracking_uri(before)
    assert result.exit_code == 2, result.output
    assert f"no runs of pipeline 'nothing-here' in the MLflow store sqlite:///{store};" in result.output
    assert not store.parent.exists()  # not even an empty state folder


def test_plan_in_a_new_folder_leaves_no_state_folder(cli, tmp_path, monkeypatch):
    path = tmp_path / "p.yaml"
    path.write_text(STEP)
    state = tmp_path / ".bottlenecks"
    monkeypatch.setenv("BOTTLENECKS_HOME", str(state))
    result = cli.invoke(app, ["plan", str(path)])
    assert result.exit_code == 0, result.output
    assert "not run before" in result.output  # it read the (missing) cache as empty
    assert not state.exists()


# -- whatever the input: an end, exit 0 or 2, no traceback -------------------------------------------
CHARACTERS = st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00")
# odd characters (line breaks, escapes, accents), and names past the file system's 255 bytes
NAMES = st.text(CHARACTERS, min_size=1, max_size=40) | st.text(CHARACTERS, min_size=200, max_size=400)
# 60 fixed cases each by default; BOTTLENECKS_FUZZ_EXAMPLES=N draws N at random (as test_fuzz.py)
FUZZ = settings(
    max_examples=LONG or 60,
    deadline=None,
    derandomize=not LONG,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def ends_cleanly(cli: CliRunner, *args: str) -> None:
    with bounded(SECONDS):
        result = cli.invoke(app, ["check", *args])
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output


@pytest.mark.slow
@FUZZ
@given(name=NAMES, content=st.binary(max_size=2000))
def test_any_file_name_and_bytes_end_cleanly(name, content, cli, tmp_path_factory):
    folder = tmp_path_factory.mktemp("odd")
    path = folder / name
    try:
        path.write_bytes(content)
    except (OSError, ValueError):  # a name no file system takes: `check` must still say so
        pass
    ends_cleanly(cli, str(path))


@pytest.mark.slow
@FUZZ
@given(sets=st.lists(st.text(max_size=80).map(lambda v: f"p={v}") | st.text(max_size=80), max_size=3))
def test_any_set_text_ends_cleanly(sets, cli, tmp_path_factory):
    path = tmp_path_factory.getbasetemp() / "set_fuzz.yaml"
    path.write_text(STEP + "params: {p: 0}\n")
    ends_cleanly(cli, str(path), *[arg for s in sets for arg in ("--set", s)])
