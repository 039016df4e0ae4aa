"""The short chaos run (benchmarks/chaos.py): with the warm zygote and the folder's Prefect server
on, a worker and then the run's process are killed (SIGKILL, seeded moments) and the pipeline is
rerun: outputs and metrics equal an uninterrupted run's, nothing finished is computed again, no
run is left RUNNING, no lock held, no process left behind. Then three runs of one pipeline
started together under load compute every step once and all finish with the same outputs."""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path

import pytest

from benchmarks import chaos

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project():
    root = Path(tempfile.mkdtemp(prefix="bn-chaos-", dir="/tmp"))  # a socket path must stay short
    project = chaos.Project(root, "p", workers=2)
    try:
        yield project, chaos.reference_run(project)
    finally:
        project.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_the_reference_run_is_what_the_pipeline_computes(project):
    _, reference = project
    # source = 10 * part, double = 10 * part + 2 * source, join = 2 * sum(double), after = 1000 + 2 * join
    assert reference["outputs"] == {
        "source[part=1]": {"value": 10.0},
        "source[part=2]": {"value": 20.0},
        "source[part=3]": {"value": 30.0},
        "double[part=1]": {"value": 30.0},
        "double[part=2]": {"value": 60.0},
        "double[part=3]": {"value": 90.0},
        "join": {"value": 360.0},
        "after": {"value": 1720.0},
    }
    assert reference["metrics"] == {k: v["value"] for k, v in reference["outputs"].items()}


@pytest.mark.parametrize("salt, participant", [(2, "worker"), (3, "run")])
def test_a_killed_participant_costs_nothing_but_the_step_in_flight(project, salt, participant):
    proj, reference = project
    result = chaos.chaos_round(proj, participant, salt, reference, random.Random(salt))
    assert result["killed"], f"no {participant} to kill was found while the run ran"
    assert result["problems"] == []


def test_three_runs_started_together_under_load_compute_each_step_once(project):
    proj, reference = project
    # one busy process: the suite's other worker is load too
    assert chaos.concurrent_round(proj, 10_000, reference, runs=3, load=1) == []
