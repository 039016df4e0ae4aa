"""benchmarks/gpu.py runs on a torch-only host: checked here at tiny size on the CPU."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

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
            "--compiled",
            "rnnencdec_50",  # one compiled step, traced without code generation: the wiring, quickly
            "--compile-backend",
            "aot_eager",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    fig = json.loads(out.read_text())
    assert fig["forbidden_imports"] == []
    step = fig["transformer_base_accumulate_profile"]  # the whole accumulated step, both sides' tokens
    assert step["micro_batches"] == [[4, 12, 12], [4, 12, 12]]
    assert step["tokens_per_step"] == {"source": 96, "target": 96}
    assert step["tokens_per_s"] > 0 and step["aten_leaf_ops"] > 0 and step["model_tflop_per_step"] >= 0
    assert fig["accumulate_auto"]["accumulate"] is None and "not a CUDA device" in fig["accumulate_auto"]["why"]
    recurrent = ("rnnsearch_50", "rnnencdec_50", "seq2seq_1000", "luong_dot_1000", "sutskever_4x1000")
    for key in recurrent:  # the paper RNNs and the mt step's models, on the same batch
        assert fig[key]["precision"] == "fp32" and fig[key]["micro_batches"] == [[8, 10, 10]]
        assert fig[key]["device"] == fig["device"] and fig[key]["step_s"] > 0
    compiled = fig["rnnencdec_50"]["compiled"]  # on a CPU, compile: null's rule gives eager; the bench asks default
    assert (compiled["mode"], compiled["backend"], compiled["device"]) == ("default", "aot_eager", fig["device"])
    assert compiled["speedup"] > 0 and compiled["first_step_s"] > 0
    assert compiled["tokens_per_step"] == {"source": 80, "target": 80} and compiled["aten_leaf_ops"] > 0
    assert all("compiled" not in fig[key] for key in recurrent if key != "rnnencdec_50")
    assert fig["rnnsearch_50"]["aten_leaf_ops"] > fig["rnnencdec_50"]["aten_leaf_ops"]  # attention adds ops a step
    assert fig["decode_beam4"]["cached_s"] > 0 and set(fig["per_sequence_ms"]) == {"64", "128"}
