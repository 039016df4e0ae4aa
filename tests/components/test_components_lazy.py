"""Components are validated from their source and imported only when a step runs."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components import declared, library
from components import registry as reg
from components.source_store import SourceStore

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "prefect", "mlflow", "matplotlib", "sklearn", "datasets")


def _python(code: str, cwd: Path = REPO, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line, returned parsed."""
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), **env}
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=full, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_library_lists_every_shipped_component():
    reg.load_builtin()
    shipped = {n: c.module for n, c in reg._REGISTRY.items() if c.module.startswith("components.")}
    assert shipped == library.MODULES


@pytest.mark.parametrize("name", sorted(library.MODULES))
def test_declaration_read_from_source_matches_the_imported_component(name):
    real = reg.registry()[name]
    module = library.MODULES[name]
    try:
        found = declared.read(module, reg._module_file(module), name)
    except declared.Unreadable:
        pytest.skip(f"{name}: its declaration needs the import (the registry imports it)")
    assert found is not None
    kw = found.keywords
    assert tuple(kw.get("outputs", ())) == real.outputs
    assert kw.get("version", "1") == real.version
    assert kw.get("bottleneck") == real.bottleneck and kw.get("promote", False) == real.promote
    assert found.doc == inspect.getdoc(real.fn) and kw.get("config") is real.config
    lazy = reg._declared_params(name, found)
    assert lazy.model_json_schema() == real.params_model.model_json_schema()
    assert reg._checked_summary(name, kw.get("summary"), lazy) == real.summary_keys  # what check resolves claims by
    assert reg._checked_references(name, kw.get("references"), lazy) == real.references
    assert {k: (f.annotation, f.default) for k, f in lazy.model_fields.items()} == {
        k: (f.annotation, f.default) for k, f in real.params_model.model_fields.items()
    }


def _said(module: str, path: Path, name: str) -> tuple:
    """What ``declared.read`` says of ``name``, comparable across processes."""
    try:
        found = declared.read(module, path, name)
    except declared.Unreadable as e:
        return ("unreadable", str(e))
    return (found.doc, repr(found.keywords), repr(found.fields))


def _as_a_new_process(monkeypatch) -> None:
    """Forget the skeletons this process read; the store's file stays, as for the next process."""
    monkeypatch.setattr(declared, "_STORE", SourceStore("declarations"))
    monkeypatch.setattr(declared, "_SKELETONS", {})


def test_a_new_process_reads_each_declaration_alike_from_the_kept_skeleton(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_CACHE", str(tmp_path))
    _as_a_new_process(monkeypatch)
    shipped = {name: (module, reg._module_file(module)) for name, module in library.MODULES.items()}
    first = {name: _said(module, path, name) for name, (module, path) in shipped.items()}  # parsed in full
    assert list(tmp_path.glob("declarations-py*.json"))
    _as_a_new_process(monkeypatch)
    monkeypatch.setattr(declared, "_strip", None)  # no module is parsed in full again
    assert {name: _said(module, path, name) for name, (module, path) in shipped.items()} == first


EDITED = """\
from components import Context, component
@component("edited.step", outputs=["n"])
def step(ctx: Context, *, n: int = {}) -> dict:
    '''Return n.'''
    return {{"n": n}}
"""


def test_an_edited_module_is_read_afresh_by_this_process_and_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_CACHE", str(tmp_path / "cache"))
    _as_a_new_process(monkeypatch)
    path = tmp_path / "edited_mod.py"
    path.write_text(EDITED.format(1))
    assert declared.read("edited_mod", path, "edited.step").fields == {"n": (int, 1)}
    path.write_text(EDITED.format(2))
    assert declared.read("edited_mod", path, "edited.step").fields == {"n": (int, 2)}
    _as_a_new_process(monkeypatch)
    assert declared.read("edited_mod", path, "edited.step").fields == {"n": (int, 2)}
    path.write_text(EDITED.format(1))  # back to a version read before: its own skeleton says 1
    assert declared.read("edited_mod", path, "edited.step").fields == {"n": (int, 1)}


def test_a_computed_default_falls_back_to_importing_the_module(tmp_path, monkeypatch):
    (tmp_path / "lazy_mod.py").write_text(
        "from components import Context, component\n"
        "LIMIT = 2 * 3\n"
        "@component('lazytest.computed', outputs=['n'])\n"
        "def computed(ctx: Context, *, n: int = LIMIT) -> dict:\n"
        "    '''Return n.'''\n"
        "    return {'n': n}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(library.MODULES, "lazytest.computed", "lazy_mod")
    with pytest.raises(declared.Unreadable, match="LIMIT is computed"):
        declared.read("lazy_mod", tmp_path / "lazy_mod.py", "lazytest.computed")
    comp = reg.get("lazytest.computed")
    assert comp.loaded and comp.parameters()["n"] == (int, 6, False)


@pytest.mark.slow
def test_check_and_plan_import_no_component_module_and_no_heavy_library(tmp_path):
    files = sorted(str(p) for p in (REPO / "pipelines").glob("*.yaml"))
    code = (
        "import json, sys\nfrom flows.cli import app\n"
        f"app(['check', *{files!r}], standalone_mode=False)\n"
        f"app(['plan', {files[0]!r}], standalone_mode=False)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    modules = _python(code, cwd=tmp_path, BOTTLENECKS_HOME=str(tmp_path / "home"))
    assert [m for m in HEAVY if m in modules] == []
    imported = {m for m in modules if m.startswith("components.")}
    assert imported.isdisjoint(set(library.MODULES.values()) - {"components.report.scorecard"})


def test_running_one_component_imports_its_module_and_no_other(tmp_path):
    (tmp_path / "one.yaml").write_text(
        "name: one\nsteps:\n  data:\n    uses: data.delayed_recall\n"
        "    with: {lag: 3, n_train: 20, n_valid: 5, n_test: 5}\n"
    )
    code = (
        "import json, sys\nfrom components import Context\nfrom flows.plan.build import build\n"
        "plan = build('one.yaml')\nbefore = 'components.data.recall' in sys.modules\n"
        "inst = plan.instances['data']\ninst.component(Context(work_dir='work'), **inst.params)\n"
        "print(json.dumps({'before': before, 'modules': sorted(sys.modules)}))"
    )
    out = _python(code, cwd=tmp_path)
    assert out["before"] is False
    loaded = set(out["modules"]) & set(library.MODULES.values())
    assert loaded == {"components.data.recall"}
    assert not any(
        m.startswith(("components.train", "components.probes", "components.models", "components.report"))
        for m in out["modules"]
    )
