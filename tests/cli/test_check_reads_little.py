"""`check` validates and stops: it computes no cache key, so it walks no component's code, reads no
library's version, fingerprints no file and opens no store, and it imports no engine library, nor
numpy or scipy (the scorecard's checks import them where they judge). What it keeps in the user's
cache folder is the skeletons of the declarations it read."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LARGEST = REPO / "pipelines" / "four_bottlenecks.yaml"


def _check(path: Path, cwd: Path, cache: Path) -> dict:
    """``bottlenecks check PATH`` in a fresh interpreter: its exit status, what it walked and imported."""
    code = (
        "import json, sys\nfrom flows.cli import app\n"
        f"try:\n    app(['check', {str(path)!r}])\nexcept SystemExit as e:\n    status = e.code\n"
        "from components import code_version\n"
        "print(json.dumps({'status': status, 'walked': len(code_version._KNOWN), 'modules': sorted(sys.modules)}))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env["BOTTLENECKS_CACHE"] = str(cache)
    env.pop("BOTTLENECKS_HOME", None)  # the project folder's own state, were anything written
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "stderr": proc.stderr}


def test_check_of_the_largest_pipeline_computes_no_key_and_opens_no_store(tmp_path):
    project, cache = tmp_path / "project", tmp_path / "cache"
    project.mkdir()
    out = _check(LARGEST, project, cache)
    assert out["status"] == 0
    assert out["walked"] == 0  # no component's import closure: the code version is a cache key's part
    assert [p.name.split("-py")[0] for p in cache.iterdir()] == ["declarations"]  # no code version's parse
    assert list(project.iterdir()) == []  # no store of the project's opened
    engine = ("torch", "prefect", "mlflow", "matplotlib", "pandas", "numpy", "scipy")
    assert [m for m in engine if m in out["modules"]] == []  # the scorecard's checks import numpy when they judge


def test_check_still_refuses_what_only_the_plan_can_tell(tmp_path):
    """An unknown model is found while parameters are checked, before any key would be: exit 2."""
    project, cache = tmp_path / "project", tmp_path / "cache"
    project.mkdir()
    bad = project / "bad.yaml"
    bad.write_text(
        "name: bad\nsteps:\n  data: {uses: data.delayed_recall, with: {lag: 3}}\n"
        "  fit: {uses: train.model, with: {data: '${data.dataset}', model: lstmm-small}}\n"
    )
    out = _check(bad, project, cache)
    assert out["status"] == 2 and out["walked"] == 0
    assert "unknown model 'lstmm-small'" in out["stderr"]
