"""Reading parallel text: plain/gz lines, WMT .sgm, and every bad-input error."""

import gzip
import os
from pathlib import Path

import pytest

from components.data.errors import DataError
from components.data.text import first_divergence, read_lines, read_parallel, read_sgm, resolve

DATA = Path(os.environ.get("BOTTLENECKS_DATA", Path(__file__).resolve().parents[3].parent / "shared" / "data"))
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data not found at {DATA} (set BOTTLENECKS_DATA)")
NT = DATA / "wmt14-newstest"


@needs_data
def test_sgm_reader_equals_the_plain_text_extraction():
    for side, plain in (("src.en", "en"), ("ref.de", "de")):
        segments, ids = read_sgm(NT / "sgm" / f"newstest2014-deen-{side}.sgm.gz")
        assert segments == read_lines(NT / f"newstest2014.en-de.{plain}.gz")
        assert len(segments) == 3003 and ids[0] == ("10023-schwarzwaelder-bote.de", "1")
    pairs = read_parallel(
        NT / "sgm" / "newstest2014-deen-src.en.sgm.gz", NT / "sgm" / "newstest2014-deen-ref.de.sgm.gz"
    )
    assert pairs[1][0].startswith("They are not even 100 metres apart: On Tuesday, the new B 33 pedestrian lights")
    assert pairs[1][1].startswith("Sie stehen keine 100 Meter voneinander entfernt")


@needs_data
def test_sgm_files_of_different_test_sets_do_not_pair():
    with pytest.raises(
        DataError,
        match=r"different \(docid, segid\) sequences \(3003 vs 3003 segments\), "
        r"first difference at segment 1: .* pair the matching src/ref files",
    ):
        read_parallel(NT / "sgm" / "newstest2014-deen-src.en.sgm.gz", NT / "sgm" / "newstest2014-fren-ref.fr.sgm.gz")


def test_plain_and_gzip_read_the_same(tmp_path):
    text = "Hello  world \r\nsecond\tline\n\nlast"
    (tmp_path / "a.txt").write_text(text)
    (tmp_path / "a.txt.gz").write_bytes(gzip.compress(text.encode()))
    lines = ["Hello world", "second line", "", "last"]
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf" + text.encode() + "\u2028x\n".encode())
    assert read_lines(tmp_path / "bom.txt") == lines[:3] + ["last x"]
    assert read_lines(tmp_path / "a.txt") == lines == read_lines(tmp_path / "a.txt.gz")


def test_missing_file_names_the_path_and_near_misses(tmp_path):
    (tmp_path / "train.en.gz").write_text("x\n")
    with pytest.raises(DataError, match=r"train\.en\.g: no such file; files with similar names there: train\.en\.gz"):
        resolve("train.en.g", str(tmp_path))
    with pytest.raises(DataError, match="does not exist either"):
        resolve("nowhere/train.en", str(tmp_path))


def test_undecodable_bytes_name_file_and_line(tmp_path):
    (tmp_path / "bad.de").write_bytes("gut\nsch\xf6n\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"bad\.de: line 2 is not valid utf-8 \(byte 0xf6.*iconv"):
        read_lines(tmp_path / "bad.de")
    assert read_lines(tmp_path / "bad.de", encoding="latin-1") == ["gut", "schön"]
    with pytest.raises(DataError, match="unknown encoding 'latin-99'"):
        read_lines(tmp_path / "bad.de", encoding="latin-99")


def test_unequal_line_counts_report_both_counts_and_where(tmp_path):
    src = [" ".join(["w"] * n) for n in (3, 12, 5, 20, 7, 9, 15, 4, 11, 6, 18, 2)]
    tgt = src[:6] + src[7:]  # line 7 lost in the target
    (tmp_path / "s.txt").write_text("\n".join(src) + "\n")
    (tmp_path / "t.txt").write_text("\n".join(tgt) + "\n")
    with pytest.raises(DataError, match=r"s\.txt has 12 lines but .*t\.txt has 11: .* diverge around line 7 "):
        read_parallel(tmp_path / "s.txt", tmp_path / "t.txt")


@needs_data
def test_divergence_is_found_in_real_text():
    en = read_lines(DATA / "multi30k" / "val.en.gz")
    de = read_lines(DATA / "multi30k" / "val.de.gz")
    assert abs(first_divergence(en, de[:500] + de[501:]) - 500) <= 3


def test_sgm_without_segments_is_an_error(tmp_path):
    (tmp_path / "x.sgm").write_text("<srcset>\n</srcset>\n")
    with pytest.raises(DataError, match=r"x\.sgm: no <seg> lines found"):
        read_sgm(tmp_path / "x.sgm")
