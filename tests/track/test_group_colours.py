"""MLflow colours a group of runs by a checksum of its id (``tag.<name>.<value>``) into its palette; a
run cannot give a group its colour, only choose the tag's name. These tests hold the reproduction of
MLflow's colours to the installed UI, and the choice of name to its promise: in each comparison view
the architectures drawn together get colours a reader tells apart, the same name every night."""

import random
import re
from pathlib import Path

import mlflow
import pytest

from flows.track import compare

TRANSLATION = {"seq2seq-small", "seq2seq-reverse-small", "luong-dot-small", "transformer-small", "bahdanau-small"}


def _bundle() -> str:
    """The installed MLflow UI's main script."""
    found = sorted((Path(mlflow.__file__).parent / "server" / "js" / "build" / "static" / "js").glob("main.*.js"))
    if not found:
        pytest.skip("this MLflow has no built UI")
    return found[0].read_text(encoding="utf-8", errors="replace")


def test_the_palette_and_checksum_are_the_installed_uis():
    """An MLflow upgrade that changes either fails here, naming what to update."""
    js = _bundle()
    palette = re.search(r'\[("#a6630c"(?:,"#[0-9a-f]{6}")+)\]', js)
    assert palette, "MLflow's run palette (starting #a6630c) is gone: update compare.MLFLOW_PALETTE"
    assert tuple(palette.group(1).replace('"', "").split(",")) == compare.MLFLOW_PALETTE
    # getStableColorForRun: a = (a + code) % 255; b = (b + a) % 255; palette[(a | b << 8) % length]
    checksum = (
        r"(\w)=\(\1\+(\w)\.charCodeAt\((\w)\)\)%255,(\w)=\(\4\+\1\)%255;"
        r"return (\w)\.T\[\(\1\|\4<<8\)%\5\.T\.length\]"
    )
    assert re.search(checksum, js), "MLflow's colour checksum changed: update compare.mlflow_colour"
    # a group's id: mode, tag name and value joined by dots
    assert "=({groupByData:e,mode:t,value:n})=>`${t}.${e}.${n||null}`" in js


def test_the_checksum_reads_code_units_as_javascript_does():
    """A character outside the Basic Multilingual Plane is two UTF-16 code units to ``charCodeAt``."""
    a = b = 0
    for code in (0xD83D, 0xDE00):  # U+1F600 as JavaScript sees it
        a = (a + code) % 255
        b = (b + a) % 255
    assert compare.mlflow_colour("\U0001f600") == compare.MLFLOW_PALETTE[(a | b << 8) % 29]
    assert compare.mlflow_colour("é") == compare.MLFLOW_PALETTE[(0xE9 | 0xE9 << 8) % 29]


def test_grouped_by_architecture_two_pairs_of_the_translation_models_share_a_colour():
    """What the issue saw: seq2seq and the Transformer one grey, Luong and the reversed seq2seq red."""
    colour = {a: compare.mlflow_colour(f"tag.architecture.{a}") for a in TRANSLATION}
    assert colour["seq2seq-small"] == colour["transformer-small"] == "#5f7281"
    assert compare.colour_distance(colour["luong-dot-small"], colour["seq2seq-reverse-small"]) < 7
    assert compare.closest_colours("architecture", TRANSLATION) == 0


def test_the_views_group_the_translation_models_by_a_name_that_gives_five_colours():
    tag = compare.group_tag([TRANSLATION])
    assert tag == "family"  # the first name of GROUP_TAGS that separates them; the same every night
    colours = {compare.mlflow_colour(f"tag.{tag}.{a}") for a in TRANSLATION}
    assert len(colours) == 5
    assert compare.closest_colours(tag, TRANSLATION) >= compare.MIN_COLOUR_DISTANCE


def test_architecture_stays_the_name_where_its_colours_already_differ():
    assert compare.closest_colours("architecture", {"rnn-tiny", "luong-tiny"}) >= compare.MIN_COLOUR_DISTANCE
    assert compare.group_tag([{"rnn-tiny", "luong-tiny"}]) == "architecture"
    assert compare.group_tag([]) == "architecture"


