"""A step's torch threads are set without importing torch for it: a run whose steps never use torch
never loads it, and a step that imports torch itself, late, still computes with its share."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from components import Context, component
from tests.support.files import write

REPO = Path(__file__).resolve().parents[2]
C = "tests.support.engine_components"
H = "tests.execute.test_torch_threads"


@component("threadstest.late_torch", outputs=["threads"])
def late_torch(ctx: Context) -> dict:
    """Import torch only now, inside the step, and say how many threads it was given."""
    import torch

    return {"threads": torch.get_num_threads()}


def python(code: str, cwd: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_count_waits_for_torch_and_torch_keeps_its_own_loader(tmp_path):
    seen = python(
        f"""\
        import importlib.resources, json, sys
        sys.path.insert(0, {str(REPO)!r})
        from flows.execute import torch_threads
        torch_threads.set_threads(3)
        before = "torch" in sys.modules
        waiting = torch_threads.pending()
        import torch
        after_import = torch.get_num_threads()
        loader = type(torch.__loader__).__name__, type(torch.__spec__.loader).__name__
        hooked = any(type(f).__name__ == "_WhenTorchLoads" for f in sys.meta_path)
        torch_threads.set_threads(2)  # torch loaded now: set at once
        print(json.dumps(dict(before=before, waiting=waiting, after_import=after_import, loader=loader,
                              hooked=hooked, now=torch.get_num_threads(), pending=torch_threads.pending(),
                              files=importlib.resources.files("torch").joinpath("__init__.py").is_file())))
        """,
        tmp_path,
    )
    assert seen == {
        "before": False,
        "waiting": 3,
        "after_import": 3,
        "loader": ["SourceFileLoader", "SourceFileLoader"],
        "hooked": False,
        "now": 2,
        "pending": 0,
        "files": True,
    }


@pytest.mark.slow
def test_a_run_without_torch_steps_never_imports_torch_and_a_late_import_gets_the_steps_share(tmp_path):
    plain = write(tmp_path, f"name: thr-plain\nsteps:\n  nums: {{uses: {C}:numbers, with: {{n: 2}}}}\n")
    late = write(
        tmp_path,
        f"""\
        name: thr-late
        settings: {{executor: threads, torch_threads: 5}}
        steps:
          probe: {{uses: {H}:late_torch, cache: false}}
        """,
        "late.yaml",
    )
    seen = python(
        f"""\
        import json, os, sys
        sys.path.insert(0, {str(REPO)!r})
        os.environ["BOTTLENECKS_EXECUTOR"] = "threads"
        os.environ["BOTTLENECKS_HOME"] = {str(tmp_path / "home")!r}
        from flows import build, run
        first = run(build({str(plain)!r}))
        loaded = "torch" in sys.modules
        second = run(build({str(late)!r}))
        print(json.dumps(dict(first=first.ok, loaded=loaded, threads=second.outputs["probe"]["threads"])))
        """,
        tmp_path,
    )
    assert seen == {"first": True, "loaded": False, "threads": 5}
