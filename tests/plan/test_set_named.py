"""A value a `--set` gave is named with its `--set` where a step refuses it."""

import pytest

from flows.language.errors import PipelineInvalid
from flows.plan.build import build
from tests.support.files import write

PIPE = """\
    name: s
    params: {steps: 10}
    steps:
      digits: {uses: data.digits}
      train:
        uses: train.model
        with: {data: "${digits.dataset}", model: cnn-small, steps: "${params.steps}"}
    """


@pytest.mark.parametrize(
    "given, said",
    [
        ("abc", "expects an integer, got a string ('abc') (from ${params.steps}, set by --set steps=abc)"),
        ("-3", "steps must be at least 0; got -3 (from ${params.steps}, set by --set steps=-3)"),
    ],
)
def test_a_refused_value_names_the_set_that_gave_it(tmp_path, given, said):
    path = write(tmp_path, PIPE)
    with pytest.raises(PipelineInvalid) as e:
        build(path, sets=[f"steps={given}"])
    assert said in str(e.value)


def test_a_refused_value_written_in_the_file_names_the_param_only(tmp_path):
    path = write(tmp_path, PIPE.replace("{steps: 10}", "{steps: abc}"))
    with pytest.raises(PipelineInvalid) as e:
        build(path)
    assert "(from ${params.steps})" in str(e.value) and "--set" not in str(e.value)
