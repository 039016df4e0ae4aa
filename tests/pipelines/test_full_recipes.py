"""The full profile states the papers' recipes as data: the resolved step parameters say what was run."""

from pathlib import Path

import pytest

from flows.plan.build import build

pytestmark = pytest.mark.slow  # costly: see the fast loop in tests/README.md

PIPELINE = Path(__file__).resolve().parents[2] / "pipelines" / "four_bottlenecks.yaml"
SHARED = [
    "batch_size",
    "max_tokens",
    "accumulate",
    "optimizer",
    "lr",
    "eps",
    "rho",
    "betas",
    "schedule",
    "warmup",
    "clip",
    "clip_value",
    "label_smoothing",
    "steps",
    "bf16",
    "overrides",
]


@pytest.fixture(scope="module")
def full():
    plan = build(PIPELINE, profile="full")
    by_step = {}
    for inst in plan.instances.values():
        by_step.setdefault(inst.step.id, []).append(inst)
    return by_step


def test_rnnencdec_50_and_rnnsearch_50_train_with_the_papers_recipe_and_differ_only_in_the_model(full):
    pair = {(i.bindings["seed"], i.bindings["arch"]): i.params for i in full["mt_bahdanau"]}
    assert sorted(pair) == [(s, a) for s in (0, 1, 2) for a in ("rnnencdec-50", "rnnsearch-50")]
    for seed in (0, 1, 2):
        encdec, search = pair[seed, "rnnencdec-50"], pair[seed, "rnnsearch-50"]
        assert {k: v for k, v in encdec.items() if k != "model"} == {k: v for k, v in search.items() if k != "model"}
        assert (encdec["model"], search["model"], search["seed"]) == ("rnnencdec-50", "rnnsearch-50", seed)
    recipe = pair[0, "rnnsearch-50"]
    keys = ("batch_size", "max_tokens", "optimizer", "lr", "eps", "rho", "clip", "clip_value")
    assert {k: recipe[k] for k in keys} == {
        "batch_size": 80,
        "max_tokens": None,
        "optimizer": "adadelta",
        "lr": 1.0,
        "eps": 1e-6,
        "rho": 0.95,
        "clip": "norm",
        "clip_value": 1.0,
    }
    assert recipe["steps"] == 288000
    assert recipe["overrides"] == {"hidden_size": 1000, "embed_dim": 620, "maxout_dim": 500}
    encdec = next(i.params for i in full["mt"] if i.bindings["arch"] == "seq2seq-small")
    same = [k for k in SHARED if k != "overrides"]
    assert {k: encdec.get(k) for k in same} == {k: recipe.get(k) for k in same}  # the other RNNs: the same recipe


def test_every_rnnsearch_seed_is_scored_by_length_beside_its_rnnencdec(full):
    runs = {i.bindings["seed"]: i for i in full["bleu_bahdanau"]}
    assert sorted(runs) == [0, 1, 2]
    for seed, inst in runs.items():
        ref = inst.params["checkpoints"]
        assert ref.step == "mt_bahdanau" and ref.sources == {
            "rnnencdec-50": f"mt_bahdanau[seed={seed},arch=rnnencdec-50]",
            "rnnsearch-50": f"mt_bahdanau[seed={seed},arch=rnnsearch-50]",
        }
        assert (inst.params["length_penalty"], inst.params["buckets"][-1]) == (0.0, 60)


def test_the_data_is_wmt14_with_a_shared_37k_bpe_and_the_50_word_filter(full):
    data = full["mt_data"][0].params
    assert (data["dataset"], data["vocab_size"], data["max_len"], data.get("joint", True)) == ("wmt14", 37000, 50, True)


def test_claim_8_has_a_deep_reversed_lstm_and_bleu_uses_beam_4_with_penalty_0_6(full):
    assert {i.bindings["arch"] for i in full["mt"]} >= {"seq2seq-small", "seq2seq-reverse-small", "sutskever-4x1000"}
    p = full["bleu"][0].params
    assert (p["beam"], p["length_penalty"], p["tokenize"], p["max_len_a"], p["max_len_b"]) == (4, 0.6, "13a", 1.0, 50)


TOY = {"steps": 4, "checkpoint_every": 2, "eval_every": 2, "batch_size": 16}


