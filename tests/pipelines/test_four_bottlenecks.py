"""The comparison pipeline at toy sizes, end to end through Prefect and MLflow: the scorecard's
structure and verdicts are read back from the parent MLflow run."""

import json
from pathlib import Path

import mlflow
import pytest
import yaml

from flows.execute.runner import run
from flows.plan.build import build
from tests.support.scorecard_claims import unmeasured_references, unresolved

pytestmark = pytest.mark.slow
PIPELINE = Path(__file__).resolve().parents[2] / "pipelines" / "four_bottlenecks.yaml"
TINY = [
    "recall_steps=20",
    "mt_steps=20",
    "attn_steps=20",
    "mt_warmup=5",  # the cosine schedule decays after its warm-up: fewer warm-up steps than steps
    "mt_transformer.warmup=5",
    "mt_seeds=[0]",
    "attn_seeds=[0]",
    "lookup_steps=20",
    "image_steps=20",
    "caption_steps=20",
    "seeds=[0]",
    "vit_seeds=[0]",  # the ViT and CNN steps run over their own seeds (six in the pipeline)
    "recall_seeds=[0]",  # so do the delayed-recall and explode steps (ten)
    "bias15.steps=20",
    # the claims read T=256 and T=1024; each model is timed and measured in processes of its own,
    # whose start-up costs more than a batch of one at these lengths
    "timing_lengths=[16,256,1024]",
    "timing.fit_min=0",
    "timing.repeats=1",
    "timing.batch=1",
    "rnn_memory.fit_min=0",
    "rnn_memory.repeats=1",
    "rnn_memory.batch=4",
    "explode.steps=30",
    # small splits: a 20-step run reads 640 examples; evaluations decode at most 100 sentences
    "mt_data.n_train=1000",
    "mt_data.n_valid=100",
    "mt_data.n_test=200",
    *(
        f"{data}.n_{split}={n}"
        for data in ("recall", "lookup", "adding", "strips")
        for split, n in (("train", 700), ("valid", 100), ("test", 200))
    ),
    *(f"{step}.max_examples=100" for step in ("bleu", "bleu_bahdanau", "capacity")),
    *(f"{step}.n_bootstrap=50" for step in ("bleu", "bleu_bahdanau")),
    "grad.length=40",
    # no learning curves: at 20 steps five evaluations of the valid split would cost more than the
    # training (the curves have their own tests); the summary's end point stays
    *(
        f"{step}.eval_every=0"
        for step in ("rnn", "lstm", "bias15", "gru", "explode", "mt", "mt_transformer", "mt_bahdanau")
        + ("heads", "learned_positions", "vit", "cnn", "captioner")
    ),
]
VERDICTS = {"holds", "fails", "inconclusive", "device-dependent", "not measured"}


def test_reduced_comparison_produces_a_scorecard_in_mlflow(home, tmp_path):
    result = run(build(PIPELINE, sets=TINY))
    assert result.ok, result.errors

    parent = mlflow.get_run(result.parent_run_id)
    assert parent.data.tags["pipeline"] == "four-bottlenecks"
    assert parent.data.metrics["claims/total"] == 20
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(result.parent_run_id)}
    assert {"scorecard.json", "scorecard.md", "scorecard.html"} <= names

    local = mlflow.artifacts.download_artifacts(
        run_id=result.parent_run_id, artifact_path="scorecard.json", dst_path=str(tmp_path)
    )
    card = json.loads(Path(local).read_text())
    claims = {int(c["id"]): c for c in card["claims"]}
    assert sorted(claims) == list(range(1, 21))
    for claim in claims.values():
        assert {"id", "claim", "expected", "measured", "verdict", "run_id"} <= set(claim)
        assert claim["verdict"] in VERDICTS
    # structural claims (exact: true) need no training, so they hold even at toy sizes
    for cid in (1, 10, 13):
        assert claims[cid]["verdict"] == "holds", claims[cid]["reason"]
    # the entropy at initialisation runs over the seeds like a training claim: one seed is too few
    assert claims[16]["reason"].endswith("entropy[*].scaled_min has 1 seed: the claim needs 3"), claims[16]["reason"]
    assert claims[12]["verdict"] == "device-dependent"  # a GPU claim measured on the CPU
    assert claims[12]["reason"].startswith("the claim is about gpu; measured on cpu")
    # one seed where three are required: every training claim says exactly that, and nothing else
    # (a misspelt selector or a step that lost an output would be "not measured" for another reason)
    assert claims[4]["verdict"] == "not measured"
    assert claims[4]["reason"].endswith("lag_gru[*].acc/lag_50 has 1 seed: the claim needs 3"), claims[4]["reason"]
    assert unresolved(card, needs=3) == []
    # every reference of every claim in the shipped comparison resolved to a measured value
    expect = next(s for s in yaml.safe_load(PIPELINE.read_text())["steps"].values() if s["uses"] == "report.scorecard")[
        "with"
    ]["expect"]
    assert unmeasured_references(card, expect) == []
    judged_by_seeds = [c for c in claims.values() if c["verdict"] == "not measured"]
    assert len(judged_by_seeds) >= 10, [c["id"] for c in judged_by_seeds]
    assert set(card["architectures"]) >= {"rnn", "lstm", "gru", "seq2seq", "luong", "transformer", "vit", "cnn"}
    assert parent.data.metrics["claim/1"] == 1.0
