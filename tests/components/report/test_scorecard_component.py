"""The report.scorecard component end to end on hand-made measurements: verdicts, files, metrics.

Claim 4 holds by a clear margin over its three seeds; claim 5 has a diverged seed (inconclusive:
3 seeds cannot decide a sign test); claim 3a is one measurement with no uncertainty of its own
(inconclusive: it needs seeds); 12 is about a GPU; 13 has no data."""

import json
import math
import re
import textwrap

import pytest

from components import ComponentError, Context, get
from components.report import ScorecardError, render_architectures, render_table, scorecard

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f"
    b"\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)

LAG = {
    f"arch={a},seed={s}": {"acc": v}
    for a, vals in {"rnn": (0.12, 0.15, 0.13), "lstm": (0.99, 0.99, 1.0), "clip": (0.12, math.nan, 0.1)}.items()
    for s, v in enumerate(vals)
}
MEASUREMENTS = {"lag": LAG, "grad": {"rnn": {"rho": 0.5}, "transformer": {"rho": 1.0}}, "speed": {"ratio": 0.8}}
RUN_IDS = {"lag": {k: f"run-{k}" for k in LAG}, "grad": {"rnn": "g-rnn", "transformer": "g-tf"}}
EXPECT = [
    {
        "id": 4,
        "claim": "The vanilla RNN fails a lag that LSTM solves.",
        "bottleneck": "B2",
        "settings": "LSTM forget-gate bias 3",
        "min_seeds": 3,
        "checks": [
            {"check": "at_most", "value": "lag[arch=rnn].acc", "than": 0.3},
            {"check": "beats", "a": "lag[arch=lstm].acc", "b": "lag[arch=rnn].acc"},
        ],
    },
    {"id": 5, "claim": "Clipping prevents divergence.", "check": "finite", "value": "lag[arch=clip].acc"},
    {
        "id": 12,
        "claim": "On a GPU self-attention is many times faster.",
        "device": "gpu",
        "check": "above",
        "value": "speed.ratio",
        "than": 5,
    },
    {
        "id": 13,
        "claim": "Without positions attention is permutation equivariant.",
        "check": "below",
        "value": "perm.diff",
        "than": 1e-4,
    },
    {
        "id": "3a",
        "claim": "Self-attention shows no distance decay.",
        "check": "between",
        "value": "grad[transformer].rho",
        "low": 0.99,
        "high": 1.01,
    },
]
ARCHS = {
    "rnn": {"B2": {"value": "lag[arch=rnn].acc", "check": "at_least", "than": 0.95, "label": "acc"}},
    "lstm": {"B2": {"value": "lag[arch=lstm].acc", "check": "at_least", "than": 0.95}, "B4": "speed.ratio"},
    "mine": {"B1": "custom.score"},
}


@pytest.fixture
def made(tmp_path):
    (tmp_path / "curve.png").write_bytes(PNG)
    (tmp_path / "notes.png").write_text("not an image")
    ctx = Context(work_dir=tmp_path / "step")
    out = get("report.scorecard")(
        ctx,
        measurements=MEASUREMENTS,
        run_ids=RUN_IDS,
        expect=EXPECT,
        architectures=ARCHS,
        title="Test card",
        plots={
            "curve": str(tmp_path / "curve.png"),
            "by_arch": {"rnn": str(tmp_path / "notes.png")},
            "gone": str(tmp_path / "missing.png"),
        },
    )
    card = json.loads(
        open(out["scorecard"]).read(), parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}")
    )
    return ctx, out, card


def by_id(card):
    return {c["id"]: c for c in card["claims"]}


