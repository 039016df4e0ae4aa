"""Every code a step runs is in its key: a model factory of the user's (``mymodels:build_mlp``),
the modules of the user's that it imports, and a user's component's own imports of other modules
beside it, each from a folder outside the repository. ``plan``'s why names the file that changed."""

import sys

import pytest

from components import code_version
from flows.plan._keys import changes
from flows.plan._user_code import user_code
from flows.plan.build import build
from tests.support.files import write

FACTORY = """\
from torch import nn
from mylayers import WIDTH


def build_mlp(*, num_classes: int, **_):
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, WIDTH), nn.ReLU(), nn.Linear(WIDTH, num_classes))
    model.family = "mlp"
    return model
"""

STEPS = """\
from components import Context, component
from myhelpers import SCALE


@component("outside.count", outputs=["summary"])
def count(ctx: Context, *, n: int = 1) -> dict:
    return {"summary": {"n": n * SCALE}}
"""

PIPE = """\
    name: mine
    steps:
      digits: {uses: data.digits, with: {seed: 0}}
      train:
        uses: train.model
        matrix: {arch: ["mymodels:build_mlp", cnn-small]}
        with: {data: "${digits.dataset}", model: "${matrix.arch}", steps: 5}
      count: {uses: "mysteps:count"}
    """


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A user's folder outside the repository, the working folder (as the user runs from it)."""
    (tmp_path / "mymodels.py").write_text(FACTORY)
    (tmp_path / "mylayers.py").write_text("WIDTH = 32\n")
    (tmp_path / "mysteps.py").write_text(STEPS)
    (tmp_path / "myhelpers.py").write_text("SCALE = 2\n")
    write(tmp_path, PIPE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("mymodels", "mylayers", "mysteps", "myhelpers"):
        sys.modules.pop(name, None)


def plan(folder):
    return build(folder / "p.yaml")


MINE = "train[arch=mymodels:build_mlp]"
SHIPPED = "train[arch=cnn-small]"


@pytest.mark.parametrize("edited", ["mymodels.py", "mylayers.py"])
def test_an_edit_to_the_factory_or_a_module_it_imports_reruns_its_training_and_names_the_file(folder, edited):
    before = plan(folder)
    (folder / edited).write_text((folder / edited).read_text().replace("32", "48").replace("ReLU", "Tanh"))
    after = plan(folder)
    assert after.instances[MINE].key != before.instances[MINE].key
    why = changes(before.instances[MINE].parts, after.instances[MINE], after.instances, set())
    assert why == [f"model mymodels:build_mlp: {edited} changed"]
    # the shipped variant beside it, the data and the user's component keep theirs
    for iid in (SHIPPED, "digits", "count"):
        assert after.instances[iid].key == before.instances[iid].key


def test_a_comment_in_the_users_code_keeps_the_key(folder):
    before = plan(folder)
    (folder / "mylayers.py").write_text("# the width of the hidden layer\nWIDTH = 32  # as before\n")
    assert plan(folder).instances[MINE].key == before.instances[MINE].key


def test_an_edit_to_a_module_beside_a_users_component_reruns_it(folder):
    before = plan(folder)
    (folder / "myhelpers.py").write_text("SCALE = 3\n")
    after = plan(folder)
    assert after.instances["count"].key != before.instances["count"].key
    assert changes(before.instances["count"].parts, after.instances["count"], after.instances, set()) == [
        "code of outside.count changed: myhelpers.py changed"
    ]
    assert after.instances[MINE].key == before.instances[MINE].key


def test_a_module_the_users_code_imports_is_walked_but_an_installed_library_is_not(folder):
    files = code_version.closure("mymodels")
    assert set(files) == {"mymodels", "mylayers"}  # torch is a library: its version is a key part of its own
    assert "torch" in code_version.imported_packages("mymodels")


def test_a_callable_of_an_installed_library_counts_by_its_version(folder):
    from importlib import metadata

    found = user_code({"fn": "numpy:mean", "name": "cnn-small", "url": "http://example.org/x"})
    assert found == {"fn": {"library": f"numpy=={metadata.version('numpy')}"}}


def test_shipped_pipelines_name_no_users_code():
    """The shipped pipelines' keys hold no ``user_code`` part: upgrading kept their cache."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    p = build(repo / "pipelines" / "b2_gradients.yaml")
    assert all("user_code" not in inst.parts for inst in p.instances.values())


@pytest.mark.slow
def test_from_a_users_folder_an_edited_factory_is_planned_and_run_again(folder, home):
    """The must-show, through the commands a user types: run, edit the module the factory imports,
    `plan` names it, `run` trains that model again and serves the rest from the cache."""
    import os
    import subprocess
    from pathlib import Path

    (folder / "p.yaml").write_text(
        PIPE.replace("cnn-small]", "cnn-small]\n    ").replace('      count: {uses: "mysteps:count"}\n', "")
    )
    exe = Path(sys.executable).parent / "bottlenecks"
    env = {**os.environ, "BOTTLENECKS_EXECUTOR": "threads"}

    def cli(*args):
        done = subprocess.run([str(exe), *args, "p.yaml"], cwd=folder, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    assert "3 done" in cli("run")
    (folder / "mylayers.py").write_text("WIDTH = 48\n")
    shown = cli("plan")
    line = next(ln for ln in shown.splitlines() if "mymodels" in ln and "train" in ln)
    assert "will run" in line and "mylayers.py changed" in line
    assert "1 done, 2 cached" in cli("run")


def test_a_variant_a_users_plugin_registered_counts_by_the_plugins_code(folder):
    (folder / "myzoo.py").write_text(
        "from dataclasses import dataclass\n"
        "from components.models.registry import variant\n"
        "from mylayers import WIDTH\n\n"
        "@dataclass\nclass Cfg:\n    width: int = WIDTH\n\n"
        "@variant('zoo-user-small', builder=lambda cfg: None)\n"
        "def zoo_small():\n    return Cfg()\n"
    )
    import myzoo  # noqa: F401 - a plugin registers its variants when it is imported

    from components.models import registry

    try:
        found = user_code({"model": "zoo-user-small", "other": "cnn-small"})
        assert set(found) == {"model"}
        assert {"myzoo", "mylayers"} <= set(found["model"])
    finally:
        registry._VARIANTS.pop("zoo-user-small", None)
        sys.modules.pop("myzoo", None)
