"""The scorecard's links followed in headless Chromium where it is read: MLflow's previews of
scorecard.md and scorecard.html, Prefect's markdown artifact (both its UIs) and a plain browser
(``benchmarks/link_screenshots.py``, which starts an MLflow and a Prefect server; about two minutes)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHOTS = [
    "links-mlflow-md.png",
    "links-mlflow-html.png",
    "links-mlflow-html-run.png",
    "links-prefect.png",
    "links-prefect-v2.png",
    "links-browser.png",
]


@pytest.mark.server
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium on the PATH")
def test_a_claim_link_and_a_run_link_land_in_each_place_the_scorecard_is_read(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "link_screenshots.py"), "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "every link landed" in done.stdout
    assert all((tmp_path / name).stat().st_size > 10_000 for name in SHOTS)
