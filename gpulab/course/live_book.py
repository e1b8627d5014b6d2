"""What the live book needs beside its HTML: the Pyodide runtime and a zip of the package.

The book's calculators (:mod:`gpulab.labkit.calculators`) run in the reader's browser on
Pyodide, CPython compiled to WebAssembly. Its core runtime comes from the npm registry's
``pyodide`` package, pinned to :data:`PYODIDE_VERSION` and checked against the tarball's
``dist.integrity`` hash from the registry (:data:`PYODIDE_INTEGRITY`). The build fetches it
once into a cache (:func:`fetch_pyodide`) and copies the few files the runtime needs
(:data:`RUNTIME_FILES`, no packages such as NumPy) beside the HTML, so the book works offline
and from any static host.

:func:`package_zip` writes the part of ``gpulab`` the calculators use, found by running every
calculator with NumPy, torch and matplotlib blocked and keeping the modules that were
loaded (and the panel's arithmetic, :mod:`gpulab.labkit.gpu_panel`, run on its example), plus
the package's data files and the numbers only torch can compute
(:func:`gpulab.labkit.calculators.build_time_data`), measured now.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

__all__ = [
    "PYODIDE_INTEGRITY",
    "PYODIDE_VERSION",
    "RUNTIME_FILES",
    "check_integrity",
    "fetch_pyodide",
    "package_modules",
    "package_zip",
]

#: The ``pyodide`` npm package the book runs (Python 3.12).
PYODIDE_VERSION = "0.27.7"
#: ``dist.integrity`` of that version's tarball in the npm registry (``npm view pyodide@0.27.7
#: dist.integrity``): a base64 SHA-512.
PYODIDE_INTEGRITY = (
    "sha512-"
    "RUSVJlhQdfWfgO9hVHCiXoG+nVZQRS5D9FzgpLJ/VcgGBLSAKoPL8kTiOikxbHQm1kRISeWUBdulEgO26qpSRA=="
)
#: The files of the tarball's ``package/`` folder that the page loads; the rest (type
#: declarations, source maps, the CommonJS and REPL files) stays in the cache.
RUNTIME_FILES = (
    "pyodide.mjs",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
DEFAULT_REGISTRY = "https://registry.npmjs.org"
DOWNLOAD_TIMEOUT_S = 120
PACKAGE = Path(__file__).resolve().parent.parent  # gpulab/
BLOCKED = ("numpy", "torch", "matplotlib", "ipywidgets", "scipy", "pandas")
# A fixed time stamp makes the zip the same bytes for the same sources.
_ZIP_DATE = (2020, 1, 1, 0, 0, 0)


def check_integrity(data: bytes, integrity: str = PYODIDE_INTEGRITY) -> None:
    """Raise ``ValueError`` unless ``data`` has the npm ``integrity`` (``sha512-<base64>``)."""
    algorithm, _, expected = integrity.partition("-")
    if algorithm != "sha512" or not expected:
        raise ValueError(f"integrity={integrity!r} must be 'sha512-<base64 digest>'")
    got = base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")
    if got != expected:
        raise ValueError(
            f"the downloaded tarball's SHA-512 is {got}, not the pinned {expected}: "
            "refusing to use it (a changed or corrupted download)"
        )


def _registry() -> str:
    """The npm registry npm itself would use (``npm_config_registry``), or the public one."""
    for name in ("npm_config_registry", "NPM_CONFIG_REGISTRY"):
        if os.environ.get(name):
            return os.environ[name].rstrip("/")
    return DEFAULT_REGISTRY


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
        return response.read()


def fetch_pyodide(
    cache: Path,
    *,
    version: str = PYODIDE_VERSION,
    integrity: str = PYODIDE_INTEGRITY,
    download=_download,
) -> Path:
    """The folder holding :data:`RUNTIME_FILES`, downloaded and checked on first use only.

    Parameters
    ----------
    cache : Path
        Where the runtime is kept between builds (``<cache>/pyodide-<version>/``).
    version, integrity : str
        The npm package version and its tarball's ``dist.integrity``.
    download : callable
        ``download(url) -> bytes`` (tests pass their own).

    Returns
    -------
    Path
        ``<cache>/pyodide-<version>``.

    Raises
    ------
    ValueError
        If the tarball does not match ``integrity`` or lacks a runtime file; nothing is kept.
    """
    folder = Path(cache) / f"pyodide-{version}"
    stamp = folder / ".integrity"
    if stamp.is_file() and stamp.read_text().strip() == integrity:
        if all((folder / name).is_file() for name in RUNTIME_FILES):
            return folder
    tarball = download(f"{_registry()}/pyodide/-/pyodide-{version}.tgz")
    check_integrity(tarball, integrity)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        for name in RUNTIME_FILES:
            try:
                member = tar.getmember(f"package/{name}")
            except KeyError:
                shutil.rmtree(partial)
                raise ValueError(f"pyodide {version}'s tarball has no package/{name}") from None
            (partial / name).write_bytes(tar.extractfile(member).read())
    (partial / ".integrity").write_text(integrity + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


_FIND_MODULES = """
import json, sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: the live book has the standard library only")
        return None

