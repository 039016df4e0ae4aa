"""Every shipped pipeline validates, under every one of its profiles."""

from pathlib import Path

import pytest
import yaml

from flows.plan.build import build

PIPELINES = sorted((Path(__file__).resolve().parents[2] / "pipelines").glob("*.yaml"))


def _cases():
    for path in PIPELINES:
        profiles = (yaml.safe_load(path.read_text()) or {}).get("profiles") or {}
        yield pytest.param(path, None, id=path.stem)
        for name in profiles:
            yield pytest.param(path, name, id=f"{path.stem}-{name}")


@pytest.mark.parametrize("path,profile", list(_cases()))
def test_pipeline_validates(path, profile):
    plan = build(path, profile=profile)
    assert plan.instances


@pytest.mark.parametrize("path", PIPELINES, ids=[p.stem for p in PIPELINES])
def test_pipeline_opens_with_a_comment_header(path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("#"), f"{path.name} should open with a comment: what it compares, how to run it"