def test_one_name_serves_every_view_of_a_run():
    """An architecture keeps its colour from one view (metric) of the run to the next."""
    views = [TRANSLATION, {"rnn-small", "lstm-small", "gru-small", "luong-dot-small"}]
    tag = compare.group_tag(views)
    assert all(compare.closest_colours(tag, v) >= compare.MIN_COLOUR_DISTANCE for v in views)


def test_a_name_the_trainings_carry_for_something_else_is_never_chosen():
    assert compare.group_tag([TRANSLATION], taken={"family": {"mine"}}) != "family"


def test_five_architectures_of_any_names_get_colours_apart():
    """Simulated: 2,000 sets of five random model names; a set none of the names separates would
    share a colour. Counted, not assumed: at most 1 in 1,000."""
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789-"
    close = 0
    for _ in range(2000):
        archs = {"".join(rng.choice(letters) for _ in range(rng.randint(3, 24))) for _ in range(5)}
        close += compare.closest_colours(compare.group_tag([archs]), archs) < compare.MIN_COLOUR_DISTANCE
    assert close <= 2


def test_more_architectures_than_the_palette_separates_take_the_best_name():
    archs = {f"model-{i}" for i in range(30)}  # 30 groups, 29 colours: two must share one
    tag = compare.group_tag([archs])
    assert tag in compare.GROUP_TAGS
    assert compare.closest_colours(tag, archs) == max(compare.closest_colours(t, archs) for t in compare.GROUP_TAGS)


class _Run:
    def __init__(self, run_id, tags):
        self.info = type("Info", (), {"run_id": run_id})()
        self.data = type("Data", (), {"tags": tags})()


class _Client:
    def __init__(self):
        self.set = []

    def set_tag(self, run_id, key, value):
        self.set.append((run_id, key, value))


def test_the_chosen_name_is_written_on_each_training_beside_architecture():
    runs = [_Run(f"r{i}", {"architecture": a}) for i, a in enumerate(sorted(TRANSLATION))]
    runs.append(_Run("untagged", {}))  # a step that trained nothing: not a group
    runs.append(_Run("done", {"architecture": "seq2seq-small", "family": "seq2seq-small"}))  # written before
    client = _Client()
    assert compare.write_group_tag(client, runs, [TRANSLATION]) == "family"
    assert sorted(client.set) == sorted((f"r{i}", "family", a) for i, a in enumerate(sorted(TRANSLATION)))


def test_a_users_own_tag_is_left_as_it_is():
    runs = [_Run(f"r{i}", {"architecture": a}) for i, a in enumerate(sorted(TRANSLATION))]
    runs[0].data.tags["family"] = "the user's word"
    client = _Client()
    tag = compare.write_group_tag(client, runs, [TRANSLATION])
    assert tag not in ("family", "architecture")
    assert all(key == tag for _, key, _ in client.set) and len(client.set) == 5


@pytest.mark.slow  # an MLflow store migrated and a figure drawn: seconds
def test_a_closed_runs_views_group_by_the_chosen_name_in_a_real_store(tmp_path):
    """save_views on an MLflow store: the five translation trainings get ``family`` beside
    ``architecture``, and the valid/bleu view groups by it; the views' search still finds them."""
    import json

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.create_experiment("colours", artifact_location=(tmp_path / "artifacts").as_uri())
    parent = client.create_run(exp).info.run_id
    for arch in sorted(TRANSLATION):
        run = client.create_run(exp, tags={"mlflow.parentRunId": parent, "architecture": arch}).info.run_id
        for step, value in ((1, 10.0), (2, 20.0)):
            client.log_metric(run, "valid/bleu", value, step=step)
        client.set_terminated(run)
    links = compare.save_views(client, exp, parent)
    assert list(links) == ["valid/bleu"]
    tags = client.get_experiment(exp).tags
    state = json.loads(tags[compare.SHARED_VIEW_TAG + compare.share_key(parent, "valid/bleu")])
    assert state["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": "family"}]
    shown = client.search_runs([exp], filter_string=state["searchFilter"])
    assert sorted(r.data.tags["family"] for r in shown) == sorted(TRANSLATION)
    assert all(r.data.tags["family"] == r.data.tags["architecture"] for r in shown)
