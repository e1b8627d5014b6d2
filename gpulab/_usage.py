"""Checks of command-line arguments: a bad one is one line for the user, not a traceback.

``python -m gpulab`` catches :class:`UsageError`, prints ``python -m gpulab <command>:
<message>`` on one line and exits with status 2, the status of any other misuse of the
command line (argparse uses it too).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: The exit status of a command given arguments it cannot work with.
USAGE_STATUS = 2


class UsageError(Exception):
    """An argument the command cannot work with; the message says what to do instead."""


def _reason(err: OSError) -> str:
    return (err.strerror or str(err)).lower()


def _file_above(path: Path) -> Path | None:
    """The nearest existing path above ``path`` if it is not a folder (a file, a broken link)."""
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            return None if parent.is_dir() else parent
    return None


def existing_folder(option: str, path: Path, what: str) -> Path:
    """``path`` if it is a folder; otherwise a :class:`UsageError` naming ``option``."""
    if not path.is_dir():
        state = "is a file" if path.exists() else "does not exist"
        raise UsageError(f"{option} {path} {state}; give the folder of {what}")
    return path


def writable_folder(option: str, path: Path) -> Path:
    """Create the folder ``path`` if needed and check that a file can be written in it.

    Raises
    ------
    UsageError
        When ``path`` or a folder above it is a file, or ``path`` cannot be created, or does
        not accept new files.
    """
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file; give a folder to write into")
    blocking = _file_above(path)
    if blocking is not None:
        raise UsageError(
            f"cannot write into {option} {path}: {blocking} is not a folder; give a "
            "folder you can write to"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        raise UsageError(
            f"cannot write into {option} {path} ({_reason(err)}); give a folder you can write to"
        ) from None
    return path


def writable_file(option: str, path: Path) -> Path:
    """Check that the file ``path`` can be written, before any work that would fill it.

    Creates the folders above it if needed; a file that did not exist is removed again, so
    a run that fails later leaves nothing behind.

    Raises
    ------
    UsageError
        When ``path`` is a folder, a folder above it is a file, or it cannot be created or
        opened for writing.
    """
    if path.is_dir():
        raise UsageError(f"{option} {path} is a folder; give a file name, e.g. {path / 'x.json'}")
    blocking = _file_above(path)
    if blocking is not None:
        raise UsageError(
            f"cannot write {option} {path}: {blocking} is not a folder; give a file "
            "in a folder you can write to"
        )
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as err:
        raise UsageError(
            f"cannot write {option} {path} ({_reason(err)}); give a file in a folder you can "
            "write to"
        ) from None
    if not existed:
        os.remove(path)
    return path
