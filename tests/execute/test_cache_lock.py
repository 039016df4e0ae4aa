"""StepCache.lock(key) across processes: one holder at a time, the waiter goes on after release,
and a holder that dies gives the lock up. Ordering is read from files the processes write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KEY = "f" * 64

# Hold the lock on KEY: write "<name> acquired <time>" once inside, wait for the release file (if
# any), then write "<name> released <time>" just before leaving the block.
HOLDER = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from flows.execute.cache import StepCache
    root, name, log, release = sys.argv[1:5]
    Path(log).with_suffix("." + name + ".trying").touch()
    with StepCache(Path(root)).lock(sys.argv[5]):
        with open(log, "a") as fh:
            fh.write(f"{name} acquired {time.time()}\\n")
        while release != "-" and not Path(release).exists():
            time.sleep(0.05)
        with open(log, "a") as fh:
            fh.write(f"{name} released {time.time()}\\n")
    """)


def holder(tmp_path: Path, name: str, release: str = "-") -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "home"), name, str(tmp_path / "log"), release, KEY],
        env=env,
        start_new_session=True,
    )


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.05)


def events(tmp_path: Path) -> list[tuple[str, str, float]]:
    lines = (tmp_path / "log").read_text().splitlines() if (tmp_path / "log").exists() else []
    return [(n, e, float(t)) for n, e, t in (line.split() for line in lines)]


def acquired(tmp_path: Path, name: str) -> bool:
    return any(n == name and e == "acquired" for n, e, _ in events(tmp_path))


def test_a_second_process_waits_for_the_holder_and_proceeds_after_release(tmp_path):
    release = tmp_path / "release"
    first = holder(tmp_path, "first", str(release))
    wait_for(lambda: acquired(tmp_path, "first"), 60, "the first process to take the lock")
    second = holder(tmp_path, "second")
    try:
        wait_for((tmp_path / "log.second.trying").exists, 60, "the second process to ask for the lock")
        # a window in which a broken lock would let the second in; a working one keeps it out
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not acquired(tmp_path, "second"):
            time.sleep(0.05)
        assert not acquired(tmp_path, "second"), events(tmp_path)
        release.write_text("go")
        assert first.wait(timeout=60) == 0 and second.wait(timeout=60) == 0
    finally:
        for p in (first, second):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    order = [(n, e) for n, e, _ in events(tmp_path)]
    assert order == [("first", "acquired"), ("first", "released"), ("second", "acquired"), ("second", "released")]
    times = {(n, e): t for n, e, t in events(tmp_path)}
    assert times[("second", "acquired")] >= times[("first", "released")]


def test_the_lock_of_a_killed_holder_passes_to_the_waiter(tmp_path):
    first = holder(tmp_path, "first", str(tmp_path / "never"))
    wait_for(lambda: acquired(tmp_path, "first"), 60, "the first process to take the lock")
    second = holder(tmp_path, "second")
    try:
        wait_for((tmp_path / "log.second.trying").exists, 60, "the second process to ask for the lock")
        os.killpg(first.pid, signal.SIGKILL)  # dies inside the block: no release is ever written
        first.wait(timeout=30)
        assert second.wait(timeout=60) == 0
    finally:
        for p in (first, second):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    assert [(n, e) for n, e, _ in events(tmp_path)] == [
        ("first", "acquired"),
        ("second", "acquired"),
        ("second", "released"),
    ]
