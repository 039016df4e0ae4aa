"""benchmarks/gpu.py runs on a torch-only host: checked here at tiny size on the CPU."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_benchmark_runs_tiny_and_imports_nothing_the_gpu_host_lacks(tmp_path):
    out = tmp_path / "fig.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu.py"),
            "--tiny",
            "--steps",
            "1",
            "--device",
            "cpu",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    fig = json.loads(out.read_text())
    assert fig["forbidden_imports"] == []
    assert fig["transformer_base"]["tokens_per_s"] > 0 and fig["rnnsearch_1000"]["precision"] == "fp32"
    assert fig["decode_beam4"]["cached_s"] > 0 and set(fig["per_sequence_ms"]) == {"64", "128"}
