"""BLEU across models: merged checkpoint groups, the side-by-side long sentence, the five-model plot with
bands, the scorecard's examples section, and "matches or beats" (at_least with a tolerance)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components import Context, get
from components.probes.common import ProbeError
from components.report.bleu_plot import BleuPlotError, curves
from components.report.checks import evaluate
from components.report.refs import Resolver
from tests.support.recording import RecordingContext
from tests.support.toy_translation import train_toy


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A toy translation task, two briefly trained RNNs and a Transformer."""
    return train_toy(
        tmp_path_factory.mktemp("bleu"), ("seq2seq-tiny", "luong-tiny", "transformer-tiny"), steps=60, n_test=60
    )


@pytest.mark.slow
def test_checkpoint_groups_merge_and_the_longest_sentence_is_shown_for_every_model(trained, tmp_path):
    data, ckpts = trained
    groups = [
        {"seq2seq-tiny": ckpts["seq2seq-tiny"], "luong-tiny": ckpts["luong-tiny"]},
        {"transformer": ckpts["transformer-tiny"]},
    ]
    out = get("eval.bleu")(Context(tmp_path), checkpoints=groups, tokenize="none", buckets=[1, 5, 9], n_bootstrap=20)
    s = out["summary"]
    assert {"bleu/seq2seq-tiny", "bleu/luong-tiny", "bleu/transformer"} <= set(s)
    ex = json.loads(Path(out["examples"]).read_text())
    sources = (tmp_path / "refs.transformer.txt").read_text().splitlines()  # refs line up with sources
    assert ex["words"] == 12 and len(ex["source"].split()) == 12  # max_len of the task: the longest sentence
    assert ex["reference"] == sources[ex["index"]]
    for label in ("seq2seq-tiny", "luong-tiny", "transformer"):
        assert ex["hyps"][label] == (tmp_path / f"hyps.{label}.txt").read_text().splitlines()[ex["index"]]


def test_models_scored_on_the_same_sentences_get_paired_difference_intervals(trained, tmp_path):
    _, ckpts = trained
    ctx = Context(tmp_path)
    groups = [{"s2s": ckpts["seq2seq-tiny"], "luong": ckpts["luong-tiny"]}, {"tf": ckpts["transformer-tiny"]}]
    s = get("eval.bleu")(ctx, checkpoints=groups, tokenize="none", buckets=[1, 5, 9], n_bootstrap=20)["summary"]
    # every pair, across checkpoint groups too (same test sentences), in the order the models came
    for a, b in (("s2s", "luong"), ("s2s", "tf"), ("luong", "tf")):
        for part in ("", "/longest", "/len_1-4"):
            assert s[f"bleu_diff_ci/{a}/{b}{part}"] > 0, (a, b, part)
            assert 0.0476 <= s[f"bleu_diff_p/{a}/{b}{part}"] <= 1  # 20 resamples: p is at least 1/21
        assert f"bleu_diff_ci/{b}/{a}" not in s
    assert s["bleu_diff_ci/s2s/luong/longest"] == s["bleu_diff_ci/s2s/luong/len_9-inf"]  # an alias, as bleu/
    # outputs for the scorecard's paired checks, not logged metrics
    assert not any("bleu_diff" in k for k in ctx.metrics) and "eval/bleu/bleu/s2s/longest" in ctx.metrics


def test_a_label_in_two_checkpoint_groups_is_an_error(trained, tmp_path):
    _, ckpts = trained
    with pytest.raises(ProbeError, match="label 'luong' appears in two checkpoint groups"):
        get("eval.bleu")(
            Context(tmp_path),
            checkpoints=[{"luong": ckpts["luong-tiny"]}, {"luong": ckpts["seq2seq-tiny"]}],
            tokenize="none",
            buckets=[1, 5],
        )


