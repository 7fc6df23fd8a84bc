"""Exported proofs' file names: safe, unique also where case is folded, reversible."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.export_names import (
    MAX_COMPONENT_BYTES,
    collection_slug,
    decode_component,
    encode_component,
    version_stamp,
)
from tasks.proofs import bundle_relpath, page_relpath

HOSTILE = [
    "a b.txt",
    "a_b.txt",
    "a+b.txt",
    "a%20b.txt",
    "a%2Bb.txt",
    "résumé.txt",
    "re\u0301sume\u0301.txt",  # the same word, decomposed (NFD)
    "r_sum_.txt",
    "日本.txt",
    "Ωμέγα.txt",
    "_.txt",
    "line\nbreak.txt",
    "tab\there.txt",
    "back\\slash.txt",
    "Case.txt",
    "case.txt",
    "CASE.txt",
    "README",
    "readme",
    "a~3f",
    "a~b",
    "~",
    "-",
    ".hidden",
    "x" * 255,
    "é" * 127,
    "y" * 254 + "Y",
    "y" * 255,
    "bad\udcffname.txt",  # a name whose bytes are not UTF-8, as os gives it
]
SAFE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-%~")
WHEN = datetime(2026, 12, 2, 1, 15, 30, tzinfo=UTC)


def test_hostile_names_get_safe_names_that_no_two_share_even_with_case_folded() -> None:
    encoded = [encode_component(name) for name in HOSTILE]
    for name, form in zip(HOSTILE, encoded, strict=True):
        assert set(form) <= SAFE, (name, form)
        assert 0 < len(form.encode()) <= MAX_COMPONENT_BYTES
    assert len({form.casefold() for form in encoded}) == len(HOSTILE)
    assert len({unicodedata.normalize("NFC", form) for form in encoded}) == len(HOSTILE)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_name_comes_back_from_its_form_unless_it_was_cut(name: str) -> None:
    form = encode_component(name)
    back = decode_component(form)
    if back is None:  # cut: too long once encoded; named in full by the index
        assert len(name.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES // 3
        assert form.rsplit("~h", 1)[1].isalnum()
    else:
        assert back == name


def test_plain_names_stay_as_they_are_and_capitals_are_marked() -> None:
    assert encode_component("contract-2026.pdf") == "contract-2026.pdf"
    assert encode_component("README") == "README~3f"
    assert encode_component("ReadMe") == "ReadMe~11"
    assert encode_component("a b+c.txt") == "a%20b%2Bc.txt"
    assert encode_component("résumé") == "r%C3%A9sum%C3%A9"


@given(st.text(min_size=1).filter(lambda s: "/" not in s))
def test_any_name_round_trips_or_is_cut_with_its_hash(name: str) -> None:
    form = encode_component(name)
    assert set(form) <= SAFE and len(form) <= MAX_COMPONENT_BYTES
    back = decode_component(form)
    assert back == name or (back is None and "~h" in form)


@given(st.lists(st.text(min_size=1).filter(lambda s: "/" not in s), min_size=2, max_size=6))
def test_different_names_never_share_a_form_case_folded(names: list[str]) -> None:
    distinct = set(names)
    assert len({encode_component(n).casefold() for n in distinct}) == len(distinct)


@pytest.mark.parametrize("bad", ["", "a/b"])
def test_not_a_component_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        encode_component(bad)


@pytest.mark.parametrize("form", ["a~", "a%2", "a%zz", "A", "a~0", "a~1", "A~3"])
def test_a_form_not_made_by_encode_is_refused(form: str) -> None:
    with pytest.raises(ValueError):
        decode_component(form)


def test_collections_never_share_a_folder() -> None:
    names = ["/srv/drop", "/srv/Drop", "/srv drop", "/srv_drop", "srv_drop", "c1", "C1", ""]
    slugs = [collection_slug(n) for n in names]
    assert slugs[5] == "c1"
    assert len({s.casefold() for s in slugs}) == len(names)
    assert all(s and len(s) <= 113 and "/" not in s for s in slugs)


def test_versions_of_a_path_get_their_own_bundle_and_page() -> None:
    first = bundle_relpath("c1", "docs/a b.pdf", "ab" * 32, WHEN)
    second = bundle_relpath("c1", "docs/a b.pdf", "cd" * 32, WHEN + timedelta(hours=1))
    same_second = bundle_relpath("c1", "docs/a b.pdf", "ef" * 32, WHEN)
    assert first == PurePosixPath("c1/docs/a%20b.pdf.20261202T011530Z-abababab.proof.json")
    assert len({first, second, same_second}) == 3
    assert page_relpath(first).name == "a%20b.pdf.20261202T011530Z-abababab.verify.html"
    naive = bundle_relpath("c1", "docs/a b.pdf", "ab" * 32, WHEN.replace(tzinfo=None))
    assert naive == first  # naive times are UTC


def test_a_path_never_leaves_the_export_folder() -> None:
    relative = bundle_relpath("c1", "../../etc/passwd", "ab" * 32, WHEN)
    assert relative.parts[:3] == ("c1", "etc", "passwd.20261202T011530Z-abababab.proof.json")
    assert bundle_relpath("c1", "/", "ab" * 32, WHEN).parts[1].startswith("ab" * 32)


def test_names_past_255_bytes_fit_a_file_system_name_with_their_suffixes() -> None:
    for name in ("é" * 127, "x" * 255, "日本" * 42):
        bundle = bundle_relpath("c1", f"dir/{name}", "ab" * 32, WHEN)
        page = page_relpath(bundle)
        assert max(len(p.encode()) for p in (*bundle.parts, page.name)) <= 255
    assert version_stamp(WHEN, "ab" * 32) == "20261202T011530Z-abababab"