def test_each_verdict_with_its_reason(made):
    _, _, card = made
    claims = by_id(card)
    assert claims["4"]["verdict"] == "holds"
    assert "[at_most: holds] at most in every seed (seed 0: 0.12 vs 0.3" in claims["4"]["reason"]
    assert "[beats: holds] A beats B in every seed" in claims["4"]["reason"] and "95% CI [+" in claims["4"]["reason"]
    # one diverged seed of three: the seeds are counted, and 3 seeds cannot decide the sign test
    assert claims["5"]["verdict"] == "inconclusive" and "seed 1: nan" in claims["5"]["reason"]
    assert "2 of 3 on the claim's side" in claims["5"]["reason"]
    assert claims["12"]["verdict"] == "device-dependent"
    assert "about gpu; measured on cpu" in claims["12"]["reason"] and "'inconclusive'" in claims["12"]["reason"]
    assert claims["13"]["verdict"] == "not measured" and "no source 'perm'" in claims["13"]["reason"]
    # one value with no uncertainty of its own: judged, but it cannot decide; the reason asks for seeds
    assert claims["3a"]["verdict"] == "inconclusive" and "needs at least 2 seeds" in claims["3a"]["reason"]
    assert "it needs at least 2 seeds (or a measurement with its own interval)" in claims["3a"]["reason"]


def test_claims_carry_the_documented_keys_and_measured_values_per_seed(made):
    _, _, card = made
    for c in card["claims"]:
        assert {"id", "claim", "expected", "measured", "verdict", "run_id", "reason", "settings"} <= set(c)
        assert {"p", "p_holds", "p_fails", "deciding_check", "p_holm", "familywise"} <= set(c)
    c4 = by_id(card)["4"]
    assert c4["measured"]["lag[arch=lstm].acc"] == {"0": 0.99, "1": 0.99, "2": 1.0}
    assert c4["run_id"] == sorted({f"run-arch={a},seed={s}" for a in ("rnn", "lstm") for s in range(3)})
    assert c4["settings"] == "LSTM forget-gate bias 3" and c4["bottleneck"] == "B2"
    assert c4["expected"] == "lag[arch=rnn].acc <= 0.3; lag[arch=lstm].acc > lag[arch=rnn].acc (higher is better)"
    # every check must hold: the claim's p is its weakest check's (the RNN threshold, t 18.9 on 2 df)
    assert c4["deciding_check"] == 0 and c4["p_holds"] == c4["checks"][0]["evidence"]["p_holds"]
    assert c4["p"] == pytest.approx(2 * c4["p_holds"]) and c4["p"] < 0.01
    assert c4["familywise"] is True and c4["p_holm"] == pytest.approx(3 * c4["p"])  # 3 judged claims
    ev = c4["checks"][0]["evidence"]
    assert ev["method"] == "t" and ev["seeds"] == 3 and ev["values"] == pytest.approx({"0": 0.18, "1": 0.15, "2": 0.17})
    assert ev["lo"] > 0 and ev["mean"] == pytest.approx(0.16667, abs=1e-4)
    assert by_id(card)["5"]["familywise"] is False and by_id(card)["12"]["p_holm"] is None  # not in the family
    assert by_id(card)["5"]["measured"]["lag[arch=clip].acc"]["1"] == "nan"


def test_summary_counts_and_stable_metrics(made):
    ctx, out, card = made
    assert (
        out["summary"]
        == card["summary"]
        == {
            "claims": 5,
            "holds": 1,
            "fails": 0,
            "inconclusive": 2,
            "device_dependent": 1,
            "not_measured": 1,
            "holds_familywise": 1,
            "fails_familywise": 0,
            "device_independent": 4,
            "device_independent_holds": 1,
        }
    )
    last = {k: v[-1][1] for k, v in ctx.metrics.items()}
    assert last["claims/holds"] == 1 and last["claims/not_measured"] == 1 and last["claims/total"] == 5
    assert last["claims/holds_familywise"] == 1
    # a verdict as a number: holds 1, inconclusive 0.5, fails 0, device-dependent -1, not measured -2
    assert last["claim/4"] == 1 and last["claim/5"] == 0.5 and last["claim/3a"] == 0.5 and last["claim/12"] == -1
    assert last["claim/13"] == -2
    # the deciding check's interval and the claim's p-values, for history to compare
    c4 = by_id(card)["4"]
    assert last["claim/4/p"] == pytest.approx(c4["p"]) and last["claim/4/p_holm"] == pytest.approx(c4["p_holm"])
    assert last["claim/4/margin"] == pytest.approx(0.16667, abs=1e-4) and 0 < last["claim/4/lo"] < last["claim/4/hi"]
    assert not any(k.startswith("claim/13/") for k in last)  # not measured: no interval
    assert not [k for k in last if k.startswith("arch/")]  # the matrix is in scorecard.json, not one-bar charts
    assert card["architectures"]["lstm"]["B2"]["mean"] == pytest.approx((0.99 + 0.99 + 1.0) / 3)
    assert all(re.fullmatch(r"[A-Za-z0-9_./-]+", k) for k in ctx.metrics)


