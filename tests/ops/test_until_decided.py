"""`run --until-decided`: looks fixed by the report's design, more seeds only where a claim is open,
and the next run starting where the last one stopped (a user's own pipeline and components)."""

import json
import re
import textwrap

import pytest
from typer.testing import CliRunner

from flows.cli import app

runner = CliRunner()

STEPS = '''
import json
from components import component


@component("mine.measure", outputs=["summary"])
def measure(ctx, *, seed: int, level: float | dict) -> dict:
    level = level["value"] if isinstance(level, dict) else level  # another seed's summary, read seed by seed
    return {"summary": {"value": level + seed / 100}}


@component("mine.judge", outputs=["verdicts"], shows={"verdicts": "verdicts"})
def judge(ctx, *, measurements: dict, design: dict | None = None) -> dict:
    """Claim "a" needs 10 seeds of `a`, claim "b" decides at its first look; the planned looks double."""
    claims = []
    for cid, need in (("a", 10), ("b", 0)):
        seeds = len(measurements[cid])
        first = (design or {}).get("first_look", {}).get(cid, seeds)
        most = (design or {}).get("max_seeds", seeds)
        looks = sorted({first, min(2 * first, most), most})
        later = [n for n in looks if n > seeds]
        stopped = "decided" if seeds >= need else "open" if later else "max_seeds"
        seq = {"looks": looks, "seeds": seeds, "stopped": stopped, "sources": [cid],
               "next_seeds": later[0] if stopped == "open" else None}
        claims.append({"id": cid, "verdict": "holds" if stopped == "decided" else "inconclusive", "sequential": seq})
    path = ctx.path("verdicts.json")
    path.write_text(json.dumps({"claims": claims}))
    return {"verdicts": str(path)}
'''

PIPELINE = """
name: decide-mine
params: {three: [0, 1, 2], other: [0, 1, 2]}
settings: {workers: 1, executor: threads}
steps:
  a: {uses: mysteps:measure, with: {seed: "${matrix.seed}", level: 1.0}, matrix: {seed: "${params.three}"}}
  a2: {uses: mysteps:measure, with: {seed: "${matrix.seed}", level: "${a.summary}"}, matrix: {seed: "${params.three}"}}
  b: {uses: mysteps:measure, with: {seed: "${matrix.seed}", level: 2.0}, matrix: {seed: "${params.other}"}}
  judge:
    uses: mysteps:judge
    with: {measurements: {a: "${a2.summary}", b: "${b.summary}"}}
"""


