"""A check with two bounds (close, between) says in its why line the same margin the table shows."""

from components.report.checks import evaluate
from components.report.refs import Resolver
from components.report.text import margin_texts
from components.report.vocabulary import validate_check


def test_the_close_checks_why_line_carries_the_tables_margin():
    seeds = {f"seed={i}": {"a": 0.95 + 0.01 * i, "b": 0.96 + 0.012 * i} for i in range(3)}
    check = validate_check({"check": "close", "a": "m[*].a", "b": "m[*].b", "tolerance": 0.03}, "claim x")
    out = evaluate(check, Resolver({"m": seeds}), over="seed", min_seeds=3, exact=False)
    margin, interval = margin_texts({"checks": [{"evidence": out.evidence}], "deciding_check": 0})
    assert (margin, interval) == ("0.018", "[0.01303, 0.02297]")  # the table's
    assert "mean difference -0.012, 95% CI [-0.01697, -0.007032]" in out.reason
    assert "margin to the nearer bound +0.018 [+0.01303, +0.02297]" in out.reason  # the same margin, signed
