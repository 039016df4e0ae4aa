"""A misspelt key inside a claim is named as unknown, at its own column, with what it was meant to be,
before any key it leaves missing."""

import pytest

from flows.language.errors import PipelineInvalid
from flows.plan.build import build
from tests.support.files import write

PIPE = """\
    name: m
    steps:
      digits: {uses: data.digits}
      card:
        uses: report.scorecard
        with:
          measurements: {d: "${digits.dataset}"}
          expect:
            - id: 1
              mialc: Digits exist.
              check: above
              value: d.n
              than: 0
    """


def test_a_misspelt_claim_key_is_unknown_at_its_column_with_a_did_you_mean(tmp_path):
    path = write(tmp_path, PIPE)
    with pytest.raises(PipelineInvalid) as e:
        build(path)
    assert str(e.value).splitlines()[0] == (
        f"{path}:10:11: step 'card': parameter 'expect' of report.scorecard: expect[0] (claim 1): "
        "unknown key 'mialc' (did you mean 'claim'?)"
    )


def test_a_misspelt_id_is_unknown_too_not_missing(tmp_path):
    path = write(tmp_path, PIPE.replace("- id: 1\n              mialc:", "- idd: 1\n              claim:"))
    with pytest.raises(PipelineInvalid, match=r"expect\[0\]: unknown key 'idd' \(did you mean 'id'\?\)"):
        build(path)
