"""Files read from outside the store are in the key: which parameters name them, what their
fingerprint notices and what it costs (a stat per file while nothing changed)."""

import hashlib
import os
import time
from pathlib import Path

import pytest

from components import Context, component
from flows.plan import _fingerprint
from flows.plan._fingerprint import Fingerprints, path_params
from flows.plan._keys import changes
from flows.plan.build import build
from tests.support.files import write

H = "tests.plan.test_fingerprint"


@component("fingerprinttest.read", outputs=["lines"])
def read(ctx: Context, *, data_dir: str, name: str = "a.txt", vocab: Path | None = None) -> dict:
    """Count the lines of one file of ``data_dir``."""
    return {"lines": len((Path(data_dir) / name).read_text().splitlines())}


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    for name, text in {"a.txt": "one\ntwo\n", "b.txt": "three\n", "sub/c.txt": "four\n"}.items():
        (folder / name).write_text(text)
        _age(folder / name)
    return folder


def _age(path: Path, seconds: float = 60) -> None:
    """Set the file's mtime in the past, as a file written before the plan."""
    t = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(t, t))


def plan_of(tmp_path, corpus, **with_):
    params = ", ".join(f"{k}: {v}" for k, v in {"data_dir": f'"{corpus}"', **with_}.items())
    path = write(tmp_path, f"name: fp\nsteps:\n  read: {{uses: {H}:read, with: {{{params}}}}}\n")
    return build(path)


def test_a_changed_file_at_the_same_path_changes_the_key_and_is_counted(tmp_path, home, corpus):
    before = plan_of(tmp_path, corpus).instances["read"]
    assert before.parts["files"] == {"data_dir": {"digest": before.parts["files"]["data_dir"]["digest"], "files": 3}}
    assert plan_of(tmp_path, corpus).instances["read"].key == before.key  # unchanged: the same key
    (corpus / "b.txt").write_text("THREE\n")  # same size, new content
    (corpus / "new.txt").write_text("five\n")
    after = plan_of(tmp_path, corpus)
    assert after.instances["read"].key != before.key
    said = changes(before.parts, after.instances["read"], after.instances, set(), Fingerprints(home))
    assert said == ["data_dir changed (2 files: 1 changed, 1 added)"]


def test_a_touched_file_with_the_same_content_keeps_the_key(tmp_path, home, corpus):
    before = plan_of(tmp_path, corpus).instances["read"].key
    (corpus / "a.txt").write_text("one\ntwo\n")
    _age(corpus / "a.txt", 30)
    assert plan_of(tmp_path, corpus).instances["read"].key == before


def test_an_unchanged_corpus_costs_a_stat_per_file_not_a_read(tmp_path, home, corpus, monkeypatch):
    plan_of(tmp_path, corpus)
    hashed = []
    real = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest", lambda fh, name: hashed.append(fh.name) or real(fh, name))
    plan_of(tmp_path, corpus)
    assert hashed == []
    (corpus / "a.txt").write_text("one\nTWO\n")
    _age(corpus / "a.txt", 30)
    plan_of(tmp_path, corpus)
    assert hashed == [str(corpus / "a.txt")]


def test_the_documented_blind_spot_same_size_mtime_and_inode(tmp_path, home, corpus):
    """A rewrite that keeps size, mtime to the nanosecond and inode is not noticed (docs/engine.md)."""
    before = plan_of(tmp_path, corpus).instances["read"].key
    stat = (corpus / "b.txt").stat()
    with open(corpus / "b.txt", "r+") as fh:  # in place: the same inode
        fh.write("THREE\n")
    os.utime(corpus / "b.txt", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert plan_of(tmp_path, corpus).instances["read"].key == before


def test_a_file_written_within_two_seconds_is_hashed_again_next_time(tmp_path, home, corpus, monkeypatch):
    (corpus / "a.txt").write_text("one\ntwo\n")  # just now: its mtime tick may not be over
    plan_of(tmp_path, corpus)
    hashed = []
    real = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest", lambda fh, name: hashed.append(fh.name) or real(fh, name))
    plan_of(tmp_path, corpus)
    assert hashed == [str(corpus / "a.txt")]


def test_which_parameters_name_paths(tmp_path, home, corpus, monkeypatch):
    from components.registry import get

    comp = get(f"{H}:read")
    marker = tmp_path / "marker"
    marker.write_text("x")
    monkeypatch.chdir(tmp_path)
    found = path_params(comp, {"data_dir": "corpus", "name": str(marker), "vocab": str(tmp_path / "v.json")}, home)
    # a folder by its text; a single file only where the type is Path (missing or not)
    assert found == {"data_dir": corpus, "vocab": tmp_path / "v.json"}
    assert Fingerprints(home).of(tmp_path / "v.json") == {"missing": True}
    home.mkdir(parents=True, exist_ok=True)
    assert path_params(comp, {"data_dir": ".", "name": "x"}, tmp_path / ".bottlenecks") == {}  # holds the store
    assert path_params(comp, {"data_dir": str(home), "name": "x"}, home) == {}  # the store itself
    assert path_params(comp, {"data_dir": "", "name": "corpus"}, home) == {"name": corpus}


def test_a_declared_path_file_is_fingerprinted_and_its_appearance_named(tmp_path, home, corpus):
    vocab = tmp_path / "vocab.json"
    before = plan_of(tmp_path, corpus, vocab=f'"{vocab}"')
    assert before.instances["read"].parts["files"]["vocab"] == {"missing": True}
    vocab.write_text("{}")
    after = plan_of(tmp_path, corpus, vocab=f'"{vocab}"')
    assert changes(before.instances["read"].parts, after.instances["read"], after.instances, set()) == [
        "vocab appeared (1 file)"
    ]


def test_changed_files_counts_each_kind():
    old, new = {"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9", "d": "4"}
    assert _fingerprint.changed_files(old, new) == "3 files: 1 changed, 1 added, 1 removed"
    assert _fingerprint.changed_files(None, new) == ""


def test_an_empty_folder_adds_nothing_until_files_appear(tmp_path, home):
    empty = tmp_path / "empty"
    empty.mkdir()
    before = plan_of(tmp_path, empty).instances["read"]
    assert "files" not in before.parts  # as a missing folder: a marker a step makes is not its input
    (empty / "a.txt").write_text("one\n")
    after = plan_of(tmp_path, empty)
    assert changes(before.parts, after.instances["read"], after.instances, set()) == [
        "data_dir read from outside the store now"
    ]


def test_a_state_folder_that_cannot_keep_hashes_still_plans_with_the_same_key(tmp_path, home, corpus):
    before = plan_of(tmp_path, corpus).instances["read"].key
    (home / "fingerprints.db").unlink()
    (home / "fingerprints.db").mkdir()  # no database can be opened there
    assert plan_of(tmp_path, corpus).instances["read"].key == before