def _toy_data(tmp_path):
    from components import Context, get

    return get("data.synthetic_translation")(
        Context(tmp_path / "d"), vocab=10, min_len=2, max_len=10, n_train=120, n_valid=8, n_test=8
    )["dataset"]


def test_the_rnn_recipes_run_end_to_end_at_toy_size_on_cpu(full, tmp_path):
    from components import Context, get

    data = _toy_data(tmp_path)
    runs = [next(i for i in full["mt"] if i.bindings["arch"] == "seq2seq-small")]
    runs += [i for i in full["mt_bahdanau"] if i.bindings["seed"] == 0]
    for inst in runs:
        tiny = {"hidden_size": 16, "embed_dim": 8, "maxout_dim": 8} if inst.step.id == "mt_bahdanau" else TINY
        params = {**inst.params, **TOY, "data": data, "overrides": tiny}
        assert params["optimizer"] == "adadelta" and params["max_tokens"] is None  # the recipe, at toy size
        s = get("train.model")(Context(tmp_path / inst.id), **params)["summary"]
        assert s["steps"] == 4 and not s["diverged"] and s["precision"] == "fp32"


def test_the_transformer_base_recipe_runs_end_to_end_at_toy_size_on_cpu(tmp_path, full):
    """The full profile's mt_transformer step as resolved, at toy sizes."""
    from components import Context, get

    data = _toy_data(tmp_path)
    resolved = full["mt_transformer"][0].params
    recipe = {
        k: resolved[k]
        for k in (
            "model",
            "max_tokens",
            "accumulate",
            "optimizer",
            "betas",
            "eps",
            "clip",
            "lr",
            "schedule",
            "warmup",
            "label_smoothing",
            "bf16",
            "steps",
            "checkpoint_every",
            "average_last",
        )
    }
    assert recipe == {
        "model": "transformer-base",
        "max_tokens": 3125,
        "accumulate": 8,
        "optimizer": "adam",
        "betas": [0.9, 0.98],
        "eps": 1e-9,
        "clip": "none",
        "lr": 0.0007,
        "schedule": "inverse_sqrt",
        "warmup": 4000,
        "label_smoothing": 0.1,
        "bf16": True,
        "steps": 100000,
        "checkpoint_every": 1000,
        "average_last": 5,
    }
    toy = {**recipe, "model": "transformer-tiny", "max_tokens": 60, "steps": 6, "checkpoint_every": 1, "warmup": 3}
    out = get("train.model")(Context(tmp_path / "t"), data=data, **toy)
    assert out["summary"]["averaged_steps"] == [2, 3, 4, 5, 6] and out["summary"]["precision"] == "bf16"
    bleu = get("eval.bleu")(
        Context(tmp_path / "b"),
        checkpoints={"transformer": out["checkpoint"]},
        beam=4,
        length_penalty=0.6,
        tokenize="none",
        n_bootstrap=0,
        max_examples=8,
    )
    assert "bleu/transformer/longest" in bleu["summary"] and bleu["summary"]["n"] == 8  # beam 4 decoded the split


def _tiny_corpus(folder: Path, source: Path) -> Path:
    """A few hundred real pairs in the layout the full profile's files source reads."""
    import gzip

    picks = {"multi30k/train": 240, "multi30k/val": 24, "wmt14-newstest/newstest2014.en-de": 24}
    names = {
        "multi30k/train": ("train.en.gz", "train.de.gz"),
        "multi30k/val": ("val.en.gz", "val.de.gz"),
        "wmt14-newstest/newstest2014.en-de": ("newstest2014.en-de.en.gz", "newstest2014.en-de.de.gz"),
    }
    for stem, n in picks.items():
        for name in names[stem]:
            sub = Path(stem).parent / name
            with gzip.open(source / sub, "rt", encoding="utf-8") as fh:
                lines = [next(fh) for _ in range(n)]
            (folder / sub).parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(folder / sub, "wt", encoding="utf-8") as out:
                out.writelines(lines)
    return folder


FILES = (
    '{train: [["multi30k/train.en.gz", "multi30k/train.de.gz"]], '
    'valid: [["multi30k/val.en.gz", "multi30k/val.de.gz"]], '
    'test: [["wmt14-newstest/newstest2014.en-de.en.gz", "wmt14-newstest/newstest2014.en-de.de.gz"]]}'
)
TINY = {"hidden_size": 16, "embed_dim": 8}


