"""A step's cache key follows the code it runs: an edit to a helper it imports invalidates it, an
edit elsewhere in the same package does not (a report change must not retrain every model)."""

import hashlib
import json
import sys
import textwrap

import pytest

from components import code_version


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    pkg = tmp_path / "cvplug"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "helper.py": "SCALE = 2\n",
        "deep.py": "OFFSET = 1\n",
        "sub/__init__.py": "",
        "sub/comp.py": textwrap.dedent("""\
            from ..helper import SCALE
            def step(x):
                from cvplug import deep  # imported inside the function still counts
                return x * SCALE + deep.OFFSET
            """),
        "report.py": "def render():\n    return 'v1'\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for name in [m for m in sys.modules if m == "cvplug" or m.startswith("cvplug.")]:
        del sys.modules[name]


def digest(name):
    return code_version.digest(name)  # nothing forgotten in between: an edit is seen by its file's stat


@pytest.mark.parametrize("edited", ["helper.py", "deep.py", "sub/comp.py", "sub/__init__.py", "__init__.py"])
def test_an_edit_to_code_the_component_runs_changes_its_version(plugin, edited):
    before = digest("cvplug.sub.comp")
    (plugin / edited).write_text((plugin / edited).read_text() + "EDITED = 1\n")
    assert digest("cvplug.sub.comp") != before


def test_comments_and_formatting_keep_the_version(plugin):
    before = digest("cvplug.sub.comp")
    comp = plugin / "sub" / "comp.py"
    original = comp.read_text()
    reformatted = original.replace("return x * SCALE + deep.OFFSET", "return (x * SCALE\n            + deep.OFFSET)")
    comp.write_text("# a comment\n\n" + reformatted + "\n\n# trailing\n")
    assert digest("cvplug.sub.comp") == before
    comp.write_text(original.replace("SCALE + deep", "SCALE - deep"))
    assert digest("cvplug.sub.comp") != before


def test_an_edit_to_an_unrelated_module_of_the_package_keeps_it(plugin):
    before = digest("cvplug.sub.comp")
    (plugin / "report.py").write_text("def render():\n    return 'v2'\n")
    assert digest("cvplug.sub.comp") == before
    assert digest("cvplug.report") != digest("cvplug.sub.comp")


def test_shipped_training_does_not_depend_on_the_report_code():
    import components.library  # noqa: F401 - registers the shipped components
    from components import get

    train, report = get("train.model"), get("report.scorecard")
    assert train.code_version != report.code_version


def test_a_new_process_reads_the_stored_parse_and_gets_the_same_version(plugin, tmp_path, monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(code_version, "_STORE", code_version._Store())
    code_version.forget()
    parsed = digest("cvplug.sub.comp")
    assert list((tmp_path / "cache").glob("code-trees-py*.json"))
    code_version.forget()  # as a new process: only the stored parses are known
    monkeypatch.setattr(code_version, "_STORE", code_version._Store())
    monkeypatch.setattr(code_version.ast, "dump", None)  # nothing is parsed again
    assert digest("cvplug.sub.comp") == parsed
    assert code_version.imported_packages("cvplug.sub.comp") == frozenset()


def test_a_corrupt_store_is_ignored(plugin, tmp_path, monkeypatch):
    monkeypatch.setenv("BOTTLENECKS_CACHE", str(tmp_path / "cache"))
    before = digest("cvplug.sub.comp")
    (tmp_path / "cache").mkdir()
    code_version._Store().path().write_text('{"not": "a parse"')
    code_version.forget()
    monkeypatch.setattr(code_version, "_STORE", code_version._Store())
    assert digest("cvplug.sub.comp") == before
    entries = {h: ["00" * 32, [["one", 2, "three"]]] for h in _hashes(plugin)}  # valid JSON, wrong shapes
    code_version._Store().path().write_text(json.dumps(entries))
    code_version.forget()
    monkeypatch.setattr(code_version, "_STORE", code_version._Store())
    assert digest("cvplug.sub.comp") == before


def _hashes(plugin) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in plugin.rglob("*.py")]
