"""B3 probes: BLEU by source length (against sacrebleu's CLI), recall by length, attention maps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from components import Context, get
from components.probes.attention_maps import diagonal_mass
from components.probes.decode import bucket_names, bucket_of
from tests.support.recording import RecordingContext
from tests.support.toy_translation import train_toy


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A copy-like synthetic translation task and two briefly trained encoder-decoders."""
    return train_toy(tmp_path_factory.mktemp("b3"), ("seq2seq-tiny", "luong-tiny"), steps=150, n_test=120)


def cli(metric: str, refs: Path, hyps: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-m", "sacrebleu", str(refs), "-i", str(hyps), "-m", metric, "-b", "-w", "4", "-tok", "none"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


@pytest.mark.slow
def test_bleu_matches_sacrebleu_cli_and_buckets_sum_to_total(trained, tmp_path):
    data, ckpts = trained
    ctx = Context(tmp_path)
    out = get("eval.bleu")(ctx, checkpoints=ckpts, tokenize="none", buckets=[1, 5, 9], n_bootstrap=50)
    s = out["summary"]
    for label in ckpts:
        hyps, refs = tmp_path / f"hyps.{label}.txt", tmp_path / f"refs.{label}.txt"
        assert s[f"bleu/{label}"] == pytest.approx(cli("bleu", refs, hyps), abs=0.01)
        assert s[f"chrf/{label}"] == pytest.approx(cli("chrf", refs, hyps), abs=0.01)
        assert s[f"bleu_ci/{label}"] >= 0
    assert s["bleu/luong-tiny"] > 5  # a real score, so the CLI comparison means something
    assert sum(s[f"count/len_{b}"] for b in bucket_names([1, 5, 9])) == s["n"] == 120
    assert Path(out["plot"]).stat().st_size > 0
    assert {"source", "reference", "hyp_luong-tiny"} <= set(Path(out["samples"]).read_text().splitlines()[0].split(","))


@pytest.mark.slow
def test_capacity_reports_recall_per_length_bucket(trained, tmp_path):
    _, ckpts = trained
    ctx = RecordingContext(tmp_path)
    s = get("probe.capacity")(ctx, checkpoints=ckpts, buckets=[2, 6, 10])["summary"]
    assert sum(s[f"count/len_{b}"] for b in ("2-5", "6-9", "10-inf")) == 120
    (bar,) = ctx.handles  # progress over every model's sentences
    assert bar.total == bar.completed == 120 * len(ckpts)
    buckets = ("2-5", "6-9", "10-inf")
    counts = [s[f"count/len_{b}"] for b in buckets]
    for label in ckpts:
        accs = [s[f"acc/{label}/len_{b}"] for b in buckets]
        # the overall recall is the count-weighted mean of the buckets; the ratio is longest / shortest
        assert s[f"acc/{label}"] == pytest.approx(sum(a * n for a, n in zip(accs, counts)) / 120, abs=1e-5)
        assert s[f"ratio/{label}"] == pytest.approx(accs[-1] / accs[0], abs=1e-5)
    # on a task without reordering attention recalls more than the fixed vector at every length
    # (150 steps, seed 0: about 0.8 / 0.64 / 0.41 against 0.42 / 0.31 / 0.24)
    for b in buckets:
        assert s[f"acc/luong-tiny/len_{b}"] > s[f"acc/seq2seq-tiny/len_{b}"] + 0.1, b
    assert s["acc/luong-tiny/len_2-5"] > 0.6


def test_attention_maps_measure_the_diagonal(trained, tmp_path):
    _, ckpts = trained
    ctx = Context(tmp_path)
    s = get("probe.attention_maps")(ctx, checkpoint=ckpts["luong-tiny"], n_stat=50, show=[0, 1])["summary"]
    # no reordering: each output word attends to its own source position (measured ratio 1.77)
    assert s["diag_ratio"] > 1.5 and s["n"] == 50
    assert s["diag_mass"] == pytest.approx(s["diag_ratio"] * s["diag_mass_uniform"], rel=1e-4)
    assert ctx.artifacts[-1].suffix == ".png"


def test_diagonal_mass_is_one_on_the_diagonal_and_chance_when_uniform():
    assert diagonal_mass(np.eye(6), window=0) == (1.0, pytest.approx(1 / 6))
    uniform = np.full((4, 8), 1 / 8)
    mass, chance = diagonal_mass(uniform, window=1)
    assert mass == pytest.approx(chance)


def test_length_buckets_are_closed_then_open():
    assert bucket_names([1, 10, 20]) == ["1-9", "10-19", "20-inf"]
    assert [bucket_of(n, [1, 10, 20]) for n in (0, 1, 9, 10, 25)] == [None, "1-9", "1-9", "10-19", "20-inf"]
    with pytest.raises(ValueError, match="increasing"):
        bucket_names([10, 5])


def test_beam_search_decodes_and_scores(trained, tmp_path):
    _, ckpts = trained
    scores, hyps = {}, {}
    for beam in (1, 3):
        out = tmp_path / f"beam{beam}"
        s = get("eval.bleu")(
            Context(out),
            checkpoints={"luong": ckpts["luong-tiny"]},
            beam=beam,
            tokenize="none",
            buckets=[1],
            n_bootstrap=0,
            max_examples=30,
        )["summary"]
        assert s["n"] == 30 and "bleu_ci/luong" not in s
        assert s["bleu/luong"] == pytest.approx(cli("bleu", out / "refs.luong.txt", out / "hyps.luong.txt"), abs=0.01)
        scores[beam], hyps[beam] = s["bleu/luong"], (out / "hyps.luong.txt").read_text()
    # the beam decodes other sentences than greedy, and better ones here (34 vs 25 BLEU, seed 0)
    assert hyps[3] != hyps[1] and scores[3] > scores[1]
