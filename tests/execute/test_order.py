"""Submission order for a first-come-first-served pool: longest branches first, no worker left waiting."""

from pathlib import Path

import pytest

from flows.execute.order import critical_path, estimate, fifo_makespan, submission_order
from flows.plan.build import build

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"

# A long chain declared last (its steps at the end of the file) and short independent work first:
# in file (level) order the long chain starts late and its consumer waits inside a worker.
CHAIN = """
name: chain
steps:
  a: {uses: enginetest.numbers, with: {n: 1}}
  b: {uses: enginetest.numbers, with: {n: 2}}
  c: {uses: enginetest.numbers, with: {n: 3}}
  d: {uses: enginetest.numbers, with: {n: 4}}
  long: {uses: enginetest.numbers, with: {n: 100}}
  after_long: {uses: enginetest.total, with: {values: "${long.values}"}}
  after_a: {uses: enginetest.total, with: {values: "${a.values}"}}
"""
COST = {"a": 10, "b": 10, "c": 10, "d": 10, "long": 100, "after_long": 50, "after_a": 1}


def cost(inst):
    return COST[inst.step.id]


@pytest.fixture
def chain(tmp_path):
    import tests.support.engine_components  # noqa: F401  registers enginetest.*

    path = tmp_path / "chain.yaml"
    path.write_text(CHAIN)
    return build(path)


def test_the_longest_branch_starts_first_and_its_consumer_does_not_block_a_worker(chain):
    order = submission_order(chain, 2, cost)
    assert order[0] == "long"
    assert order.index("after_long") == len(order) - 1 or order.index("after_long") > order.index("d")
    assert critical_path(chain, cost)["long"] == 150
    level = list(chain.instances)
    assert fifo_makespan(chain, order, 2, cost) == 150  # the chain's length: nothing waits on it
    assert fifo_makespan(chain, level, 2, cost) > 150


def test_order_is_topological_and_complete_for_every_shipped_pipeline():
    import components.library  # noqa: F401

    for path in sorted(PIPELINES.glob("*.yaml")):
        plan = build(path)
        order = submission_order(plan, int(plan.settings.workers))
        assert sorted(order) == sorted(plan.instances), path.name
        seen = set()
        for iid in order:
            assert set(plan.instances[iid].deps) <= seen, f"{path.name}: {iid} before its inputs"
            seen.add(iid)


def test_the_comparison_starts_translation_training_before_the_short_recall_runs():
    import components.library  # noqa: F401

    plan = build(PIPELINES / "four_bottlenecks.yaml")
    order = submission_order(plan, 2)
    first_mt = min(order.index(i) for i in order if i.startswith(("mt[", "mt_transformer[", "mt_bahdanau[")))
    assert first_mt < order.index("bias15[lag=15,forget_bias=0,seed=0]")
    assert fifo_makespan(plan, order, 2) <= fifo_makespan(plan, list(plan.instances), 2)
    assert estimate(plan.instances["mt_transformer[seed=0]"]) > estimate(plan.instances["bleu[seed=0]"])
