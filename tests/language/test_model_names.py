"""A model a step builds is checked with the pipeline: a misspelt variant, a matrix value that
names no model and a factory that cannot be imported or has no such function are located errors
with exit status 2, before any step runs; the shipped names are read from source (no torch)."""

import textwrap

import pytest
from typer.testing import CliRunner

from components import model_names
from flows.cli import app
from tests.conftest import REPO


def check(tmp_path, body: str):
    path = tmp_path / "p.yaml"
    steps = textwrap.indent(textwrap.dedent(body), "  ")
    path.write_text("name: t\nsteps:\n  data: {uses: data.delayed_recall, with: {lag: 3, n_train: 64}}\n" + steps)
    result = CliRunner().invoke(app, ["check", str(path)])
    return path, result


def test_the_names_read_from_source_are_the_registered_variants():
    from components import models

    assert model_names.shipped() == frozenset(models.names())


def test_the_variant_table_in_the_docs_is_the_registry():
    """docs/models.md lists every variant (the error message sends users there) with its family."""
    import re

    from components import models

    doc = (REPO / "docs" / "models.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \| (.+) \|$", doc.split("## Variants", 1)[1].split("\n## ", 1)[0], re.M)
    assert [(n, f) for n, f, _ in rows] == [(n, models.describe(n)["family"]) for n in models.names()]
    assert all(d.strip() == models.describe(n)["doc"].replace("|", "/") for n, _, d in rows)


@pytest.mark.parametrize(
    "value, line",
    [
        ("lstmm-small", "unknown model 'lstmm-small' (did you mean 'lstm-small'?)"),
        ("transformer_small", "unknown model 'transformer_small' (did you mean 'transformer-small'?)"),
        ("resnet", "unknown model 'resnet'; the shipped variants"),
    ],
)
def test_a_misspelt_variant_is_a_located_error_with_its_likely_name(tmp_path, home, value, line):
    path, result = check(
        tmp_path, f'  train: {{uses: train.model, with: {{data: "${{data.dataset}}", model: {value}}}}}\n'
    )
    assert result.exit_code == 2, result.output
    (error,) = [x for x in result.output.splitlines() if x.startswith(str(path))]
    assert error.startswith(f"{path}:4:") and f"step 'train': parameter 'model' of train.model: {line}" in error
    assert error.endswith(
        "the shipped variants are listed in docs/models.md, or give a factory as package.module:function"
    )


def test_each_matrix_value_is_checked(tmp_path, home):
    path, result = check(
        tmp_path,
        textwrap.dedent("""\
          train:
            uses: train.model
            matrix: {arch: [lstm-small, grux-small, gru-small]}
            with: {data: "${data.dataset}", model: "${matrix.arch}"}
        """),
    )
    assert result.exit_code == 2
    errors = [x for x in result.output.splitlines() if x.startswith(str(path))]
    assert len(errors) == 1 and "unknown model 'grux-small' (did you mean 'gru-small'?)" in errors[0]


def test_the_timing_probe_checks_every_model_it_is_given(tmp_path, home):
    path, result = check(
        tmp_path, "  t: {uses: probe.timing, with: {models: {rnn: rnn-small, tf: transformr-small}}}\n"
    )
    assert result.exit_code == 2
    assert "parameter 'models.tf' of probe.timing: unknown model 'transformr-small' (did you mean" in result.output


def test_a_factory_is_imported_and_its_function_looked_up(tmp_path, home, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bnmodels_ok.py").write_text("def net(vocab_size: int = 4):\n    raise NotImplementedError\n")
    (tmp_path / "bnmodels_bad.py").write_text("import torch\nWIDTH = int('wide')\n")
    path, result = check(
        tmp_path,
        textwrap.dedent("""\
          a: {uses: train.model, with: {data: "${data.dataset}", model: "bnmodels_ok:net"}}
          b: {uses: train.model, with: {data: "${data.dataset}", model: "bnmodels_ok:nett"}}
          c: {uses: train.model, with: {data: "${data.dataset}", model: "bnmodels_bad:net"}}
        """),
    )
    assert result.exit_code == 2
    errors = [x.split(": ", 1)[1] for x in result.output.splitlines() if x.startswith(str(path))]
    assert errors == [
        "step 'b': parameter 'model' of train.model: model 'bnmodels_ok:nett': module 'bnmodels_ok' has no "
        "function 'nett' (did you mean 'net'?)",
        "step 'c': parameter 'model' of train.model: model 'bnmodels_bad:net': importing module 'bnmodels_bad' "
        f"raised ValueError: invalid literal for int() with base 10: 'wide' (at {tmp_path / 'bnmodels_bad.py'}:2)",
    ]


def test_a_factory_found_in_its_source_is_not_imported_by_check(tmp_path, home, monkeypatch):
    """`check` reads the factory's module (no torch import for a user's model); the step imports it."""
    import sys

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bnmodels_lazy.py").write_text(
        "import torch\n\ndef net(vocab_size: int = 4):\n    raise NotImplementedError\n"
    )
    path, result = check(
        tmp_path, 'a: {uses: train.model, with: {data: "${data.dataset}", model: "bnmodels_lazy:net"}}\n'
    )
    assert result.exit_code == 0, result.output
    assert "bnmodels_lazy" not in sys.modules
