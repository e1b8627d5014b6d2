"""Lighthouse on the built book, served as a static host serves it: compressed, from 127.0.0.1.

Readers meet the course as web pages, often on a phone or a slow link. This runs Lighthouse
(the npm package, pinned in ``tests/lighthouse/package.json`` and its lockfile; ``python3
course.py install`` installs it with ``npm ci``) in Debian's Chromium with its mobile defaults
(a mid-range phone, a slow 4G link, simulated) on:

* a chapter, a lab with recorded widgets and a Chinese page (:data:`SAMPLE`): in the suite;
* every page of ``_toc.yml`` in both editions: ``python3 course.py lighthouse``
  (``GPULAB_LIGHTHOUSE=all``).

Each page must score 100 in accessibility, best practices and SEO, and at least
:data:`PERFORMANCE_MIN` in performance (the scores are printed either way, and kept in
``test-artifacts/lighthouse/``). The performance score depends on how
busy the machine is (the simulation scales the main thread's measured work), and load only
lowers it: a page just below the bar (within :data:`RETRY_WITHIN` points) is measured again,
up to :data:`PERFORMANCE_TRIES` times in all, and its best score counts. A page also stays
under its weight: what Chromium loads before any interaction, uncompressed
(:data:`CHAPTER_MAX_BYTES`, :data:`LAB_MAX_BYTES`).

The server compresses text (gzip, as GitHub Pages and other static hosts do); the weight
limits are on the uncompressed bytes, which are what the phone parses. Off-host requests fail
(the machines that run the suite have no network). SEO items that need the published address
(a canonical URL, absolute ``hreflang`` alternates) wait for it while ``repository.url`` is the
placeholder (``book/_ext/page_meta.py``); the test says so in its output.

Each run's summary and report go to ``test-artifacts/lighthouse/``. Without Node, npm's
Lighthouse or Chromium the tests are skipped with the reason, or fail when
``GPULAB_REQUIRE_BROWSER=1`` (CI).
"""

from __future__ import annotations

import gzip
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_browser import (
    _find_chromium,
    _unavailable,
    discover_pages,
    served,
)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
LIGHTHOUSE_DIR = ROOT / "tests" / "lighthouse"
LIGHTHOUSE_CLI = LIGHTHOUSE_DIR / "node_modules" / "lighthouse" / "cli" / "index.js"
ARTIFACTS = ROOT / "test-artifacts" / "lighthouse"
#: A chapter, a lab with recorded widgets, a Chinese page.
SAMPLE = ("book/memory_bandwidth.html", "notebooks/distributed_lab.html", "zh/book/kernels.html")
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
PERFORMANCE_MIN = 90
PERFORMANCE_TRIES = 3
#: Only a score this close below the bar is measured again.
RETRY_WITHIN = 10
#: Uncompressed bytes a page loads before any interaction (1.2 MB, 1.5 MB).
CHAPTER_MAX_BYTES = 1_200_000
LAB_MAX_BYTES = 1_500_000
# One Lighthouse run takes 15-40 s on a loaded 2-core machine; past this it is stuck.
RUN_TIMEOUT_S = 240
CHROME_FLAGS = "--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage"
#: What a static host compresses.
COMPRESSED_TYPES = (
    "text/",
    "application/javascript",
    "application/json",
    "image/svg+xml",
    "application/wasm",
)
EXTRA_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript"}


# --------------------------------------------------------------------------- the server


class CompressingHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, text sent gzip-compressed to a client that accepts it."""

    timeout = 30  # seconds per connection: a stuck client cannot hang the server thread
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **EXTRA_TYPES}
    _cache: dict[str, bytes] = {}

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_head(self):
        path = self.translate_path(self.path)
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if os.path.isdir(path) or not os.path.isfile(path) or not accepts:
            return super().send_head()
        ctype = self.guess_type(path)
        if not ctype.startswith(COMPRESSED_TYPES):
            return super().send_head()
        body = self._cache.get(path)
        if body is None:
            body = self._cache[path] = gzip.compress(Path(path).read_bytes(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


@pytest.fixture(scope="module")
def book_html(book_build) -> Path:
    index = book_build.html / "index.html"
    if not index.is_file():
        pytest.fail(f"the build produced no {index}; end of its log:\n{book_build.log[-3000:]}")
    return book_build.html


@pytest.fixture(scope="module")
def compressed_url(book_html: Path) -> Iterator[str]:
    with served(book_html, CompressingHandler, "book-gzip-http") as url:
        yield url


# --------------------------------------------------------------------------- lighthouse


@pytest.fixture(scope="module")
def lighthouse() -> list[str]:
    """The command that runs Lighthouse (Node and the npm package), checked before the build."""
    node = shutil.which("node")
    if node is None:
        _unavailable("Node.js is not installed (Debian: apt-get install nodejs npm)")
    if not LIGHTHOUSE_CLI.is_file():
        _unavailable(
            f"npm's lighthouse is not installed in {LIGHTHOUSE_DIR.relative_to(ROOT)} "
            "(python3 course.py install runs npm ci there when npm is present)"
        )
    if _find_chromium() is None:
        _unavailable("no Chromium executable; install it with `apt-get install -y chromium`")
    return [node, str(LIGHTHOUSE_CLI)]


def summarize(report: dict) -> dict[str, Any]:
    """Scores (0-100), the failing audits of each category, weight and paint times of a report."""
    audits = report["audits"]
    scores = {c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES}
    failing = {
        c: sorted(
            ref["id"]
            for ref in report["categories"][c]["auditRefs"]
            if ref.get("weight")
            and (audits[ref["id"]].get("score") is not None)
            and audits[ref["id"]]["score"] < 1
        )
        for c in CATEGORIES
        if c != "performance"
    }
    requests = audits["network-requests"]["details"]["items"]
    return {
        "scores": scores,
        "failing": failing,
        "uncompressed_bytes": sum(int(r.get("resourceSize") or 0) for r in requests),
        "transferred_bytes": int(audits["total-byte-weight"]["numericValue"]),
        "fcp_s": audits["first-contentful-paint"]["numericValue"] / 1000,
        "lcp_s": audits["largest-contentful-paint"]["numericValue"] / 1000,
        "requests": len(requests),
        "urls": [r["url"] for r in requests],
    }


def run_lighthouse(command: list[str], url: str, out: Path) -> dict[str, Any]:
    chromium = _find_chromium()
    env = dict(os.environ, CHROME_PATH=chromium or "")
    args = [
        *command,
        url,
        "--quiet",
        "--output=json",
        f"--output-path={out}",
        f"--only-categories={','.join(CATEGORIES)}",
        f"--chrome-flags={CHROME_FLAGS}",
    ]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Lighthouse did not finish {url} in {RUN_TIMEOUT_S} s")
    if proc.returncode != 0 or not out.is_file():
        pytest.fail(f"Lighthouse failed on {url} ({proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads(out.read_text(encoding="utf-8"))
    if report.get("runtimeError"):
        pytest.fail(f"Lighthouse could not load {url}: {report['runtimeError']}")
    return summarize(report)


def audit_page(command: list[str], base_url: str, rel: str) -> dict[str, Any]:
    """Lighthouse on one page; measured again (up to PERFORMANCE_TRIES) while below the bar."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = rel.removesuffix(".html").replace("/", "__")
    runs = []
    for _ in range(PERFORMANCE_TRIES):
        runs.append(run_lighthouse(command, f"{base_url}/{rel}", ARTIFACTS / f"{name}.json"))
        score = runs[-1]["scores"]["performance"]
        # Noise moves the score by a few points: a page far below the bar is not run again.
        if score >= PERFORMANCE_MIN or score < PERFORMANCE_MIN - RETRY_WITHIN:
            break
    best = max(runs, key=lambda r: r["scores"]["performance"])
    result = {**runs[0], "performance_runs": [r["scores"]["performance"] for r in runs]}
    result["scores"] = {**runs[0]["scores"], "performance": best["scores"]["performance"]}
    result["fcp_s"], result["lcp_s"] = best["fcp_s"], best["lcp_s"]
    (ARTIFACTS / f"{name}.summary.json").write_text(json.dumps(result, indent=2), "utf-8")
    return result


def pages_to_audit(html: Path) -> list[str]:
    """The sample, or (``GPULAB_LIGHTHOUSE=all``) every page of _toc.yml in both editions."""
    if os.environ.get("GPULAB_LIGHTHOUSE") != "all":
        return list(SAMPLE)
    english = [p.rel for p in discover_pages(html, ROOT)]
    return english + [f"zh/{rel}" for rel in english if (html / "zh" / rel).is_file()]


def weight_limit(rel: str) -> int:
    return LAB_MAX_BYTES if "/notebooks/" in f"/{rel}" else CHAPTER_MAX_BYTES


def problems(rel: str, result: dict[str, Any]) -> list[str]:
    """What keeps a page from passing (empty when it passes)."""
    found = []
    for category, failing in result["failing"].items():
        if result["scores"][category] < 100:
            found.append(f"{rel}: {category} {result['scores'][category]} (failing: {failing})")
    if result["scores"]["performance"] < PERFORMANCE_MIN:
        found.append(
            f"{rel}: performance {result['performance_runs']} over {PERFORMANCE_TRIES} runs, "
            f"none >= {PERFORMANCE_MIN} (FCP {result['fcp_s']:.1f} s, LCP {result['lcp_s']:.1f} s)"
        )
    if result["uncompressed_bytes"] > weight_limit(rel):
        found.append(
            f"{rel}: {result['uncompressed_bytes']:,} bytes before any interaction "
            f"(uncompressed), over {weight_limit(rel):,}"
        )
    return found


