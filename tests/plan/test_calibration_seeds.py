"""Seeds that chose a pipeline's design never give its verdicts: a step run on a declared
calibration seed is refused where the seed is written, and the sequential design skips them."""

import pytest

from flows.language.errors import PipelineInvalid
from flows.plan import seeds as seed_axes
from flows.plan.build import build
from tests.support.files import write

C = "tests.support.engine_components"
PIPE = f"""\
    name: calibrated
    params: {{seeds: [0, 1, 2]}}
    settings: {{calibration_seeds: [100, 101, 102]}}
    steps:
      sum:
        uses: {C}:total
        with: {{values: [1, 2], scale: 2.0}}
        matrix: {{seed: "${{params.seeds}}"}}
    """


def test_a_verdict_seed_among_the_calibration_seeds_is_refused_at_the_seed_axis(tmp_path):
    path = write(tmp_path, PIPE)
    assert len(build(path).instances) == 3
    with pytest.raises(PipelineInvalid) as e:
        build(path, sets=["seeds=[2, 101]"])
    text = str(e.value)
    assert f"{path}:8:21:" in text  # at the seed axis
    assert "step 'sum' runs seed 101, declared in settings.calibration_seeds (100, 101, 102)" in text


def test_a_seed_parameter_counts_too(tmp_path):
    path = write(
        tmp_path, PIPE.replace('matrix: {seed: "${params.seeds}"}', "").replace("scale: 2.0}", "scale: 2.0, seed: 100}")
    )
    with pytest.raises(PipelineInvalid, match="step 'sum' runs seed 100"):
        build(path)


def test_more_seeds_for_an_open_claim_skip_the_calibration_seeds():
    axis = seed_axes.SeedAxis("m", "m", "seed", "seeds", [97, 98, 99], skip=frozenset({100, 101, 102}))
    assert axis.more(6) == [97, 98, 99, 103, 104, 105]
    assert seed_axes.SeedAxis("m", "m", "seed", "seeds", [0, 1, 2]).more(5) == [0, 1, 2, 3, 4]


def test_calibration_seeds_must_be_whole_numbers(tmp_path):
    path = write(tmp_path, PIPE.replace("[100, 101, 102]", "[100, a]"))
    with pytest.raises(PipelineInvalid, match=r"settings.calibration_seeds must be a list of whole numbers"):
        build(path)