def test_architecture_rows_include_a_users_model_and_missing_cells(made):
    _, _, card = made
    rows = card["architectures"]
    assert list(rows) == ["rnn", "lstm", "mine"]
    assert rows["rnn"]["B2"]["verdict"] == "fails" and rows["lstm"]["B2"]["verdict"] == "holds"
    assert rows["lstm"]["B4"]["mean"] == 0.8 and rows["lstm"]["B4"]["verdict"] is None
    assert rows["mine"]["B1"]["verdict"] == "not measured" and "custom" in rows["mine"]["B1"]["reason"]


def test_files_are_written_and_logged(made):
    ctx, out, card = made
    logged = {p.name for p in ctx.artifacts}
    assert logged == {"scorecard.json", "scorecard.md", "scorecard.html"}
    md = open(out["markdown"]).read()
    assert "### Claim 4\n\n**B2 · ✓ holds** The vanilla RNN fails" in md and "~ device-dependent" in md
    assert "**1 of 5 claims hold (1 at family-wise 5%, Holm) · 0 fail · 2 inconclusive · 1 device-dependent" in md
    assert "| mine | ? not measured |" in md
    html = open(out["html"]).read()
    assert html.count("data:image/png;base64,") == 1 and "src='http" not in html
    assert card["plots"] == ["curve"]
    assert set(card["plots_left_out"]) == {"by_arch[rnn]", "gone"}


def test_render_table_reads_the_json_and_prints_references_verbatim(made):
    from rich.console import Console

    _, out, card = made
    table = render_table(out["scorecard"])
    assert table.row_count == 5
    console = Console(width=200, record=True)
    console.print(table, render_architectures(card))
    text = console.export_text()
    assert "lag[arch=lstm].acc" in text  # brackets are not eaten as rich markup
    assert "1 of 5 claims hold (1 at family-wise 5%, Holm)" in text and "mine" in text


def test_on_a_gpu_the_device_claim_is_judged(tmp_path):
    speed = {f"seed={i}": {"ratio": r} for i, r in enumerate((12.0, 11.5, 12.4))}
    out = get("report.scorecard")(
        Context(work_dir=tmp_path / "a", device="cuda"), measurements={"speed": speed}, expect=[EXPECT[2]]
    )
    assert out["summary"]["holds"] == 1 and out["summary"]["device_dependent"] == 0
    # one measurement is judged too (not device-dependent), and asks for seeds
    out = get("report.scorecard")(
        Context(work_dir=tmp_path / "b", device="cuda"), measurements={"speed": {"ratio": 12.0}}, expect=[EXPECT[2]]
    )
    assert out["summary"]["inconclusive"] == 1 and out["summary"]["device_dependent"] == 0


def test_spread_factor_is_still_accepted_and_recorded_but_does_not_change_a_verdict(made, tmp_path):
    ctx, _, card = made
    assert card["spread_factor"] == 3.0  # the default, as pipelines written for the earlier rule set it
    other = Context(work_dir=tmp_path / "sf")
    out = get("report.scorecard")(
        other, measurements=MEASUREMENTS, run_ids=RUN_IDS, expect=EXPECT, architectures=ARCHS, spread_factor=0.2
    )
    again = json.loads(open(out["scorecard"]).read())
    assert again["spread_factor"] == 0.2 and out["summary"] == card["summary"]
    for a, b in zip(card["claims"], again["claims"]):
        assert (a["verdict"], a["reason"], a["p"]) == (b["verdict"], b["reason"], b["p"])