def test_the_plot_step_merges_evaluations_of_every_model_into_one_figure(trained, tmp_path):
    _, ckpts = trained
    run = lambda name, c: get("eval.bleu")(
        Context(tmp_path / name),
        checkpoints=c,
        tokenize="none",  # noqa: E731
        buckets=[1, 5, 9],
        n_bootstrap=20,
    )
    rnn = run("rnn", {"luong-tiny": ckpts["luong-tiny"]})
    tf = run("tf", {"transformer": ckpts["transformer-tiny"]})
    out = get("report.bleu_by_length")(
        Context(tmp_path / "plot"),
        evaluations={"rnn": {"0": rnn["summary"]}, "tf": tf["summary"]},
        examples={"rnn": {"0": rnn["examples"]}, "tf": tf["examples"]},
    )
    assert Path(out["plot"]).read_bytes()[:4] == b"\x89PNG"
    assert out["summary"]["bleu/transformer/len_9-inf"] == pytest.approx(tf["summary"]["bleu/transformer/len_9-inf"])
    assert set(json.loads(Path(out["examples"]).read_text())["hyps"]) == {"luong-tiny", "transformer"}


def _summary(label: str, bleu: list[float], ci: list[float]) -> dict:
    buckets = ["19-inf", "4-8", "9-18"]  # as a store that sorts keys returns them
    order = ["4-8", "9-18", "19-inf"]
    s = {f"count/len_{b}": 10 * (i + 1) for i, b in enumerate(buckets)}
    s[f"bleu/{label}"] = sum(bleu) / 3
    for b, y, c in zip(order, bleu, ci):
        s[f"bleu/{label}/len_{b}"], s[f"bleu_ci/{label}/len_{b}"] = y, c
    return s


def test_curves_average_seeds_and_span_their_bootstrap_intervals_in_bucket_order():
    data = curves(
        {"bleu": {"0": _summary("luong", [90, 80, 70], [2, 3, 4]), "1": _summary("luong", [94, 84, 60], [1, 1, 1])}}
    )
    assert data["buckets"] == ["4-8", "9-18", "19-inf"]
    assert data["counts"] == [20, 30, 10]
    m = data["models"]["luong"]
    assert m["mean"] == [92, 82, 65]
    assert m["low"] == [88, 77, 59] and m["high"] == [95, 85, 74]


def test_a_bucket_no_seed_scored_is_a_gap_in_the_curve_without_warnings():
    import math
    import warnings

    seeds = {str(k): _summary("luong", [90, 80 + k, 70], [1, 1, 1]) for k in (0, 2)}
    for s in seeds.values():  # no test sentence that long
        del s["bleu/luong/len_19-inf"], s["bleu_ci/luong/len_19-inf"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = curves({"bleu": seeds})["models"]["luong"]
    assert m["mean"][:2] == [90, 81] and math.isnan(m["mean"][2])
    assert m["low"][:2] == [89, 79] and math.isnan(m["low"][2]) and math.isnan(m["high"][2])


def test_curves_refuse_mixed_buckets_and_unscored_models():
    a = _summary("luong", [90, 80, 70], [1, 1, 1])
    b = {k.replace("19-inf", "20-inf"): v for k, v in _summary("seq2seq", [1, 1, 1], [0, 0, 0]).items()}
    with pytest.raises(BleuPlotError, match="same buckets"):
        curves({"a": a, "b": b})
    with pytest.raises(BleuPlotError, match=r"no evaluation scored \['transformer'\]"):
        curves({"a": a}, models=["luong", "transformer"])


def test_scorecard_shows_the_long_sentence_side_by_side(tmp_path):
    ex = tmp_path / "examples.json"
    ex.write_text(
        json.dumps(
            {
                "split": "test",
                "index": 3,
                "words": 5,
                "source": "s1 s2 s3 s4 s5",
                "reference": "t2 t1 t4 t3 t5",
                "hyps": {"seq2seq": "t2 t1", "luong": "t2 t1 t4 t3 t5"},
            }
        )
    )
    out = get("report.scorecard")(
        Context(tmp_path / "card"),
        measurements={"m": {"x": 1.0}},
        examples=str(ex),
        expect=[{"id": "1", "claim": "x is one", "check": "equals", "value": "m.x", "to": 1}],
    )
    md, html = Path(out["markdown"]).read_text(), Path(out["html"]).read_text()
    # a list, one output a line: a table cell holding a sentence would widen the whole table in a pane
    assert "- **seq2seq**: t2 t1\n- **luong**: t2 t1 t4 t3 t5" in md and "- **reference**: t2 t1 t4 t3 t5" in md
    assert "<tr><th>luong</th><td>t2 t1 t4 t3 t5</td></tr>" in html
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"source": "s1"}))
    with pytest.raises(ValueError, match="needs source, reference and hyps"):
        get("report.scorecard")(
            Context(tmp_path / "bad"),
            measurements={"m": {"x": 1.0}},
            examples=str(bad),
            expect=[{"id": "1", "claim": "x", "check": "equals", "value": "m.x", "to": 1}],
        )


