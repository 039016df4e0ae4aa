"""The newest run against the runs before it: its status, its claims' verdicts and its metrics, each
judged with the metric's direction and noise, then put in context (a changed pipeline, another environment).

A metric that moved beyond its noise (``compare``) is an improvement or a regression by its direction
(``direction``), a change where better is not known. The seed tests of one night are one family: their
p-values are adjusted by Holm (``stats.holm``) so that a night of many metrics does not raise false
alarms at many times the rate of one. A move that came with a changed pipeline is reported as
``pipeline`` (with the difference, never a regression); one that came with another environment as
``environment`` (the fields that differ).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from components import stats
from flows.ops.history import claims, compare, pipeline
from flows.ops.history._model import Flag, Thresholds
from flows.ops.history.direction import Directions, better
from flows.ops.history.table import CLAIM, metric_columns
from flows.track.environment import differences


@dataclass
class Judgement:
    """What the judge found: flags (the newest run's changes and status) and notes on how it judged."""

    flags: list[Flag] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    newest: str | None = None
    previous: str | None = None

    @property
    def regressed(self) -> bool:
        return any(f.is_regression for f in self.flags)


@dataclass
class _Context:
    newest: str
    previous: str | None
    moved_env: dict
    code_note: str
    pipeline_changed: bool
    env_recorded: bool = False  # both runs recorded their environment (and it is the same when not moved_env)


def judge(frame: pd.DataFrame, thresholds: Thresholds, directions: Directions | None = None) -> Judgement:
    """Judge the newest row of ``frame`` (oldest first) against the rows before it."""
    out = Judgement()
    if frame.empty:
        return out
    out.newest = frame.index[-1]
    out.previous = frame.index[-2] if len(frame) > 1 else None
    out.flags += _status(frame)
    if out.previous is None:
        out.notes.append("one run only: nothing to compare it with")
        _stopped_notes(frame, out)
        return out
    ctx = _context(frame, out.newest, out.previous)
    if ctx.pipeline_changed:
        diff = pipeline.difference(out.previous, out.newest)
        text = f"the pipeline changed between run {out.previous[:8]} and run {out.newest[:8]}:\n{diff}"
        out.flags.append(Flag("pipeline", "pipeline", None, None, text))
    raw = _claims(frame, ctx) + _metrics(frame, thresholds, directions or Directions(), out.notes)
    out.flags += [_in_context(flag, ctx) for flag in raw]
    for running in frame.attrs.get("running", []):
        out.notes.insert(0, f"run {running} is still running: judged the one before it, {out.newest}")
    _stopped_notes(frame, out)
    return out


def _stopped_notes(frame: pd.DataFrame, out: Judgement) -> None:
    """Runs an operator stopped after the judged one: named with who stopped them, never judged."""
    for rid, who in frame.attrs.get("stopped", {}).items():
        out.notes.insert(0, f"run {rid} was stopped by {who}: not judged (no regression); judged {out.newest}")


def regressions(frame: pd.DataFrame, thresholds: Thresholds, directions: Directions | None = None) -> list[Flag]:
    """The flags of ``judge`` alone."""
    return judge(frame, thresholds, directions).flags


def _status(frame: pd.DataFrame) -> list[Flag]:
    rid = frame.index[-1]
    status = frame["status"].iloc[-1]
    why = frame.attrs.get("why", {}).get(rid)
    if status == "FAILED":
        return [Flag("status", "failed", None, None, f"the newest run {rid[:8]} FAILED")]
    if status == "KILLED":
        return [Flag("status", "killed", None, None, f"the newest run {rid[:8]} was KILLED: {why}")]
    if status == "RUNNING" and why:
        text = f"the newest run {rid[:8]} never finished: {why}; the next `run` of it marks it KILLED"
        return [Flag("status", "killed", None, None, text)]
    return []


def _context(frame: pd.DataFrame, newest: str, previous: str) -> _Context:
    envs = frame.attrs.get("environment", {})
    commits = frame.attrs.get("commit", {})
    code = (commits.get(previous), commits.get(newest))
    code_note = f"; code {code[0][:8]} -> {code[1][:8]}" if all(code) and code[0] != code[1] else ""
    changed = pipeline.changed(frame.attrs.get("spec", {}), previous, newest)
    a, b = envs.get(previous), envs.get(newest)
    return _Context(newest, previous, differences(a, b), code_note, changed, bool(a and b))


def _in_context(flag: Flag, ctx: _Context) -> Flag:
    """Name the cause a move came with: a changed pipeline, then another environment."""
    head, _, tail = flag.message.partition("\0")
    word = f" ({flag.direction})" if flag.direction else ""
    if ctx.pipeline_changed:
        flag.kind, flag.message = "pipeline", f"{head}{word} with a changed pipeline (not judged){ctx.code_note}{tail}"
    elif ctx.moved_env:
        shown = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in sorted(ctx.moved_env.items())[:6])
        flag.kind = "environment"
        flag.message = (
            f"{head}{word} with another environment ({shown}){ctx.code_note}: a machine or library can move "
            f"the figure; rerun one commit on both to tell it from a regression{tail}"
        )
    elif flag.kind == "regression":
        same = " (same environment)" if ctx.env_recorded else ""
        flag.message = f"{head}{same}{ctx.code_note}{tail}"
    else:
        flag.message = f"{head}{word if flag.kind == 'change' else ''}{ctx.code_note}{tail}"
    return flag


