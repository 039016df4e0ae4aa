"""Which library versions a component's cache key holds: torch and numpy always, the known
libraries its code imports, what it declares; read from package metadata once per process."""

from importlib import metadata

import pytest

from components import Context, component
from components.registry import ComponentError, get
from flows.plan import _libraries
from flows.plan._libraries import libraries

H = "tests.plan.test_libraries"


@component("librariestest.tokenise", outputs=["n"], depends_on=["PyYAML", "no-such-distribution-xyz"])
def tokenise(ctx: Context, *, text: str = "a b") -> dict:
    """Count words (the declared libraries stand for a tokeniser read through a plugin)."""
    return {"n": len(text.split())}


def test_a_trainer_depends_on_what_its_code_imports_and_not_on_the_engine():
    names = set(libraries(get("train.model")))
    assert {"torch", "numpy", "sacrebleu", "tokenizers", "datasets"} <= names
    assert not names & {"prefect", "mlflow", "pydantic", "rich"}
    assert set(libraries(get("tests.support.engine_components:numbers"))) == {"torch", "numpy"}


def test_declared_libraries_are_added_with_their_versions_or_none():
    found = libraries(get(f"{H}:tokenise"))
    assert found["PyYAML"] == metadata.version("PyYAML") and found["no-such-distribution-xyz"] is None
    assert {"torch", "numpy"} <= set(found)


def test_depends_on_must_be_a_list_of_names():
    with pytest.raises(ComponentError, match=r"depends_on= takes a list of distribution names .* got 'torch'"):
        component("librariestest.bad", depends_on="torch")


def test_versions_are_read_once_per_process(monkeypatch):
    calls = []
    monkeypatch.setattr(_libraries, "_VERSIONS", {})
    monkeypatch.setattr(metadata, "version", lambda name: calls.append(name) or "1.2.3")
    assert _libraries.version("numpy") == _libraries.version("numpy") == "1.2.3"
    assert calls == ["numpy"]
    monkeypatch.setattr(_libraries, "_READ_BY", [-1])  # as in a forked command: read again
    _libraries.version("numpy")
    assert calls == ["numpy", "numpy"]