@pytest.mark.parametrize(
    "transformer,tolerance,verdict",
    [
        ([98.5, 99.0, 97.9], 2, "holds"),  # within 2 BLEU of attention in every seed: matches
        ([99.5, 99.6, 99.9], 0, "holds"),  # beats it in every seed
        ([98.5, 99.0, 96.0], 2, "inconclusive"),  # seed 2 is 3 BLEU behind: 2 of 3 seeds match
        ([98.5, 99.0, 97.9], 0, "inconclusive"),  # behind in every seed, but inside the seeds' spread (t 2.1)
        ([95.0, 95.5, 95.2], 0, "fails"),  # behind by 4 BLEU, far beyond the spread
    ],
)
def test_at_least_with_a_tolerance_means_matches_or_beats(transformer, tolerance, verdict):
    luong = [99.0, 99.2, 99.1]
    m = {"bleu": {str(s): {"t": t, "l": x} for s, (t, x) in enumerate(zip(transformer, luong))}}
    check = {"check": "at_least", "value": "bleu[*].t", "than": "bleu[*].l", "tolerance": tolerance}
    result = evaluate(check, Resolver(m), min_seeds=3)
    assert result.verdict == verdict, result.reason
    if tolerance:
        assert "tolerance 2" in result.reason and result.expected == "bleu[*].t >= bleu[*].l - 2"


def test_the_papers_tokenised_compound_split_bleu_is_its_own_number():
    """Vaswani 2017's convention: Moses tokens, compounds split in one pass, no further tokenisation."""
    from components.probes.bleu import paper_tokens, score, tokenized_bleu

    assert paper_tokens(['Er traf den CDU-Vorsitzenden, sagte er "gestern".', "a-b-c"], "de") == [
        'Er traf den CDU ##AT##-##AT## Vorsitzenden , sagte er " gestern " .',
        "a ##AT##-##AT## b-c",
    ]
    ref = ["Die Kanzlerin traf gestern in Berlin den neuen CDU-Vorsitzenden und seine Stellvertreter."]
    hyp = ["Die Kanzlerin traf gestern in Berlin den neuen CDU-Chef und seine Stellvertreter."]
    assert tokenized_bleu(ref, ref, "de") == pytest.approx(100.0)
    # the split compound gives "CDU" and "-" credit that 13a (one token "CDU-Chef") does not
    assert tokenized_bleu(hyp, ref, "de") > score(hyp, ref, "13a", 0)["bleu"] + 3  # 80.0 vs 76.1


def test_translating_a_split_reports_progress_over_every_models_sentences(trained, tmp_path):
    _, ckpts = trained
    ctx = RecordingContext(tmp_path)
    get("eval.bleu")(
        ctx,
        checkpoints={"a": ckpts["seq2seq-tiny"], "b": ckpts["luong-tiny"]},
        tokenize="none",
        buckets=[1, 5, 9],
        n_bootstrap=0,
        batch_size=16,
    )
    translating, scoring = ctx.handles  # every model is translated, then all are scored together
    assert (translating.total, translating.completed) == (120, 120)  # 60 test sentences by 2 models, all done
    assert translating.description == "translate b"
    assert scoring.description == "score (paired bootstrap)"
