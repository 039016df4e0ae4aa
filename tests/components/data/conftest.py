"""Every dataset a data component returns in these tests meets the data contract
(``components.data.contract``), as the engine checks it after a step: a shipped component whose
output breaks the contract fails its own tests, not only a pipeline's step."""

import pytest

from components.data.contract import check_outputs
from components.registry import Component


@pytest.fixture(autouse=True)
def outputs_meet_the_data_contract(monkeypatch):
    call = Component.__call__

    def checked(self, ctx, **params):
        result = call(self, ctx, **params)
        check_outputs(result, ctx.work_dir)  # raises DataContractError, naming the file and the field
        return result

    monkeypatch.setattr(Component, "__call__", checked)