@pytest.fixture
def folder(tmp_path, monkeypatch, home):
    (tmp_path / "mysteps.py").write_text(STEPS)
    (tmp_path / "p.yaml").write_text(textwrap.dedent(PIPELINE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _ran(output: str) -> list[str]:
    """The driver's lines, each look's duration left out (``; 0m02s``)."""
    lines = [line.split("until decided: ", 1)[1] for line in output.splitlines() if "until decided: " in line]
    return [re.sub(r"; \d+(h\d+m|m\d+s)\)", ")", line) for line in lines]


def test_only_the_open_claims_steps_get_seeds_look_by_look_and_the_next_run_goes_on(folder):
    first = runner.invoke(app, ["run", "p.yaml", "--until-decided", "--max-seeds", "10", "--budget", "1h"])
    assert first.exit_code == 0, first.output
    lines = _ran(first.output)
    assert lines[0] == "look 1 (the planned seeds): 1 of 2 claims decided; still open: a"
    assert lines[1] == "look 2 (a, a2: 6 seeds): 1 of 2 claims decided; still open: a"
    assert lines[2] == "look 3 (a, a2: 10 seeds): 2 of 2 claims decided"
    assert len(lines) == 3
    # the steps feeding claim a ran seeds 3-9, b stayed at its 3 (its claim was decided)
    assert "a2[seed=9]" in first.output and "b[seed=3]" not in first.output
    state = json.loads(next((folder / "home" / "until_decided").glob("p-*.json")).read_text())
    assert (
        state["axes"] == {"a": {"seed": list(range(10))}, "a2": {"seed": list(range(10))}} and state["why"] == "decided"
    )

    again = runner.invoke(app, ["run", "p.yaml", "--until-decided", "--max-seeds", "10"])
    assert again.exit_code == 0, again.output
    assert _ran(again.output) == ["look 1 (a, a2: 10 seeds): 2 of 2 claims decided"]  # where it stopped, from the cache
    assert "finished in" in again.output and "24 cached" in again.output  # the judge too: same seeds, same design


def test_a_claim_out_of_seeds_stops_at_max_seeds_and_says_so(folder):
    done = runner.invoke(app, ["run", "p.yaml", "--max-seeds", "6"])
    assert done.exit_code == 0, done.output
    lines = _ran(done.output)
    assert lines[-2] == "look 2 (a, a2: 6 seeds): 1 of 2 claims decided; undecided at their last look: a"
    assert lines[-1] == "1 claim(s) still undecided (a): they reached --max-seeds 6"


def test_a_budget_that_the_next_look_would_pass_stops_before_it_with_the_command_to_go_on(folder):
    done = runner.invoke(app, ["run", "p.yaml", "--until-decided", "--budget", "1s"])
    assert done.exit_code == 0, done.output
    lines = _ran(done.output)
    assert lines[0].startswith("look 1 (the planned seeds)")
    assert lines[1].startswith("budget: ") and "so it was not started" in lines[1]
    assert lines[-1] == "go on where this stopped: bottlenecks run p.yaml --until-decided --max-seeds 10"


def test_bad_options_and_a_pipeline_without_a_judge_exit_2(folder):
    bad = runner.invoke(app, ["run", "p.yaml", "--budget", "soon"])
    assert bad.exit_code == 2 and "--budget must be a duration such as 45m, 2h or 1h30m, got 'soon'" in bad.output
    bad = runner.invoke(app, ["run", "p.yaml", "--max-seeds", "1"])
    assert bad.exit_code == 2 and "--max-seeds must be at least 2, got 1" in bad.output
    (folder / "q.yaml").write_text("name: q\nsteps:\n  a: {uses: mysteps:measure, with: {seed: 0, level: 1.0}}\n")
    none = runner.invoke(app, ["run", "q.yaml", "--until-decided"])
    assert none.exit_code == 2 and "--until-decided has nothing to decide" in none.output


def test_the_looks_run_without_the_command_line_through_the_callers_runner(folder):
    from flows.execute.runner import run
    from flows.ops.decide import NothingToDecide
    from flows.ops.looks import run_looks

    said, firsts = [], []

    def run_look(plan, first):
        firsts.append(first)
        return run(plan, use_cache=True)

    done = run_looks(
        "p.yaml", profile=None, sets=[], design={"max_seeds": 6, "budget": None}, run=run_look, say=said.append
    )
    lines = [re.sub(r"; \d+(h\d+m|m\d+s)\)", ")", line) for line in said]
    assert lines == [
        "look 1 (the planned seeds): 1 of 2 claims decided; still open: a",
        "look 2 (a, a2: 6 seeds): 1 of 2 claims decided; undecided at their last look: a",
        "1 claim(s) still undecided (a): they reached --max-seeds 6",
    ]
    assert firsts == [True, False] and done.why == "max_seeds" and done.left == ["a"] and done.result.ok
    assert "a2[seed=5]" in done.plan.instances and "b[seed=3]" not in done.plan.instances

    (folder / "q.yaml").write_text("name: q\nsteps:\n  a: {uses: mysteps:measure, with: {seed: 0, level: 1.0}}\n")
    with pytest.raises(NothingToDecide, match="--until-decided has nothing to decide"):
        run_looks("q.yaml", profile=None, sets=[], design={"max_seeds": 6, "budget": None}, run=run_look)
    assert firsts == [True, False]  # refused before a look ran


def test_a_stop_on_the_budget_names_the_open_claims_and_the_command_that_goes_on():
    from flows.ops.decide import Decided
    from flows.ops.looks import left_undecided

    card = {"claims": [{"id": 7, "sequential": {"stopped": "open"}}, {"id": 8, "sequential": {"stopped": "futile"}}]}
    done = Decided(why="budget", left=["7", "8"], card=card)
    assert left_undecided(done, "p.yaml", "quick", ["x=1"], 10) == [
        "1 claim(s) still undecided (8): futile: at the observed effect even the last look would very likely not "
        "decide them",
        "1 claim(s) still undecided (7): the budget ends here",
        "go on where this stopped: bottlenecks run p.yaml --profile quick --set 'x=1' --until-decided --max-seeds 10",
    ]
    assert left_undecided(Decided(why="decided"), "p.yaml", None, [], 10) == []


@pytest.mark.slow
def test_a_scheduled_night_takes_its_looks_from_the_settings_and_the_next_night_goes_on(folder):
    from flows.ops.schedule import run_pipeline

    text = (
        (folder / "p.yaml")
        .read_text()
        .replace("executor: threads}", "executor: threads, until_decided: {max_seeds: 6}}")
    )
    (folder / "p.yaml").write_text(text)
    state = run_pipeline("p.yaml", return_state=True)
    assert state.is_completed(), state.message
    night = state.result()["status"]
    assert "a2[seed=5]" in night and "a2[seed=6]" not in night and "b[seed=3]" not in night  # looks 3 -> 6
    assert night["a2[seed=5]"] == "done"
    again = run_pipeline("p.yaml", return_state=True).result()["status"]
    assert set(again.values()) == {"cached"} and "a2[seed=5]" in again  # the next night starts at 6 seeds