@pytest.mark.slow
def test_the_whole_full_profile_runs_end_to_end_at_toy_size_on_cpu(tmp_path, home):
    """Every step of the full profile, its recipes as written except the sizes, local files instead
    of the Hub, one seed, a few steps per model: the wiring, the placement and the scorecard."""
    from tests.conftest import shared_data

    source = shared_data()
    if source is None or not (source / "wmt14-newstest").exists():
        pytest.skip("needs the shared corpora (BOTTLENECKS_DATA)")
    from flows.execute.runner import run

    data = _tiny_corpus(tmp_path / "data", source)
    sets = [
        "seeds=[0]",
        "mt_steps=4",
        "mt_seeds=[0]",
        "attn_seeds=[0]",
        "recall_steps=4",
        "image_steps=4",
        "lookup_steps=4",
        "caption_steps=4",
        "vit_seeds=[0]",
        "recall_seeds=[0]",
        "timing_lengths=[16,256,1024]",  # the claims read T=256 and T=1024 (check resolves them)
        "timing.batch=1",
        "timing.repeats=1",
        "rnn_memory.batch=1",
        "rnn_memory.repeats=1",
        "grad.length=20",
        "explode.steps=4",
        *(
            f"{data}.n_{split}={n}"
            for data in ("recall", "lookup", "adding", "strips")
            for split, n in (("train", 200), ("valid", 50), ("test", 50))
        ),
        "mt_hidden=16",
        "mt_data.source=files",
        f"mt_data.data_dir={data}",
        f"mt_data.files={FILES}",
        "mt_data.num_proc=1",
        "mt_data.vocab_size=600",
        f"mt.overrides={TINY}",
        "mt.checkpoint_every=2",
        "mt.eval_every=2",
        f"mt_attention.overrides={TINY}",
        "mt_attention.checkpoint_every=2",
        "mt_attention.eval_every=2",
        "mt_bahdanau.overrides={hidden_size: 16, embed_dim: 8, attention_dim: 16, maxout_dim: 8}",
        "mt_bahdanau.steps=4",
        "mt_bahdanau.checkpoint_every=2",
        "mt_bahdanau.eval_every=2",
        "mt_transformer.model=transformer-tiny",
        "mt_transformer.max_tokens=300",
        "mt_transformer.steps=6",
        "mt_transformer.warmup=3",
        "mt_transformer.checkpoint_every=1",
        "bias15.steps=4",
        *(f"{step}.eval_every=0" for step in ("rnn", "lstm", "bias15", "gru", "explode", "heads", "vit", "cnn")),
        *(f"{step}.eval_every=0" for step in ("learned_positions", "captioner", "mt_transformer")),
        "bleu.max_examples=12",
        "bleu_bahdanau.max_examples=12",
        "capacity.max_examples=12",
        "bleu.n_bootstrap=20",
        "bleu_attention.max_examples=12",
        "bleu_attention.n_bootstrap=20",
        "bleu_bahdanau.n_bootstrap=20",
    ]
    plan = build(PIPELINE, profile="full", sets=sets)
    kept = plan.instances["mt_transformer[seed=0]"].params
    assert (kept["accumulate"], kept["label_smoothing"], kept["average_last"], kept["schedule"]) == (
        8,
        0.1,
        5,
        "inverse_sqrt",
    )  # the recipe stays; only its size is toy
    result = run(plan)
    assert result.ok, result.errors
    transformer = result.outputs["mt_transformer[seed=0]"]["summary"]
    assert transformer["averaged_steps"] == [2, 3, 4, 5, 6] and transformer["steps"] == 6
    bleu = result.outputs["bleu[seed=0]"]["summary"]
    for model in ("seq2seq-small", "seq2seq-reverse-small", "luong-dot-small", "sutskever-4x1000", "transformer"):
        assert f"bleu/{model}/longest" in bleu and f"bleu_tok/{model}" in bleu  # beam 4, the paper's BLEU too
    pair = result.outputs["bleu_bahdanau[seed=0]"]["summary"]
    assert "bleu/rnnencdec-50/longest" in pair and "bleu/rnnsearch-50/longest" in pair  # the paper's pair, by length
    card = result.outputs["scorecard"]["summary"]
    assert card["claims"] == 20 and card["not_measured"] >= 1  # one seed: the 3-seed claims say so
