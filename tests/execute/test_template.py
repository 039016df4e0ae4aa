"""Workers forked from their process's template (flows/execute/template.py): what a worker sees is
its run's, later runs reuse the template, closing it ends its workers, and a template that cannot
fork safely starts fresh interpreters."""

import os
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from flows.execute import template
from flows.execute.runner import run
from flows.plan.build import build
from tests.support.files import write

pytestmark = pytest.mark.skipif(not template.available(), reason="worker templates are Linux only")


def _ask(t: template.Template, env: dict | None = None) -> tuple[template.Forked, Connection, dict]:
    """A worker from ``t``, its end of the socket and what it said when ready."""
    ours, theirs = socket.socketpair()
    child = t.spawn({**os.environ, **(env or {}), "BOTTLENECKS_PARENT_PID": str(os.getpid())}, theirs.fileno())
    theirs.close()
    conn = Connection(ours.detach())
    assert conn.poll(120), "the worker never said it was ready"
    kind, hello = conn.recv()
    assert kind == "ready"
    return child, conn, hello


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def _gone(pid: int) -> bool:
    """No process (not even a zombie) has ``pid``."""
    return not Path(f"/proc/{pid}").exists()


def test_a_worker_runs_with_the_runs_environment_folder_and_import_path(tmp_path, home, monkeypatch):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "where_am_i.py").write_text(
        "import os\n"
        "from components import Context, component\n\n"
        "@component('templatetest.where', outputs=['x', 'cwd', 'parent'])\n"
        "def where(ctx: Context) -> dict:\n"
        "    print('worker says', os.environ.get('TEMPLATE_TEST_X'), flush=True)\n"
        "    return {'x': os.environ.get('TEMPLATE_TEST_X'), 'cwd': os.getcwd(), 'parent': os.getppid()}\n"
    )
    monkeypatch.syspath_prepend(str(plugin))  # a module only the run's import path finds
    monkeypatch.setenv("TEMPLATE_TEST_X", "from the run")
    monkeypatch.chdir(tmp_path)
    path = write(
        tmp_path,
        """\
        name: template-where
        settings: {workers: 2, executor: processes}
        steps:
          here: {uses: "where_am_i:where", matrix: {i: [0, 1]}}
        """,
    )
    result = run(build(path))
    assert result.ok, result.errors
    outs = [result.outputs[f"here[i={i}]"] for i in (0, 1)]
    assert [(o["x"], o["cwd"]) for o in outs] == [("from the run", str(tmp_path))] * 2
    assert outs[0]["parent"] == outs[1]["parent"] != os.getpid()  # one template, not the run itself
    # the next run in this process sees its own environment, and writes to its own output, from the
    # same template
    monkeypatch.setenv("TEMPLATE_TEST_X", "from the next run")
    out, saved = tmp_path / "out.txt", os.dup(1)
    with open(out, "w") as fh:
        os.dup2(fh.fileno(), 1)
        try:
            again = run(build(path), use_cache=False)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    assert out.read_text().count("worker says from the next run") == 2
    assert [again.outputs[f"here[i={i}]"]["x"] for i in (0, 1)] == ["from the next run"] * 2
    assert {again.outputs[f"here[i={i}]"]["parent"] for i in (0, 1)} == {outs[0]["parent"]}


def test_closing_the_template_ends_and_reaps_a_worker_still_running(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    t = template.Template(_env())
    try:
        child, conn, hello = _ask(t)
        assert child.pid == hello["pid"] and child.poll() is None
        with open(f"/proc/{child.pid}/stat") as fh:
            assert int(fh.read().rsplit(")", 1)[1].split()[1]) == t.proc.pid  # the template is its parent
    finally:
        t.close()
    assert t.proc.returncode == 0
    assert _gone(hello["pid"])
    assert child.poll() == -9  # went with its template


def test_a_killed_worker_reports_its_signal_and_the_next_one_starts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    t = template.Template(_env())
    try:
        first, _, _ = _ask(t)
        first.kill()
        assert first.wait(timeout=30) == -9
        assert _gone(first.pid)  # reaped by the template
        second, _, hello = _ask(t, {"TEMPLATE_TEST_X": "2"})
        assert hello["pid"] != first.pid and second.poll() is None
        with open(f"/proc/{second.pid}/cmdline", "rb") as fh:
            assert b"flows.execute.template" in fh.read()  # forked, not a new interpreter
    finally:
        t.close()


def test_a_template_with_a_thread_running_starts_each_worker_as_a_fresh_interpreter(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # a preloaded module that starts a thread: forking could copy a held lock into the worker
    threaded = "import threading, time; threading.Thread(target=time.sleep, args=(600,), daemon=True).start(); "
    monkeypatch.setattr(template, "_ENTRY", threaded + template._ENTRY)
    t = template.Template(_env())
    try:
        child, _, hello = _ask(t)
        with open(f"/proc/{hello['pid']}/cmdline", "rb") as fh:
            assert b"from flows.execute.worker import serve" in fh.read()
        assert child.pid == hello["pid"]  # still the template's child: it reports the exit
        child.kill()
        assert child.wait(timeout=30) == -9
    finally:
        t.close()


def test_off_starts_each_worker_as_a_fresh_interpreter(monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_WORKER_TEMPLATE", "off")
    assert template.shared() is None  # the pool then starts `python -c ENTRY` per worker


def test_a_process_ending_ends_its_template_and_a_forked_child_starts_its_own(tmp_path):
    code = (
        "import os, sys, time\n"
        "from flows.execute import template\n"
        "first = template.shared()\n"
        "assert template.shared() is first\n"  # kept
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    mine = template.shared()\n"
        "    os._exit(0 if mine is not first and mine.proc.pid != first.proc.pid else 1)\n"
        "assert os.waitpid(pid, 0)[1] == 0, 'the forked child shared its parent template'\n"
        "print(first.proc.pid, flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _gone(int(done.stdout.split()[-1]))  # closed and reaped at exit


def test_a_worker_never_forked_is_never_signalled_as_pid_minus_one(monkeypatch):
    class Gone:  # a template that died before it forked the worker
        def pid_of(self, child):
            return -1

        def code_of(self, child):
            return None

    sent = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
    child = template.Forked(Gone())
    child.terminate()
    child.kill()
    assert sent == []  # os.kill(-1, ...) would signal every process of this user
