"""``@component(config=...)``: a component's parameters as one typed pydantic class, passed validated."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from components import Context, declared, library
from components import registry as reg

REPO = Path(__file__).resolve().parents[2]

CONFIG = '''
from pydantic import BaseModel, ConfigDict


class ScaleConfig(BaseModel):
    """Args:
        factor: what x is multiplied by."""

    model_config = ConfigDict(extra="forbid")

    x: float
    factor: float = 2.0
'''

PLUGIN = '''
from components import Context, component
from cfg_plugin_config import ScaleConfig


@component("cfgtest.scale", outputs=["y"], config=ScaleConfig)
def scale(ctx: Context, cfg: ScaleConfig) -> dict:
    """Multiply x."""
    return {"y": cfg.x * cfg.factor, "kind": type(cfg).__mro__[1].__name__}
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A user's component module with its config class in a module of its own."""
    (tmp_path / "cfg_plugin_config.py").write_text(CONFIG)
    (tmp_path / "cfg_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(library.MODULES, "cfgtest.scale", "cfg_plugin")
    yield tmp_path / "cfg_plugin.py"
    reg._REGISTRY.pop("cfgtest.scale", None)
    reg._DECLARED.pop("cfgtest.scale", None)
    for module in ("cfg_plugin", "cfg_plugin_config"):
        sys.modules.pop(module, None)


def test_the_function_gets_the_validated_config_instance(plugin, tmp_path):
    comp = reg.get("cfgtest.scale")
    out = comp(Context(tmp_path / "w"), x=3)
    assert out["y"] == 6.0 and out["kind"] == "ScaleConfig"
    params = comp.parameters()
    assert params["x"][::2] == (float, True) and params["factor"] == (float, 2.0, False)
    assert "Multiply x." in comp.doc and "factor: what x is multiplied by." in comp.doc


def test_unknown_and_mistyped_keys_are_errors_as_for_keyword_parameters(plugin, tmp_path):
    comp = reg.get("cfgtest.scale")
    with pytest.raises(reg.ComponentError, match="(?s)validation error for Params_cfgtest_scale.*factr"):
        comp(Context(tmp_path / "w"), x=3, factr=2)
    with pytest.raises(reg.ComponentError, match="(?s)factor.*valid number"):
        comp(Context(tmp_path / "w"), x=3, factor="lots")


def test_the_declaration_read_from_source_is_the_imported_one(plugin):
    found = declared.read("cfg_plugin", plugin, "cfgtest.scale")
    lazy = reg.get("cfgtest.scale")
    assert not lazy.loaded and lazy.config is found.keywords["config"]
    assert set(found.fields) == {"x", "factor"}
    real = reg._imported_component("cfgtest.scale", "cfg_plugin")
    assert real.loaded and real.doc == lazy.doc
    assert real.params_model.model_json_schema() == lazy.params_model.model_json_schema()


def test_a_config_class_defined_in_the_component_module_is_read_by_importing_it(plugin):
    plugin.write_text(CONFIG + PLUGIN.replace("from cfg_plugin_config import ScaleConfig", ""))
    with pytest.raises(declared.Unreadable, match="ScaleConfig is defined by running the module"):
        declared.read("cfg_plugin", plugin, "cfgtest.scale")
    comp = reg.get("cfgtest.scale")
    assert comp.loaded and comp.config.__name__ == "ScaleConfig" and "factor" in comp.parameters()


def test_a_config_component_takes_ctx_and_the_config_only(tmp_path, monkeypatch):
    from pydantic import BaseModel

    class Cfg(BaseModel):
        n: int = 1

    with pytest.raises(reg.ComponentError, match=r"with config=Cfg, the function takes \(ctx, cfg: Cfg\)"):
        reg.component("cfgtest.bad", config=Cfg)(lambda ctx, cfg, extra=1: {})
    with pytest.raises(reg.ComponentError, match="config= takes a pydantic BaseModel class"):
        reg.component("cfgtest.bad", config=dict)(lambda ctx, cfg: {})
    assert "cfgtest.bad" not in reg._REGISTRY


def test_the_config_class_forbids_unknown_keys_even_if_it_did_not(tmp_path):
    from pydantic import BaseModel

    class Loose(BaseModel):
        n: int = 1

    @reg.component("cfgtest.loose", config=Loose)
    def loose(ctx, cfg: Loose) -> dict:
        return {"n": cfg.n}

    try:
        with pytest.raises(reg.ComponentError, match="Extra inputs are not permitted"):
            loose.component(Context(tmp_path), m=2)
        assert loose.component(Context(tmp_path), n=2) == {"n": 2}
        assert loose(Context(tmp_path), Loose(n=3)) == {"n": 3}  # still a plain function
    finally:
        reg._REGISTRY.pop("cfgtest.loose", None)


def test_reading_the_trainer_config_imports_no_torch():
    code = textwrap.dedent("""
        import sys
        from components import registry as reg
        comp = reg.get("train.model")
        assert not comp.loaded and "steps" in comp.parameters(), comp
        heavy = [m for m in ("torch", "components.train.trainer") if m in sys.modules]
        assert not heavy, heavy
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, timeout=120)