def test_a_malformed_expectation_stops_the_step_with_its_location(tmp_path):
    with pytest.raises(ComponentError, match=r"expect\[0\] \(claim 1\): unknown check 'abov'.*'above'"):
        get("report.scorecard")(
            Context(work_dir=tmp_path),
            measurements={},
            expect=[{"id": 1, "claim": "x", "check": "abov", "value": "a.b", "than": 1}],
        )
    with pytest.raises(ScorecardError, match="unknown check 'abov'"):  # the bare function checks too
        scorecard(
            Context(work_dir=tmp_path),
            measurements={},
            expect=[{"id": 1, "claim": "x", "check": "abov", "value": "a.b", "than": 1}],
        )


def test_pipeline_validation_reports_bad_claims_and_cells_at_their_line(tmp_path):
    from flows.language.errors import PipelineInvalid
    from flows.plan.build import build

    path = tmp_path / "bad.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: bad-card
        steps:
          card:
            uses: report.scorecard
            with:
              measurements: {}
              expect:
                - {id: 1, claim: x, check: beats, a: "s.a", b: "s.b", better: more}
              architectures:
                lstm: {B5: "a.b"}
        """)
    )
    with pytest.raises(PipelineInvalid) as e:
        build(path)
    lines = {(err.line, err.message.split(": ", 1)[0]) for err in e.value.errors}
    assert lines == {(8, "step 'card'"), (10, "step 'card'")}
    text = str(e.value)
    assert "'better' is 'higher' or 'lower'" in text and "unknown column 'B5'" in text


def test_nothing_measured_still_writes_a_scorecard(tmp_path):
    out = get("report.scorecard")(Context(work_dir=tmp_path), measurements={}, expect=EXPECT)
    assert out["summary"]["not_measured"] == 4 and out["summary"]["device_dependent"] == 1


def test_a_template_row_gives_every_architecture_in_the_matrix_a_row(tmp_path):
    measurements = {
        "lag": {
            f"arch={a},lag=50,seed={s}": {"acc": v + 0.002 * s}  # a spread: identical seeds are not exact
            for a, v in (("rnn", 0.1), ("lstm", 0.99), ("mine", 0.97))
            for s in range(3)
        },
        "grad": {"rnn": {"rho": 0.5}, "lstm": {"rho": 0.62}},
        "timing": {"steps/rnn": 512, "steps/lstm": 512},
    }
    archs = {
        "rnn": {"B1": "grad[rnn].rho"},  # written by hand: wins over the template
        "{arch}": {
            "B2": {"check": "at_least", "value": "lag[arch={arch},lag=50].acc", "than": 0.95},
            "B3": "grad[{arch}].rho",
            "B4": {"value": "timing.steps/{arch}", "label": "sequential steps"},
        },
    }
    out = get("report.scorecard")(Context(work_dir=tmp_path), measurements=measurements, expect=[], architectures=archs)
    rows = json.loads(open(out["scorecard"]).read())["architectures"]
    assert list(rows) == ["rnn", "lstm", "mine"]
    assert set(rows["rnn"]) == {"B1"}
    assert rows["lstm"]["B2"]["verdict"] == "holds" and rows["lstm"]["B3"]["mean"] == 0.62
    assert rows["lstm"]["B4"]["mean"] == 512 and rows["lstm"]["B4"]["label"] == "sequential steps"
    assert rows["mine"]["B2"]["verdict"] == "holds" and set(rows["mine"]) == {"B2"}  # no grad or timing for it


def test_a_scorecard_without_a_title_is_not_named_after_the_shipped_comparison(tmp_path):
    out = get("report.scorecard")(Context(work_dir=tmp_path / "step"), measurements=MEASUREMENTS, expect=EXPECT[:1])
    card = json.loads(open(out["scorecard"]).read())
    markdown = open(out["markdown"]).read()
    assert card["title"] == "Scorecard" and markdown.startswith("# Scorecard")
    assert "four-bottleneck" not in markdown
