"""Files built to exhaust time or memory: each is refused quickly as one `FILE:LINE:COL: message`,
exit status 2, no traceback, nothing run."""

import os
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.plan.build import build

C = "tests.support.engine_components"
STEP = f"name: t\nsteps:\n  a: {{uses: '{C}:numbers'}}\n"
# CPU seconds (not wall time, which a loaded machine stretches) within which a hostile file must be
# refused: a guard against expanding it, which takes minutes and gigabytes; each refusal takes
# well under a tenth of this on this machine kind
CPU_BOUND = 5.0
LIMIT_HINT = (
    "a plan may have at most 10,000; raise the limit with settings.max_step_runs in the pipeline "
    "or BOTTLENECKS_MAX_STEP_RUNS in the environment"
)


def laughs(levels: int = 9) -> str:
    """The "billion laughs": each anchor holds nine aliases of the one before (9**9 values)."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def grid(n: int) -> str:
    return "[" + ", ".join(str(i) for i in range(n)) + "]"


def ints(n: int) -> str:
    return "\n".join(f"    - {i}" for i in range(n)) + "\n"


# name -> (file content, expected "LINE:COL: message")
CASES = {
    "billion laughs": (
        laughs(),
        "5:15: the file expands to more than 20,000 YAML values (alias *a3 adds a copy "
        "of 7,381 values); anchors and aliases count once per use. Keep big lists in a "
        "data file the step reads",
    ),
    "many aliases to a big anchor": (
        STEP + "params:\n  big: &big\n" + ints(2000) + "  copies: [" + ", ".join(["*big"] * 20) + "]\n",
        "2006:60: the file expands to more than 20,000 YAML values (alias *big adds a copy of 2,001 values); "
        "anchors and aliases count once per use. Keep big lists in a data file the step reads",
    ),
    "merge keys of a big anchor": (
        STEP
        + "params:\n  base: &b\n"
        + "".join(f"    k{i}: {i}\n" for i in range(3000))
        + "".join(f"  m{i}: {{<<: *b}}\n" for i in range(4)),
        "3008:12: the file expands to more than 20,000 YAML values (alias *b adds a copy of 6,001 values); "
        "anchors and aliases count once per use. Keep big lists in a data file the step reads",
    ),
    "deep flow sequences": (
        STEP + "params:\n  p: " + "[" * 500 + "]" * 500 + "\n",
        "5:68: values nest 65 levels deep here; at most 64 are allowed",
    ),
    "deeper flow sequences": (
        STEP + "params:\n  p: " + "[" * 2000 + "]" * 2000 + "\n",  # libyaml's bound
        "5:1004: values nest more than 64 levels deep; at most 64 are allowed",
    ),
    "deep flow sequences, never closed": (
        "[\n" * 300_000,
        "65:1: values nest 65 levels deep here; at most 64 are allowed",
    ),
    "deep flow sequences on one line, never closed": (
        "[" * 9000,
        "1:1001: values nest more than 64 levels deep; at most 64 are allowed",
    ),
    "deep flow mappings": (
        "{a: " * 500 + "1" + "}" * 500 + "\n",
        "1:254: values nest 65 levels deep here; at most 64 are allowed",
    ),
    "deep block mappings": (
        "".join("  " * i + "a:\n" for i in range(200)),
        "64:127: values nest 65 levels deep here; at most 64 are allowed",
    ),
    "deep block sequences": (
        "".join("  " * i + "-\n" for i in range(200)),
        "65:129: values nest 65 levels deep here; at most 64 are allowed",
    ),
    "deep through aliases": (
        "x0: &x0 [leaf]\n" + "".join(f"x{i}: &x{i} [*x{i - 1}]\n" for i in range(1, 80)),
        "63:12: values nest 65 levels deep here (alias *x61 adds a copy of 63 values); at most 64 are allowed",
    ),
    "merge chain": (
        "m0: &m0 {k0: 0}\n" + "".join(f"m{i}: &m{i} {{<<: *m{i - 1}, k{i}: {i}}}\n" for i in range(1, 300)),
        "63:16: values nest 65 levels deep here (alias *m61 adds a copy of 247 values); at most 64 are allowed",
    ),
    "recursive alias": (
        "name: t\nsteps: &s [*s]\n",
        "2:12: alias *s is used inside its own anchor; recursive structures are not allowed",
    ),
    "undefined alias": (
        STEP + "params: {n: *nope}\n",
        "4:13: alias *nope names no anchor defined before it (define it first with &nope)",
    ),
    "duplicate anchor": (
        STEP + "params: {a: &x 1, b: &x 2}\n",
        "4:22: anchor &x is defined twice (first at line 4); give each anchor its own name",
    ),
    "second document": (
        STEP + "---\nname: u\n",
        "4:1: a second YAML document starts here; a pipeline file holds one (remove the '---' or split the file)",
    ),
    "huge number of keys": (
        "params:\n" + "".join(f"  k{i}: {i}\n" for i in range(30000)),
        "10000:10: the file expands to more than 20,000 YAML values; anchors and aliases "
        "count once per use. Keep big lists in a data file the step reads",
    ),
    "very long line": (
        STEP + "description: " + "x" * 20000 + "\n",
        "4:10001: line is 20,013 characters long; at most 10,000 are allowed (break long lists over several lines)",
    ),
    "very long scalar": (
        STEP + "description: |\n" + "  " + "y" * 9000 + "\n" * 1 + ("  " + "y" * 9000 + "\n") * 8,
        "4:14: a value of 81,009 characters is longer than the 65,536 allowed; keep long text in a file the step reads",
    ),
    "file too large": (
        "# padding\n" * 120_000,
        "1:1: the file is larger than 1,048,576 bytes (the largest allowed); keep big lists in a "
        "data file the step reads",
    ),
    "huge decimal integer": (
        STEP + "params: {n: " + "9" * 4000 + "}\n",
        "4:13: integer 9999999999999999999999999999... (4,000 characters) does not fit in "
        "64 bits (|n| < 2**63); quote it if it is meant as text",
    ),
    "huge hex integer": (
        STEP + "params: {n: 0x" + "f" * 2000 + "}\n",
        "4:13: integer 0xffffffffffffffffffffffffff... (2,002 characters) does not fit in 64 "
        "bits (|n| < 2**63); quote it if it is meant as text",
    ),
    "integer just past 64 bits": (
        STEP + "params: {n: 9223372036854775808}\n",
        "4:13: integer 9223372036854775808 does not fit in 64 bits (|n| < 2**63); quote it if it is meant as text",
    ),
    "NUL byte": (
        STEP + "params: {n: 1\x00}\n",
        "4:14: control character NUL is not allowed in YAML; is this a binary file?",
    ),
    "other control character": (
        STEP + "description: bell\x07\n",
        "4:18: control character U+0007 is not allowed in YAML; is this a binary file?",
    ),
    "scalar at top level": (
        "just a string\n",
        "1:1: the top level must be a mapping with 'name' and 'steps', got a string",
    ),
    "number at top level": ("42\n", "1:1: the top level must be a mapping with 'name' and 'steps', got an integer"),
    "matrix product": (
        f"name: t\nsteps:\n  a:\n    uses: {C}:numbers\n    with: {{n: '${{matrix.x}}'}}\n"
        f"    matrix: {{x: {grid(200)}, y: {grid(200)}, z: {grid(200)}}}\n",
        "6:17: step 'a': the matrix x (200) × y (200) × z (200) expands to 8,000,000 step runs; " + LIMIT_HINT,
    ),
    "matrix from params lists": (
        f"name: t\nparams:\n  xs:\n{ints(3000)}steps:\n  a:\n    uses: {C}:numbers\n"
        "    matrix: {x: '${params.xs}', y: '${params.xs}'}\n",
        "3007:18: step 'a': the matrix x (3,000) × y (3,000) expands to 9,000,000 step runs; " + LIMIT_HINT,
    ),
    "matrices summed over steps": (
        "name: t\nparams:\n  xs:\n"
        + ints(4000)
        + "steps:\n"
        + "".join(f"  s{i}: {{uses: '{C}:numbers', matrix: {{x: '${{params.xs}}'}}}}\n" for i in range(3)),
        "4005:70: step 's0': the matrix x (4,000) expands to 4,000 step runs; 12,000 in the whole plan; " + LIMIT_HINT,
    ),
    "fan-in across big matrices": (
        "name: t\nparams:\n  xs:\n" + ints(3000) + "steps:\n"
        f"  a: {{uses: '{C}:numbers', matrix: {{x: '${{params.xs}}'}}}}\n"
        f"  b: {{uses: '{C}:collect', with: {{totals: '${{a.values}}'}}, matrix: {{y: {grid(40)}}}}}\n",
        "3006:6: step 'b': its 40 runs would each take 3,000 runs of 'a': more than 100,000 links in the plan "
        "(10 per allowed step run); share a matrix axis with 'a' or raise the limit with settings.max_step_runs "
        "in the pipeline or BOTTLENECKS_MAX_STEP_RUNS in the environment",
    ),
    "a bad limit setting": (
        STEP + "settings: {max_step_runs: 0}\n",
        "4:1: settings.max_step_runs must be a whole number >= 1, got 0",
    ),
}


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    """The CLI, with the component library imported once (start-up time is not what is timed)."""
    path = tmp_path_factory.mktemp("warm") / "p.yaml"
    path.write_text(STEP)
    build(path)
    return CliRunner()


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_file_is_refused_fast_as_one_located_line(case, cli, tmp_path, home):
    text, expected = CASES[case]
    path = tmp_path / "p.yaml"
    path.write_text(text)
    started = time.process_time()
    result = cli.invoke(app, ["check", str(path)])
    seconds = time.process_time() - started
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(str(path))]
    assert lines == [f"{path}:{expected}"]
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    assert seconds < CPU_BOUND, f"{case}: refused after {seconds:.2f}s of CPU"


@pytest.mark.parametrize(
    "raw, expected",
    [
        (
            b"name: t\nsteps:\n  a: \xff\xfe junk\n",
            "3:6: the file is not UTF-8 text (byte 0xff cannot start a "
            "character); is it a binary file? Pipelines are YAML text in UTF-8",
        ),
        (
            bytes(range(256)) * 8,
            "2:118: the file is not UTF-8 text (byte 0x80 cannot start a character); is it a "
            "binary file? Pipelines are YAML text in UTF-8",
        ),
        (bytes(range(128)) * 8, "1:1: control character NUL is not allowed in YAML; is this a binary file?"),
    ],
)
def test_binary_junk_is_refused_with_its_position(raw, expected, cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_bytes(raw)
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert f"{path}:{expected}" in result.output.splitlines()


def test_a_directory_or_a_missing_file(cli, tmp_path, home):
    result = cli.invoke(app, ["check", str(tmp_path), str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert f"{tmp_path}:1:1: this is a directory, not a pipeline file" in result.output
    assert f"{tmp_path / 'nope.yaml'}:1:1: cannot read pipeline file: No such file or directory" in result.output


def test_an_endless_device_is_refused_before_it_is_read(cli, home):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    started = time.process_time()
    result = cli.invoke(app, ["check", "/dev/zero"])
    assert result.exit_code == 2
    assert "/dev/zero:1:1: this is a character device, not a pipeline file" in result.output
    assert time.process_time() - started < CPU_BOUND


def test_thousands_of_errors_stop_after_a_hundred(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: t\nsteps:\n" + "".join(f"  s{i}: {{uses: '{C}:numbers', with: {{nn: 1}}}}\n" for i in range(2000))
    )
    started = time.process_time()
    result = cli.invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith(str(path))]
    assert len(lines) == 101 and lines[-1].endswith("stopped checking after 100 errors")
    assert time.process_time() - started < CPU_BOUND


def test_run_refuses_a_huge_matrix_and_runs_nothing(cli, tmp_path, home):
    path = tmp_path / "p.yaml"
    path.write_text(CASES["matrix product"][0])
    result = cli.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert f"{path}:6:17: step 'a': the matrix x (200)" in result.output
    assert "nothing was run" in result.output
    assert not (home / "work").exists()


def test_the_step_run_limit_is_raised_explicitly(tmp_path, home, monkeypatch):
    text = f"name: t\nsteps:\n  a:\n    uses: {C}:numbers\n    matrix: {{x: {grid(110)}, y: {grid(100)}}}\n"
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(Exception, match="expands to 11,000 step runs"):
        build(path)
    path.write_text(text + "settings: {max_step_runs: 11000}\n")
    assert len(build(path).instances) == 11_000
    path.write_text(text)
    monkeypatch.setenv("BOTTLENECKS_MAX_STEP_RUNS", "20000")
    assert len(build(path).instances) == 11_000


def test_files_just_inside_the_bounds_still_load(tmp_path, home):
    """The bounds leave room: 64 levels, an anchor used many times, merge keys with overrides."""
    path = tmp_path / "p.yaml"
    path.write_text(
        STEP
        + "params:\n  deep: "
        + "[" * 61
        + "1"
        + "]" * 61
        + "\n"
        + "  base: &b {n: 2, offset: 1}\n  copies:\n"
        + "    - *b\n" * 3000
        + "  merged: {<<: *b, n: 3}\n"
    )
    plan = build(path)
    deep = plan.params["deep"]
    for _ in range(61):
        deep = deep[0]
    assert deep == 1
    assert len(plan.params["copies"]) == 3000 and plan.params["copies"][-1] == {"n": 2, "offset": 1}
    assert plan.params["merged"] == {"n": 3, "offset": 1}  # an explicit key overrides a merged one


def test_the_command_line_shows_no_traceback(tmp_path):
    """One real process per hostile class that used to crash or hang."""
    files = []
    for case in ("billion laughs", "deep flow sequences", "deep block mappings", "huge decimal integer"):
        path = tmp_path / f"{case.replace(' ', '_')}.yaml"
        path.write_text(CASES[case][0])
        files.append(str(path))
    env = {**os.environ, "BOTTLENECKS_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "flows.cli", "check", *files], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    for path, case in zip(
        files, ("billion laughs", "deep flow sequences", "deep block mappings", "huge decimal integer")
    ):
        assert f"{path}:{CASES[case][1]}" in proc.stderr


def test_override_values_are_read_within_the_same_bounds(cli, tmp_path, home):
    """A schedule passes `--set` values from the file, so they are no way around the bounds."""
    path = tmp_path / "p.yaml"
    path.write_text(STEP + "params: {p: 0}\n")
    laughs_flow = (
        "[" + ", ".join(f"&a{i} [" + ", ".join([f"*a{i - 1}" if i else "lol"] * 9) + "]" for i in range(9)) + "]"
    )
    started = time.process_time()
    result = cli.invoke(app, ["check", str(path), "--set", "p=" + laughs_flow])
    assert result.exit_code == 2
    assert (
        "--set:1:218: the file expands to more than 20,000 YAML values (alias *a3 adds a copy of 7,381 "
        "values); anchors and aliases count once per use. Keep big lists in a data file the step reads" in result.output
    )
    assert time.process_time() - started < CPU_BOUND
    plan = build(path, sets=["p=[1, {a: 2}]"])
    assert plan.params["p"] == [1, {"a": 2}]
    with pytest.raises(Exception, match="--set p=@not yaml: the value is not valid YAML"):
        build(path, sets=["p=@not yaml"])
