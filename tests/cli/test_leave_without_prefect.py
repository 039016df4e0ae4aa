"""A run that lost its Prefect server ends when it has said so: the command exits with its status,
its output written, without Prefect's delivery at exit of what it queued for the server."""

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_command_exits_with_its_status_and_output_and_skips_the_delivery_at_exit(tmp_path):
    delivered = tmp_path / "delivered"
    code = f"""\
        import sys, threading
        sys.path.insert(0, {str(REPO)!r})
        # how Prefect's log and event services deliver their queues when the interpreter exits
        threading._register_atexit(lambda: open({str(delivered)!r}, "w").write("waited"))
        from flows.cli.run import _leave_without_prefect
        print("fix the cause and rerun", end="")  # still in the buffer: no newline, a pipe
        _leave_without_prefect(1)
        print("never")
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (1, "fix the cause and rerun"), done.stderr[-2000:]
    assert not delivered.exists()
