"""The bibliography parses, holds each key once, and has every key the book and labs cite."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "book" / "references.bib"
CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")


def _keys_in_order() -> list[str]:
    return re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(encoding="utf-8"), re.M)


def test_bibliography_parses_with_one_entry_per_key():
    pybtex = pytest.importorskip("pybtex.database")
    entries = pybtex.parse_file(str(BIB)).entries  # a missing brace fails here, with its line
    keys = _keys_in_order()
    assert len(entries) == len(keys)
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []


def _cited() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "book").glob("*.md")):
        for match in CITE.finditer(path.read_text(encoding="utf-8")):
            for key in match.group(1).split(","):
                found.setdefault(key.strip(), set()).add(path.name)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for match in CITE.finditer("".join(cell["source"])):
                for key in match.group(1).split(","):
                    found.setdefault(key.strip(), set()).add(path.name)
    return found


def test_every_cited_key_is_in_the_bibliography():
    keys = set(_keys_in_order())
    cited = _cited()
    assert cited, "no {cite} roles found: the pattern no longer matches the book"
    missing = {key: sorted(where) for key, where in cited.items() if key not in keys}
    assert missing == {}


# A published score quoted as a number names the result it is: an MLPerf score without its
# result ID cannot be checked against the official table.
MLPERF_SCORES = {"13.466": "3.0-2053", "0.183": "3.0-2002"}


def test_every_file_quoting_an_mlperf_score_names_its_result_id():
    unnamed = []
    for path in sorted([*(ROOT / "book").glob("*.md"), *(ROOT / "notebooks").glob("*.ipynb")]):
        text = path.read_text(encoding="utf-8")
        unnamed += [f"{path.name}: {score} without {rid}" for score, rid in MLPERF_SCORES.items()
                    if re.search(rf"(?<![\d.]){re.escape(score)}(?!\d)", text) and rid not in text]
    assert unnamed == []
    bib = BIB.read_text(encoding="utf-8")
    entry = bib[bib.index("@misc{mlperf2023resnet2053,"):]
    entry = entry[: entry.index("\n}\n")]
    assert "3.0-2053" in entry and "13.466" in entry and "13.408 to 13.411" in entry


def test_mlperf_figures_taken_from_logs_cite_the_logs_and_say_no_result_id():
    # 88 minutes (32 Xeon 8480+) and the H100/A100 ratio of 2.0 have no result ID in the course:
    # their entries name the submitted logs, the run times and that the ID was not found.
    bib = BIB.read_text(encoding="utf-8")
    for key, figures in (("mlperf2023resnetintelspr", ("88.101 to 88.201", "88.17")),
                         ("mlperf2023resnetdella100", ("27.044 to 27.050", "27.05", "2.02"))):
        entry = bib[bib.index(f"@misc{{{key},"):]
        entry = entry[: entry.index("\n}\n")]
        assert "training_results_v3.0" in entry and "No MLPerf result ID" in entry, key
        assert all(figure in entry for figure in figures), key
    chapter = (ROOT / "book" / "case_resnet.md").read_text(encoding="utf-8")
    assert "mlperf2023resnetintelspr" in chapter and "mlperf2023resnetdella100" in chapter
    lab = (ROOT / "notebooks" / "case_resnet_lab.ipynb").read_text(encoding="utf-8")
    assert "28.7" not in lab  # the v2.0 A100 time without a result ID left the lab
