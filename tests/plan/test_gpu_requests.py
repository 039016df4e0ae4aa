"""A step asks for several GPUs (`resources: {gpu: N}` or `{gpu: all}`): check and plan place it
on the offered GPUs or refuse it with a located message, and its cache key records how many GPUs
it holds (over one), never which."""

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.language.errors import PipelineInvalid
from flows.plan.build import build
from tests.support.files import write

C = "tests.support.engine_components"
PIPE = f"""\
name: gpus
settings: {{devices: DEVICES}}
steps:
  t:
    uses: "{C}:whoami"
    resources: {{gpu: ASK}}
"""


def planned(tmp_path, ask, devices="[0, 1, 2]"):
    return build(write(tmp_path, PIPE.replace("DEVICES", devices).replace("ASK", str(ask))))


def refusal(tmp_path, ask, devices="[0, 1, 2]") -> str:
    with pytest.raises(PipelineInvalid) as e:
        planned(tmp_path, ask, devices)
    return " ".join(str(err) for err in e.value.errors)


def test_a_step_is_placed_on_the_gpus_it_asks_for_and_all_is_every_offered_gpu(tmp_path):
    assert planned(tmp_path, 2).instances["t"].gpu == 2
    assert planned(tmp_path, "all").instances["t"].gpu == 3
    assert planned(tmp_path, "all", "[4, 7]").instances["t"].gpu == 2
    assert planned(tmp_path, "all", "none").instances["t"].gpu == 0  # all of none: the step runs on a CPU


def test_more_gpus_than_offered_is_refused_where_the_request_is_written(tmp_path):
    path = tmp_path / "p.yaml"
    assert refusal(tmp_path, 4) == (
        f"{path}:6:16: step t asks for gpu: 4 but this cluster offers only 3 (devices: [0, 1, 2]); "
        "set settings.devices, run on a GPU machine, or ask for at most gpu: 3 (or gpu: all)"
    )


@pytest.mark.parametrize("ask", ["-1", "two", "1.5", "true"])
def test_a_gpu_count_that_is_no_count_is_refused_with_what_is_allowed(tmp_path, ask):
    message = refusal(tmp_path, ask)
    assert f"{tmp_path / 'p.yaml'}:6:16: step 't': resources.gpu must be a number of GPUs (0, 1, 2, ...)" in message
    assert "or all (every GPU the run is offered)" in message


def test_check_exits_2_for_too_many_gpus(tmp_path):
    path = write(tmp_path, PIPE.replace("DEVICES", "[0, 1, 2]").replace("ASK", "4"))
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 2, out.output
    assert "step t asks for gpu: 4 but this cluster offers only 3" in " ".join(out.output.split())


def test_one_gpu_keeps_its_key_and_several_record_only_the_count(tmp_path):
    key = lambda ask, devices="[0, 1, 2]": planned(tmp_path, ask, devices).instances["t"]  # noqa: E731
    one = key(1)
    assert {k: v for k, v in one.parts.items() if k in ("device", "gpus")} == {"device": "cuda"}
    assert one.key == key(1, "[5]").key  # neither which GPU nor how many are offered
    two = key(2)
    assert two.parts["device"] == "cuda" and two.parts["gpus"] == 2
    assert two.key != one.key  # several GPUs reduce in another order: their results are another entry
    assert two.key == key(2, "[4, 6]").key == key("all", "[4, 6]").key


def test_plan_shows_how_many_gpus_each_step_holds(tmp_path, home):
    import json

    path = write(tmp_path, PIPE.replace("DEVICES", "[0, 1, 2]").replace("ASK", "all"))
    out = CliRunner().invoke(app, ["plan", str(path), "--json"])
    assert out.exit_code == 0, out.output
    assert [(row["id"], row["gpu"]) for row in json.loads(out.output)] == [("t", 3)]
    table = CliRunner().invoke(app, ["plan", str(path)]).output
    header = next(line for line in table.splitlines() if "step run" in line)
    row = next(line for line in table.splitlines() if "whoami" in line or "enginetest" in line)
    assert [c.strip() for c in header.split("┃")][3:5] == ["after", "gpu"]
    assert [c.strip() for c in row.split("│")][4] == "3"


def test_the_json_schema_accepts_what_check_accepts():
    import jsonschema
    import yaml

    from flows.language.schema import pipeline_schema

    validator = jsonschema.Draft202012Validator(pipeline_schema())
    text = PIPE.replace("DEVICES", "[0, 1, 2]").replace(f'"{C}:whoami"', "data.adding")
    assert [
        ask for ask in ("0", "2", "8", "all") if not validator.is_valid(yaml.safe_load(text.replace("ASK", ask)))
    ] == []
    assert [ask for ask in ("-1", "two", "1.5") if validator.is_valid(yaml.safe_load(text.replace("ASK", ask)))] == []


USER_MODULE = """
from components import Context, component


@component("outside.fit", outputs=["summary"], resources={"gpu": 1})
def fit(ctx: Context, *, seed: int = 0) -> dict:
    return {"summary": {"device": ctx.device}}


@component("outside.plot", outputs=["summary"])
def plot(ctx: Context) -> dict:
    return {"summary": {}}
"""


def test_a_users_component_gets_a_gpu_by_declaring_it_as_the_shipped_trainer_does(tmp_path, monkeypatch):
    """From outside the repository: the engine reads the declaration, not the component's name."""
    (tmp_path / "outside_steps.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    text = """\
        name: outside
        settings: {devices: DEVICES}
        steps:
          fit: {uses: "outside_steps:fit", matrix: {seed: [0, 1]}, with: {seed: "${matrix.seed}"}}
          plot: {uses: "outside_steps:plot"}
          train: {uses: train.model, with: {data: "x", model: rnn-small}}
        """
    plan = build(write(tmp_path, text.replace("DEVICES", "[0, 1]")))
    assert [plan.instances[f"fit[seed={s}]"].gpu for s in (0, 1)] == [1, 1]
    assert plan.instances["plot"].gpu == 0
    assert plan.instances["train"].gpu == 1  # the shipped trainer declares the same
    cpu = build(write(tmp_path, text.replace("DEVICES", "none")))
    assert [i.gpu for i in cpu.instances.values()] == [0, 0, 0, 0]  # a declared GPU where none is offered: none


def test_a_malformed_resources_declaration_is_refused_with_what_it_takes():
    from components.registry import ComponentError, component

    with pytest.raises(ComponentError, match=r"resources= takes \{'gpu': N\}.*got \{'gpu': -1\}"):
        component("outside.bad", outputs=["summary"], resources={"gpu": -1})
    with pytest.raises(ComponentError, match="got {'cpu': 2}"):
        component("outside.bad2", outputs=["summary"], resources={"cpu": 2})
