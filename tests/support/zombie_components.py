"""Components for the zombie-run tests: a slow step to kill, a step that interrupts its process."""

import os
import signal
import textwrap
import time
from pathlib import Path

from components import Context, component


@component("enginetest.slow", outputs=["slept"])
def slow(ctx: Context, *, seconds: float = 120.0, started: str = "") -> dict:
    """Sleep, after writing ``started`` (so a test knows the step is under way)."""
    if started:
        Path(started).write_text(str(os.getpid()))
    time.sleep(seconds)
    return {"slept": seconds}


@component("enginetest.interrupt", outputs=["never"])
def interrupt(ctx: Context, *, wait: float = 5.0) -> dict:
    """Send SIGINT (Ctrl-C) to the process running the pipeline, then keep the step busy a little."""
    os.kill(int(os.environ.get("BOTTLENECKS_PARENT_PID", os.getpid())), signal.SIGINT)
    time.sleep(wait)
    return {"never": "finished"}


def slow_pipeline(folder: Path, name: str, seconds: float = 120.0) -> tuple[Path, Path]:
    """A two-step pipeline NAME in FOLDER whose second step sleeps SECONDS after writing the file
    returned beside the pipeline's path (so a test knows the step is under way)."""
    started, path = folder / "started", folder / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: {name}
        steps:
          nums: {{uses: "tests.support.engine_components:numbers"}}
          slow: {{uses: "{__name__}:slow", with: {{started: "{started}", seconds: {seconds}}}, needs: [nums]}}
        """)
    )
    return path, started
