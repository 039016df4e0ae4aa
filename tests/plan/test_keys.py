"""Cache keys stay what they were: a changed key invalidates every cached step run, so what a key
holds changes on purpose, never as a side effect of reorganising the planner. The component code
version and the library versions are held fixed here: they legitimately change with every edit to
a component's source and every upgrade."""

import pytest

from components.registry import Component
from flows.plan import _libraries
from flows.plan._keys import changes
from flows.plan.build import build
from tests.plan.test_plan import PIPE

# the first 16 hex digits of each key; changed on purpose when keys came to hold the library
# versions (torch and numpy for these components, fixed at "1.0" here)
KEYS = {
    "nums[offset=0]": "eb8115abd4c9abb8",
    "nums[offset=100]": "d0c4f97639e0378f",
    "sum[offset=0,seed=0]": "4fb76fa66bd49d78",  # on a GPU: its key records the device class
    "sum[offset=0,seed=1]": "851e12890e1767a1",
    "sum[offset=100,seed=0]": "37c39a73ce98787d",
    "sum[offset=100,seed=1]": "c29e6761319c90e3",
    "table": "2099ce62c2a96c4b",
    "after": "ec47b06e623972aa",
}
SPEC_HASH = "2e24dfb3d5adb476"


@pytest.fixture
def plan(tmp_path, monkeypatch):
    monkeypatch.setattr(Component, "code_version", property(lambda self: "fixed"))
    monkeypatch.setattr(_libraries, "version", lambda name: "1.0")
    path = tmp_path / "p.yaml"
    path.write_text(PIPE)
    return build(path, profile="gpu", sets=["sum.scale=0.5"])


def keys(plan) -> dict[str, str]:
    return {iid: inst.key[:16] for iid, inst in plan.instances.items()}


def test_cache_keys_are_stable(plan):
    assert plan.spec_hash == SPEC_HASH
    assert keys(plan) == KEYS


def rebuilt(tmp_path, **kw):
    return build(tmp_path / "p.yaml", profile="gpu", **kw)


def test_a_library_upgrade_changes_every_key_that_depends_on_it_and_is_named(plan, tmp_path, monkeypatch):
    monkeypatch.setattr(_libraries, "version", lambda name: "1.1" if name == "torch" else "1.0")
    after = rebuilt(tmp_path, sets=["sum.scale=0.5"])
    assert all(after.instances[i].key != inst.key for i, inst in plan.instances.items())
    nums = after.instances["nums[offset=0]"]
    assert changes(plan.instances["nums[offset=0]"].parts, nums, after.instances, set()) == ["torch 1.0 -> 1.1"]
    total = after.instances["sum[offset=0,seed=0]"]
    assert changes(plan.instances["sum[offset=0,seed=0]"].parts, total, after.instances, {"nums[offset=0]"}) == [
        "torch 1.0 -> 1.1",
        "input nums[offset=0] reruns",
    ]


def test_a_parameter_change_is_named_with_both_values_and_reaches_what_reads_it(plan, tmp_path):
    after = rebuilt(tmp_path, sets=["sum.scale=2.0"])
    assert keys(after)["nums[offset=0]"] == KEYS["nums[offset=0]"]
    total = after.instances["sum[offset=0,seed=1]"]
    assert changes(plan.instances["sum[offset=0,seed=1]"].parts, total, after.instances, set()) == [
        "parameter scale 0.5 -> 2.0"
    ]
    table = after.instances["table"]
    said = changes(plan.instances["table"].parts, table, after.instances, {"sum[offset=0,seed=0]"})
    # the reference parameter itself is unchanged; past two inputs of a kind, a count
    assert said == ["input sum[offset=0,seed=0] reruns", "input sum[offset=0,seed=1] and 2 more changed"]


def test_code_seed_and_library_sets_are_named(plan):
    inst = plan.instances["nums[offset=0]"]
    inst.parts = {**inst.parts, "code": "1+def"}
    old = {**inst.parts, "code": "1+abc", "seed": 0, "libraries": {"torch": "1.0"}, "params": {"n": 3}}
    assert changes(old, inst, plan.instances, set()) == [
        "code of enginetest.numbers changed",  # offset: written now, as its default: no change
        "settings.seed 0 -> 7",
        "depends on numpy now (1.0)",
    ]
    versioned = {**inst.parts, "code": "1+abc"}
    inst.parts = {**inst.parts, "code": "2+abc"}
    assert changes(versioned, inst, plan.instances, set()) == ["enginetest.numbers version 1 -> 2"]
    assert changes({k: v for k, v in inst.parts.items() if k != "libraries"}, inst, plan.instances, set()) == [
        "library versions were not recorded then"
    ]


def test_a_parameter_read_against_its_default_when_written_on_one_side_only(plan):
    inst = plan.instances["nums[offset=0]"]  # n: 3 and offset: 0 written; both have defaults
    old = {**inst.parts, "params": {"n": 3, "offset": 5, "gone": 1}}
    inst.parts = {**inst.parts, "params": {"n": 3}}
    assert changes(old, inst, plan.instances, set()) == [
        "parameter gone removed (was 1)",
        "parameter offset 5 -> 0 (default)",
    ]
