"""A full disk, simulated by a file-size limit (RLIMIT_FSIZE, what `ulimit -f` sets) on the process
that writes: the step cache keeps no half-written record, and a run whose step cannot write its
files fails with one clear message naming the folder, exit status 1 and no traceback."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
C = "tests.support.engine_components"


def limited(limit: int):
    """Files may grow to ``limit`` bytes; past it a write fails with EFBIG (not SIGXFSZ's kill)."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_cache_record_that_cannot_be_written_whole_leaves_nothing_and_names_the_folder(tmp_path):
    code = textwrap.dedent("""\
        import sys
        from pathlib import Path
        from flows.execute.cache import NoRoom, StepCache
        cache = StepCache(Path(sys.argv[1]))
        cache.put("a" * 64, {"outputs": {"small": 1}})
        try:
            cache.put("b" * 64, {"outputs": {"big": "x" * 200_000}})
        except NoRoom as e:
            print(e)
        """)
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "home")],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=limited(100_000),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    cache = tmp_path / "home" / "cache"
    assert out.stdout.strip() == (
        f"no room to write in {cache}: File too large (the disk holding it is full, or a file-size limit "
        "is set: see `ulimit -f`); free space or raise the limit, then rerun"
    )
    assert sorted(p.name for p in cache.iterdir()) == ["a" * 64 + ".json"]  # no half record, no temp file
    assert json.loads((cache / ("a" * 64 + ".json")).read_text())["outputs"] == {"small": 1}


@pytest.mark.slow
def test_a_run_that_cannot_write_its_files_fails_naming_the_folder_without_a_traceback(tmp_path):
    # 3,000,000 numbers are about 23 MB of text; the stores of a run stay well under the 16 MB limit
    (tmp_path / "full.yaml").write_text(
        textwrap.dedent(f"""\
        name: full-disk
        steps:
          small: {{uses: "{C}:numbers", with: {{n: 3}}}}
          big: {{uses: "{C}:numbers", with: {{n: 3000000}}}}
        """)
    )
    # the stores under tmp_path (the command's defaults); Prefect is the suite's shared API server
    # where there is one (tests/conftest.py), which the file-size limit does not reach
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "BOTTLENECKS_"))}
    env.update(
        BOTTLENECKS_DAEMON="off",
        BOTTLENECKS_PREFECT_SERVER="off",
        PYTHONPATH=str(REPO),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
    )
    out = subprocess.run(
        [sys.executable, "-m", "flows.cli", "run", "full.yaml"],
        cwd=tmp_path,
        env=env,
        preexec_fn=limited(16_000_000),
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = out.stdout + out.stderr
    assert out.returncode == 1, output
    assert "Traceback" not in output
    home = (tmp_path / ".bottlenecks").resolve()
    failed = [line for line in output.splitlines() if line.startswith("step big failed")]
    assert len(failed) == 1, output
    assert failed[0].startswith(f"step big failed: no room to write in {home / 'work'}/big-"), failed
    assert "a file-size limit is set" in failed[0]
    records = [json.loads(p.read_text()) for p in (home / "cache").iterdir()]
    assert [r["step"] for r in records] == ["small"]  # the step that wrote is cached, the other is not
    assert not list((home / "cache").glob("*.tmp"))


def test_a_record_left_half_written_by_a_killed_process_is_swept_by_the_next_run(tmp_path):
    """A process killed between writing a record's temporary file and renaming it leaves
    ``KEY.PID.tmp``; the next cache opened on that folder removes it once it is old enough to have
    no writer, and leaves one being written now alone."""
    from flows.execute.cache import STALE_TMP_SECONDS, StepCache

    cache = StepCache(tmp_path)
    stale = tmp_path / "cache" / "abc.4242.tmp"
    stale.write_text('{"outputs": {"half')
    os.utime(stale, (stale.stat().st_atime, stale.stat().st_mtime - STALE_TMP_SECONDS - 1))
    live = tmp_path / "cache" / "def.4243.tmp"
    live.write_text("{")
    cache.put("ghi", {"outputs": {"x": 1}})
    StepCache(tmp_path)
    assert not stale.exists() and live.exists()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["def.4243.tmp", "ghi.json"]
    assert cache.get("ghi")["outputs"] == {"x": 1}


def _raised(make):
    try:
        make()
    except Exception as e:  # noqa: BLE001 - the chain is what is under test
        return e
    raise AssertionError("nothing raised")


def test_a_full_tracking_store_deep_in_mlflows_errors_names_the_folder(tmp_path):
    """SQLite's 'database or disk is full', wrapped by SQLAlchemy and again by MLflow as the run
    starts, reads as the store's folder being full; an unrelated error is not taken for one."""
    import sqlite3

    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import OperationalError

    from flows.execute.cache import no_room_behind

    def deep():
        try:
            try:
                raise sqlite3.OperationalError("database or disk is full")
            except sqlite3.OperationalError as e:
                raise OperationalError("INSERT INTO runs ...", {}, e) from e
        except OperationalError as e:
            raise MlflowException(str(e)) from e

    message = no_room_behind(_raised(deep), tmp_path)
    assert message.startswith(f"no room to write in {tmp_path}: database or disk is full (the disk holding it")

    def enospc_while_handling():
        try:
            raise OSError(28, "No space left on device", str(tmp_path / "work" / "x.tmp"))
        except OSError:
            raise RuntimeError("could not finish")  # noqa: B904 - an implicit context, as libraries leave it

    message = no_room_behind(_raised(enospc_while_handling), "elsewhere")
    assert message.startswith(f"no room to write in {tmp_path / 'work'}: No space left on device")  # the file's

    def locked():
        raise MlflowException("database is locked")

    assert no_room_behind(_raised(locked), tmp_path) is None
