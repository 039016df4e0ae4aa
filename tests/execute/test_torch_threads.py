"""A step's torch threads are set without importing torch for it: the count waits for torch's import.
A pool worker whose steps never use torch never loads it (tests/execute/test_executors.py), and a
step that imports torch itself, late, computes with its share (tests/cli/test_options.py)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


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