sys.meta_path.insert(0, Blocked())
from gpulab.labkit import calculators
calculators._DATA.update(json.loads(sys.stdin.read()))
for name, calc in calculators.CALCULATORS.items():
    for values in (calc.defaults(), *calc.examples):
        out = calculators.run(name, values)
        assert out["ok"], (name, values, out["html"])
from gpulab.labkit import gpu_panel  # the "measure your GPU" panel's arithmetic
gpu_panel.panel_json(json.dumps(gpu_panel.EXAMPLE))
print(json.dumps(sorted(m.__file__ for n, m in sys.modules.items()
                        if n.split(".")[0] == "gpulab" and getattr(m, "__file__", None))))
"""


def package_modules(build_data: dict) -> list[Path]:
    """The package's source files that the calculators and the "measure your GPU" panel load,
    with NumPy and torch blocked.

    Every calculator runs at its defaults and at its examples in a fresh interpreter that
    cannot import NumPy, torch, matplotlib or ipywidgets; an import of any of them, or a
    calculator that fails, is an error here rather than in the reader's browser.
    """
    code = _FIND_MODULES.replace("BLOCKED", repr(BLOCKED))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(build_data),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=PACKAGE.parent,
        env=dict(os.environ, PYTHONPATH=str(PACKAGE.parent)),
    )
    if proc.returncode != 0:
        raise RuntimeError(
            "the live calculators do not run on the standard library alone:\n" + proc.stderr[-3000:]
        )
    return [Path(f) for f in json.loads(proc.stdout)]


def package_zip(destination: Path, build_data: dict | None = None) -> Path:
    """Write the zip the browser loads: the calculators' modules, data files, build data.

    Parameters
    ----------
    destination : Path
        The zip to write (its folder is made).
    build_data : dict, optional
        What :func:`gpulab.labkit.calculators.build_time_data` returns (computed here when
        not given; it needs torch).

    Returns
    -------
    Path
        ``destination``.
    """
    from gpulab.labkit.calculators import BUILD_DATA_FILE, build_time_data

    data = build_time_data() if build_data is None else build_data
    files = set(package_modules(data))
    files |= {p for p in (PACKAGE / "data").iterdir() if p.suffix in (".csv", ".json")}
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(files):
            arcname = path.resolve().relative_to(PACKAGE.parent).as_posix()
            zf.writestr(
                zipfile.ZipInfo(arcname, _ZIP_DATE), path.read_bytes(), zipfile.ZIP_DEFLATED
            )
        arcname = BUILD_DATA_FILE.relative_to(PACKAGE.parent).as_posix()
        payload = json.dumps(data, sort_keys=True, indent=1).encode("utf-8")
        zf.writestr(zipfile.ZipInfo(arcname, _ZIP_DATE), payload, zipfile.ZIP_DEFLATED)
    return destination