# --------------------------------------------------------------------------- tests


def test_the_server_sends_text_compressed(compressed_url: str, book_html: Path) -> None:
    rel = SAMPLE[0]
    request = urllib.request.Request(f"{compressed_url}/{rel}", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        body = response.read()
    original = (book_html / rel).read_bytes()
    assert gzip.decompress(body) == original and len(body) < len(original) / 2


@pytest.fixture(scope="module")
def audits(lighthouse: list[str], compressed_url: str, book_html: Path) -> dict[str, dict]:
    """Lighthouse's results for each page to audit; a table of them in the test output."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from page_meta import published_base, waiting_items

    from gpulab.course.labs import PLACEHOLDER_REPOSITORY_URL

    waiting = waiting_items(published_base("", PLACEHOLDER_REPOSITORY_URL))
    if waiting:
        print(f"waiting for the published address (repository.url): {'; '.join(waiting)}")
    results = {}
    for rel in pages_to_audit(book_html):
        result = results[rel] = audit_page(lighthouse, compressed_url, rel)
        s = result["scores"]
        print(
            f"{rel}: performance {s['performance']} {result['performance_runs']}, accessibility "
            f"{s['accessibility']}, best practices {s['best-practices']}, SEO {s['seo']}; "
            f"FCP {result['fcp_s']:.1f} s, LCP {result['lcp_s']:.1f} s; "
            f"{result['uncompressed_bytes']:,} bytes ({result['transferred_bytes']:,} sent)"
        )
    return results


def test_pages_are_accessible_findable_clean_and_light(audits: dict[str, dict]) -> None:
    found = [p for rel, r in audits.items() for p in problems(rel, r) if "performance " not in p]
    assert not found, "\n".join(found)


def test_pages_are_fast(audits: dict[str, dict]) -> None:
    found = [p for rel, r in audits.items() for p in problems(rel, r) if "performance " in p]
    assert not found, "\n".join(found)


def test_the_check_fails_a_page_that_falls_short() -> None:
    """Guards the check: each way of falling short is named."""
    good = {
        "scores": {"performance": 95, "accessibility": 100, "best-practices": 100, "seo": 100},
        "failing": {"accessibility": [], "best-practices": [], "seo": []},
        "performance_runs": [95],
        "uncompressed_bytes": 900_000,
        "fcp_s": 1.0,
        "lcp_s": 2.0,
    }
    assert problems("book/x.html", good) == []
    slow = {**good, "scores": {**good["scores"], "performance": 80}, "performance_runs": [80] * 3}
    assert "performance [80, 80, 80]" in problems("book/x.html", slow)[0]
    seo = {**good, "scores": {**good["scores"], "seo": 92}, "failing": {**good["failing"],
           "seo": ["meta-description"]}}  # fmt: skip
    assert "meta-description" in problems("book/x.html", seo)[0]
    assert "over 1,200,000" in problems("book/x.html", {**good, "uncompressed_bytes": 1_300_000})[0]
    assert problems("notebooks/x.html", {**good, "uncompressed_bytes": 1_300_000}) == []


def test_course_py_installs_lighthouse_from_the_lockfile_once(
    course_module, tmp_path, monkeypatch, capsys
) -> None:
    folder = tmp_path / "lighthouse"
    folder.mkdir()
    (folder / "package-lock.json").write_text('{"lockfileVersion": 3}', encoding="utf-8")
    calls = []

    def fake_run(cmd, timeout, check=True, **kwargs):
        calls.append([str(c) for c in cmd])
        (folder / "node_modules").mkdir(exist_ok=True)
        return 0

    monkeypatch.setattr(course_module, "ROOT", tmp_path)
    monkeypatch.setattr(course_module, "run", fake_run)
    monkeypatch.setattr(course_module.shutil, "which", lambda name: None)
    assert course_module.ensure_lighthouse(folder) is False and calls == []
    assert "npm is not installed" in capsys.readouterr().out

    monkeypatch.setattr(course_module.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert course_module.ensure_lighthouse(folder) is True
    assert calls == [["/usr/bin/npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"]]
    assert course_module.ensure_lighthouse(folder) is False and len(calls) == 1  # stamped
    (folder / "package-lock.json").write_text('{"lockfileVersion": 3, "x": 1}', encoding="utf-8")
    assert course_module.ensure_lighthouse(folder) is True and len(calls) == 2


def test_the_pinned_lighthouse_is_12_2(course_module) -> None:
    """Lighthouse 13 needs a newer Node than Debian's: the lockfile pins a 12.2 release."""
    lock = json.loads((LIGHTHOUSE_DIR / "package-lock.json").read_text(encoding="utf-8"))
    version = lock["packages"]["node_modules/lighthouse"]["version"]
    assert version.startswith("12.2."), version
    assert course_module.LIGHTHOUSE_DIR == LIGHTHOUSE_DIR
