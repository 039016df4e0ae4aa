"""A user's module that cannot be imported (a syntax error, a missing dependency, an exception in
its own top-level code, a bad registration) is refused by `check` and `run` as one located line
with exit status 2, naming the module, the error and the line of the user's file, never a
traceback through the engine. The same holds for entry-point plugins and model factories."""

import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components import registry as reg
from flows.cli import app

REPO = Path(__file__).resolve().parents[2]

MODULES = {
    "syntax": ("def f(:\n    pass\n", "has a syntax error at {file}:1:7: invalid syntax; fix it and check again"),
    "indent": ("def f():\npass\n", "has a syntax error at {file}:2:1: expected an indented block"),
    "dependency": (
        "import numpy\nimport not_installed_anywhere_xyz\n",
        "imports 'not_installed_anywhere_xyz', which is not installed (at {file}:2): "
        "No module named 'not_installed_anywhere_xyz'",
    ),
    "raises": (
        "SETTINGS = {}\nSIZE = SETTINGS['size']\n",
        "raised KeyError: 'size' (at {file}:2)",
    ),
    "registration": (
        "from components import component\n\n@component('mine.f')\ndef f(ctx, *, n=3):\n    return {}\n",
        "raised ComponentError: component 'mine.f': parameter 'n' needs a type annotation (at {file}:3)",
    ),
}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # modules next to the pipeline are importable, as for a user
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("bnplug_")]:
        del sys.modules[name]


@pytest.mark.parametrize("case", sorted(MODULES))
def test_a_broken_module_is_one_located_line(case, folder, home):
    source, expected = MODULES[case]
    module = f"bnplug_{case}"
    (folder / f"{module}.py").write_text(source)
    path = folder / "p.yaml"
    path.write_text(f"name: t\nsteps:\n  a: {{uses: '{module}:f'}}\n")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2, result.output
    want = expected.format(file=folder / f"{module}.py")
    assert f"{path}:3:14: step 'a': cannot load '{module}:f': module '{module}' {want}" in result.output or (
        f"{path}:3:14: step 'a': cannot load '{module}:f': importing module '{module}' {want}" in result.output
    ), result.output
    assert "Traceback" not in result.output


def test_a_missing_module_says_where_it_is_looked_for(folder, home):
    path = folder / "p.yaml"
    path.write_text("name: t\nsteps:\n  a: {uses: 'bnplug_absent:f'}\n")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert (
        f"{path}:3:14: step 'a': cannot load 'bnplug_absent:f': no module named 'bnplug_absent' (is it "
        "installed, or in the folder the command runs in?)"
    ) in result.output


def test_run_refuses_it_too_with_exit_status_2(tmp_path):
    (tmp_path / "bnplug_run.py").write_text("x = 1 / 0\n")
    path = tmp_path / "p.yaml"
    path.write_text("name: t\nsteps:\n  a: {uses: 'bnplug_run:f'}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "flows.cli", "run", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        # a bare environment, but no warm process left behind for the rest of the suite (tmp_path goes away)
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(REPO),
            "BOTTLENECKS_HOME": str(tmp_path / "home"),
            "BOTTLENECKS_DAEMON": "off",
        },
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        f"step 'a': cannot load 'bnplug_run:f': importing module 'bnplug_run' raised ZeroDivisionError: "
        f"division by zero (at {tmp_path / 'bnplug_run.py'}:1)"
    ) in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_a_broken_entry_point_plugin_names_the_plugin(monkeypatch, tmp_path):
    (tmp_path / "bnplug_ep.py").write_text("import torch\nraise RuntimeError('set MY_PLUGIN_TOKEN first')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = metadata.EntryPoint(name="myorg", value="bnplug_ep", group=reg.ENTRY_POINT_GROUP)
    real = metadata.entry_points
    monkeypatch.setattr(
        metadata, "entry_points", lambda **kw: [ep] if kw.get("group") == reg.ENTRY_POINT_GROUP else real(**kw)
    )
    with pytest.raises(reg.ComponentError) as err:
        reg.load_plugins()
    assert str(err.value) == (
        "plugin entry point 'myorg' (bnplug_ep) failed to load: importing module 'bnplug_ep' raised "
        f"RuntimeError: set MY_PLUGIN_TOKEN first (at {tmp_path / 'bnplug_ep.py'}:2)"
    )
    sys.modules.pop("bnplug_ep", None)


def test_a_broken_model_factory_names_its_line(folder):
    from components.train.build import TrainError, build_model

    (folder / "bnplug_model.py").write_text(
        textwrap.dedent("""\
        from torch import nn

        def net(vocab: int = 4, hidden: int = 8) -> nn.Module:
            return nn.Linear(hidden, vocab)

        DEFAULTS = net()(None)
        """)
    )
    with pytest.raises(TrainError) as err:
        build_model("bnplug_model:net")
    assert str(err.value).startswith("model 'bnplug_model:net': importing module 'bnplug_model' raised TypeError: ")
    assert str(err.value).endswith(f"(at {folder / 'bnplug_model.py'}:6)")


@pytest.fixture
def returning():
    """A component returning the given outputs, unregistered after the test."""
    names = []

    def make(name: str, outputs: list[str], value: dict):
        @reg.component(name, outputs=outputs)
        def f(ctx) -> dict:
            return value

        names.append(name)
        return reg.get(name)

    yield make
    for name in names:
        reg._REGISTRY.pop(name, None)


@pytest.mark.parametrize(
    "value, expected",
    [
        (
            {"arr": __import__("numpy").arange(3)},
            "me.np returned output 'arr' as a numpy.ndarray, which is not JSON: outputs are JSON values "
            "(numbers, strings, lists, dicts); return value.tolist() (or .item() for one number), or save it "
            "in ctx.work_dir and return the path",
        ),
        (
            {"arr": {"rows": [1, 2, __import__("numpy").int64(3)]}},
            "me.np returned output 'arr'['rows'][2] as a numpy.int64, which is not JSON",
        ),
        ({"arr": Path("x.txt")}, "me.np returned output 'arr' as a pathlib.PosixPath, which is not JSON"),
        ({"arr": {1, 2}}, "return sorted(values)"),
    ],
)
def test_an_output_that_is_not_json_names_where_and_what_to_return(value, expected, tmp_path, returning):
    from components import Context

    comp = returning("me.np", ["arr"], value)
    with pytest.raises(reg.ComponentError) as err:
        comp(Context(tmp_path / "w"))
    assert expected in str(err.value)


def test_a_missing_output_says_what_came_back(tmp_path, returning):
    from components import Context

    comp = returning("me.short", ["x", "z"], {"x": 1, "y": [0.5, None, {"k": "v"}]})
    with pytest.raises(reg.ComponentError) as err:
        comp(Context(tmp_path / "w"))
    assert str(err.value) == (
        "me.short did not return declared outputs ['z'] (it returned ['x', 'y']); return every name in "
        "outputs=[...] or declare fewer"
    )


def test_components_of_an_unknown_or_broken_name_is_an_error_not_a_traceback(folder, home):
    (folder / "bnplug_listed.py").write_text("import not_installed_anywhere_xyz\n")
    result = CliRunner().invoke(app, ["components", "trian.model"])
    assert result.exit_code == 2 and "unknown component 'trian.model' (did you mean 'train.model'?)" in result.output
    result = CliRunner().invoke(app, ["components", "bnplug_listed:f"])
    assert result.exit_code == 2
    assert "cannot load 'bnplug_listed:f': module 'bnplug_listed' imports 'not_installed_anywhere_xyz'" in result.output
    assert "Traceback" not in result.output
