"""benchmarks/startup.py: every phase it times names a function the engine has (a renamed one would
silently drop out of the table), and the table sums a phase that ran many times."""

import importlib
import sys

from tests.support.benchmarks import load

startup = load("startup")


def test_every_timed_phase_names_a_function_of_the_engine():
    missing = []
    for _group, module, attr, label in startup.PHASES:
        owner = importlib.import_module(module)
        for part in attr.split("."):
            owner = getattr(owner, part, None)
        if not callable(owner):
            missing.append(f"{module}.{attr} ({label})")
    assert not missing, f"phases that no longer exist: {missing}"
    assert {g for g, *_ in startup.PHASES} == {"planning", "validation", "server contact", "tracking", "the flow"}


def test_a_wrapped_function_is_timed_each_call_and_the_table_sums_the_calls(capsys, monkeypatch):
    import flows.execute.prefect_view as view

    calls = []
    monkeypatch.setattr(view, "flush", lambda timeout=10.0: calls.append(timeout))
    records: list = []
    startup._wrap(records, "the flow", "flows.execute.prefect_view", "flush", "logs flushed")
    view.flush(1.0)
    view.flush(2.0)
    assert calls == [1.0, 2.0] and [r[:2] for r in records] == [("the flow", "logs flushed")] * 2
    startup.print_phases("t", [[("g", "p", 0.25, 0.125), ("g", "p", 0.5, 0.25)], [("g", "p", 0.5, 0.5)]])
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row == ["g", "p", "0.625s", "0.438s"]  # per run summed (0.75/0.375, 0.5/0.5), then the median


def test_the_user_pipeline_it_times_is_valid_and_names_the_users_own_model_and_step(tmp_path, monkeypatch):
    """`--only user` times a pipeline of a user's own: it must pass `check` (a broken one would time
    an error), with a step of the user's module and a model built by the user's factory."""
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.chdir(tmp_path)  # the module next to the pipeline is importable, as for a user
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mylab_bench.py").write_text(startup.USER_MODULE)
    (tmp_path / "mylab.yaml").write_text(startup.USER_PIPELINE)
    result = CliRunner().invoke(app, ["check", "mylab.yaml"])
    assert result.exit_code == 0, result.output
    assert "3 steps, 6 step runs" in result.output
    assert "uses: mylab_bench:size" in startup.USER_PIPELINE and 'model: "mylab_bench:build"' in startup.USER_PIPELINE
    sys.modules.pop("mylab_bench", None)