def _claims(frame: pd.DataFrame, ctx: _Context) -> list[Flag]:
    flags = []
    for metric in metric_columns(frame):
        if not CLAIM.search(metric):
            continue
        now, previous = frame[metric].iloc[-1], frame[metric].iloc[-2]
        if pd.isna(now) or pd.isna(previous) or now == previous:
            continue
        kind, direction = claims.moved(float(previous), float(now))
        head = f"{metric}: {claims.verdict_name(float(previous))} -> {claims.verdict_name(float(now))}"
        tail = claims.evidence(metric, ctx.previous, ctx.newest) if frame.attrs.get("experiment") else ""
        flags.append(Flag(metric, kind, float(now), float(previous), f"{head}\0{tail}", direction))
    return flags


def _metrics(frame: pd.DataFrame, thresholds: Thresholds, directions: Directions, notes: list[str]) -> list[Flag]:
    found = [c for c in map(lambda m: _compare(frame, m, thresholds), _judged(frame)) if c is not None]
    tested = {c.metric: c.p for c in found if c.method == "seeds"}
    adjusted = stats.holm(tested)
    flags = []
    for c in found:
        if c.method == "seeds":
            if adjusted[c.metric] > stats.ALPHA:
                continue
            family = (
                f", Holm-adjusted over {len(tested)} seed tests {adjusted[c.metric]:.2g}" if len(tested) > 1 else ""
            )
            c.text += f"{family})"
        if c.moved == 0:
            continue
        way = directions.of(c.metric, frame.attrs.get("keys", {}).get(c.metric))
        direction = "worse" if c.worse else better(way, c.moved)
        kind = {"better": "improvement", "worse": "regression"}.get(direction, "change")
        unknown = "" if way or c.worse else "; better is not known for it (--higher or --lower GLOB judges it)"
        flags.append(Flag(c.metric, kind, c.newest, c.baseline, f"{c.text}{unknown}\0", direction))
    single = sum(1 for m in _judged(frame) if _single(frame, m))
    if single:
        notes.append(
            f"{single} metric(s) have one value a run (no seeds): no seed-to-seed noise to judge them by, "
            f"so a change beyond the relative threshold ({thresholds.default:.0%} by default) of the median counts"
        )
    return flags


def _judged(frame: pd.DataFrame) -> list[str]:
    """Metric columns the newest run logged, other than claims and their statistics."""
    logged = frame.attrs.get("logged", {}).get(frame.index[-1])
    return [
        m
        for m in metric_columns(frame)
        if not CLAIM.search(m) and not claims.CLAIM_STATS.search(m) and (logged is None or m in logged)
    ]


def _seeds_of(frame: pd.DataFrame, rid: str, metric: str) -> tuple[float, ...] | None:
    values = frame.attrs.get("seeds", {}).get(rid, {}).get(metric)
    if values is None:
        value = frame.at[rid, metric]
        return None if pd.isna(value) and metric not in frame.attrs.get("logged", {}).get(rid, ()) else (float(value),)
    return values


def _single(frame: pd.DataFrame, metric: str) -> bool:
    return len(_seeds_of(frame, frame.index[-1], metric) or ()) == 1


def _compare(frame: pd.DataFrame, metric: str, thresholds: Thresholds) -> compare.Comparison | None:
    now = _seeds_of(frame, frame.index[-1], metric)
    if now is None:
        return None
    before = [(rid, _seeds_of(frame, rid, metric)) for rid in frame.index[:-1]]
    before = [(rid, v) for rid, v in before if v is not None]
    if not before:
        return None
    found = compare.seeds(metric, now, before[-1][1])
    if found is not None:
        return found
    history = [float(frame.at[rid, metric]) for rid, _ in before]
    history = [h for h in history if not pd.isna(h)] or history
    return compare.threshold(metric, float(frame[metric].iloc[-1]), history, thresholds.of(metric))
