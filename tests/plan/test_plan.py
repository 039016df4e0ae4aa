"""Planning: matrix expansion, how references bind, profiles, overrides and cache keys."""

import textwrap

from flows.language.refs import Ref
from flows.plan.build import build

C = "tests.support.engine_components"
PIPE = textwrap.dedent(f"""\
    name: plan-test
    params: {{n: 3, seeds: [0, 1]}}
    default_profile: quick
    profiles:
      quick: {{params: {{n: 2}}}}
      big: {{params: {{n: 10}}, steps: {{sum: {{with: {{scale: 3.0}}}}}}}}
      swap: {{steps: {{table: {{uses: {C}:total, with: {{values: [1, 2]}}}}}}}}
      gpu: {{settings: {{seed: 7, devices: [0]}}, steps: {{sum: {{resources: {{gpu: 1}}}}}}}}
    steps:
      nums:
        uses: {C}:numbers
        with: {{n: "${{params.n}}", offset: "${{matrix.offset}}"}}
        matrix: {{offset: [0, 100]}}
      sum:
        uses: {C}:total
        with: {{values: "${{nums.values}}", scale: 2.0}}
        matrix: {{offset: [0, 100], seed: "${{params.seeds}}"}}
      table:
        uses: {C}:collect
        with: {{totals: "${{sum.total}}"}}
      after:
        uses: {C}:numbers
        needs: [table]
    """)


def plan_of(tmp_path, **kw):
    path = tmp_path / "p.yaml"
    path.write_text(PIPE)
    return build(path, **kw)


def test_matrix_expands_with_readable_names(tmp_path):
    plan = plan_of(tmp_path)
    assert list(plan.instances) == [
        "nums[offset=0]",
        "nums[offset=100]",
        "sum[offset=0,seed=0]",
        "sum[offset=0,seed=1]",
        "sum[offset=100,seed=0]",
        "sum[offset=100,seed=1]",
        "table",
        "after",
    ]
    assert plan.instances["nums[offset=100]"].params == {"n": 2, "offset": 100}


def test_shared_axis_binds_element_wise_and_other_consumers_get_a_dict(tmp_path):
    plan = plan_of(tmp_path)
    ref = plan.instances["sum[offset=100,seed=1]"].params["values"]
    assert isinstance(ref, Ref) and ref.sources == {None: "nums[offset=100]"}
    table = plan.instances["table"].params["totals"]
    assert table.sources == {
        "offset=0,seed=0": "sum[offset=0,seed=0]",
        "offset=0,seed=1": "sum[offset=0,seed=1]",
        "offset=100,seed=0": "sum[offset=100,seed=0]",
        "offset=100,seed=1": "sum[offset=100,seed=1]",
    }
    assert table.resolve({iid: {"total": i} for i, iid in enumerate(table.sources.values())}) == {
        "offset=0,seed=0": 0,
        "offset=0,seed=1": 1,
        "offset=100,seed=0": 2,
        "offset=100,seed=1": 3,
    }
    assert plan.instances["after"].deps == ["table"]


def test_profiles_and_overrides(tmp_path):
    assert plan_of(tmp_path).params["n"] == 2  # default profile
    big = plan_of(tmp_path, profile="big")
    assert big.params["n"] == 10 and big.instances["sum[offset=0,seed=0]"].params["scale"] == 3.0
    over = plan_of(tmp_path, profile="big", sets=["n=4", "sum.scale=0.5", "seeds=[7]"])
    assert over.instances["nums[offset=0]"].params["n"] == 4
    assert over.instances["sum[offset=0,seed=7]"].params["scale"] == 0.5


def test_changing_one_param_changes_only_that_step_and_its_dependents(tmp_path):
    base = plan_of(tmp_path)
    changed = plan_of(tmp_path, sets=["sum.scale=5"])
    same = [i for i in base.instances if base.instances[i].key == changed.instances[i].key]
    assert same == ["nums[offset=0]", "nums[offset=100]"]
    assert plan_of(tmp_path).instances["table"].key == base.instances["table"].key  # deterministic


def test_instances_differing_only_in_matrix_value_do_not_share_a_key(tmp_path):
    plan = plan_of(tmp_path)
    keys = {plan.instances[i].key for i in ("sum[offset=0,seed=0]", "sum[offset=0,seed=1]")}
    assert len(keys) == 2


def test_a_profile_can_swap_a_steps_component(tmp_path):
    plan = plan_of(tmp_path, profile="swap")
    inst = plan.instances["table"]
    assert inst.component.name == "enginetest.total" and inst.params == {"values": [1, 2]}
