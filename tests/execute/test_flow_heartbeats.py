"""A run with nothing to compute sends no Prefect flow-run heartbeats: it ends long before the first
interval, and the heartbeat thread would hold its end by up to a second."""

from prefect.settings import get_current_settings

from flows.execute._flow import _heartbeats


def test_a_run_that_computes_keeps_prefects_heartbeats():
    before = get_current_settings().flows.heartbeat_frequency
    with _heartbeats(True):
        assert get_current_settings().flows.heartbeat_frequency == before


def test_a_fully_cached_run_sends_none_and_the_setting_comes_back():
    before = get_current_settings().flows.heartbeat_frequency
    with _heartbeats(False):
        assert get_current_settings().flows.heartbeat_frequency is None
    assert get_current_settings().flows.heartbeat_frequency == before
