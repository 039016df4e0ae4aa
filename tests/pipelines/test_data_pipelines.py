"""The data pipelines validate, and the local-file ones run step by step to the expected data."""

import os
from pathlib import Path

import pytest

from components import Context
from components.data.io import load_meta, load_split, load_translation
from flows.language.refs import Ref
from flows.plan.build import build

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("BOTTLENECKS_DATA", ROOT.parent / "shared" / "data"))
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data not found at {DATA} (set BOTTLENECKS_DATA)")
PIPELINES = sorted((ROOT / "pipelines").glob("data_*.yaml"))


def execute(plan, work: Path) -> dict[str, dict]:
    """Call every step's component in plan order, passing outputs along (no Prefect, no MLflow)."""
    outputs: dict[str, dict] = {}
    for iid, inst in plan.instances.items():
        params = {k: v.resolve(outputs) if isinstance(v, Ref) else v for k, v in inst.params.items()}
        outputs[iid] = inst.component(Context(work_dir=work / iid), **params)
    return outputs


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.name)
def test_data_pipeline_validates_and_documents_itself(path):
    plan = build(path, sets=[f"data_dir={DATA}"] if "data_dir" in path.read_text() else None)
    assert plan.instances
    header = path.read_text().splitlines()[:6]
    assert header[0].startswith("# ") and any(f"bottlenecks run pipelines/{path.name}" in h for h in header)


@needs_data
def test_newstest2014_pipeline_tests_on_all_3003_pairs(tmp_path):
    plan = build(ROOT / "pipelines" / "data_newstest2014.yaml", sets=[f"data_dir={DATA}", "vocab_size=500"])
    out = execute(plan, tmp_path)
    ds, meta = load_translation(out["wmt_ende"]["dataset"])
    assert meta["counts"]["test"] == 3003 and meta["src_vocab_size"] == 500
    assert meta["counts"]["train"] + meta["counts"]["valid"] + sum(meta["dropped"].values()) == 1002 + 2037


@needs_data
def test_mnist_pipeline_gives_patches_of_the_t10k_test_set(tmp_path):
    plan = build(ROOT / "pipelines" / "data_mnist.yaml", sets=[f"data_dir={DATA}", "shift_copies=0"])
    out = execute(plan, tmp_path)
    meta = load_meta(out["patches"]["dataset"])
    assert meta["grid"] == [4, 4] and meta["counts"]["test"] == 10000
    assert load_split(out["patches"]["dataset"], "test")["x"].shape == (10000, 16, 49)
