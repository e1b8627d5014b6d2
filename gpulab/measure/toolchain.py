"""Whether this machine can build the C code that Triton and ``torch.compile`` make.

Both compile code of their own the first time they run, with the system's compiler and
Python's headers, which a fresh machine or a slim container may lack: Triton builds a small
C launcher for every compiled kernel on a GPU (C compiler: ``CC``, else ``gcc``, else
``clang``, as ``triton/runtime/build.py`` looks for it), and ``torch.compile``'s Inductor
generates Triton kernels on a GPU and C++ on a CPU (``CXX``, else ``g++`` or ``clang++``).
Both include ``Python.h``. :func:`compile_problem` names what is missing, in one sentence, so
a lab can say it and carry on without the compiled version.

See also the chapter "Frameworks" (``book/frameworks.md``), where ``torch.compile`` fuses.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

from gpulab._checks import choice

__all__ = ["compile_problem", "missing_build_tools", "python_include_dir"]

#: Where each language's compiler is looked for: the environment variable, then the names.
_COMPILERS = {
    "c": ("CC", ("gcc", "clang"), "C compiler (gcc or clang on the PATH, or CC set)"),
    "c++": ("CXX", ("g++", "clang++"), "C++ compiler (g++ or clang++ on the PATH, or CXX set)"),
}
_INSTALL = (
    "install them (on Debian or Ubuntu: apt install build-essential python3-dev; the headers "
    "come with a Python from conda or pyenv) and restart Python"
)


def _compiler(language: str) -> str | None:
    variable, names, _ = _COMPILERS[language]
    if os.environ.get(variable):
        return os.environ[variable]
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def python_include_dir() -> Path:
    """The folder where this Python's ``Python.h`` should be, as Triton works it out.

    Examples
    --------
    >>> python_include_dir().is_absolute()
    True
    """
    scheme = sysconfig.get_default_scheme()
    if scheme == "posix_local":  # Debian's scheme for /usr/local; the headers are in the prefix
        scheme = "posix_prefix"
    return Path(sysconfig.get_paths(scheme=scheme)["include"])


def missing_build_tools(device_type: str = "cuda") -> list[str]:
    """What Triton and Inductor need to build their code for ``device_type`` and do not find.

    ``"cuda"``: a C compiler (Triton's launchers) and ``Python.h``; ``"cpu"``: a C++
    compiler (Inductor's C++ kernels) and ``Python.h``. Empty when nothing is missing.

    Examples
    --------
    >>> all(isinstance(what, str) for what in missing_build_tools("cpu"))
    True
    """
    choice("device_type", device_type, ("cuda", "cpu"))
    language = "c" if device_type == "cuda" else "c++"
    missing = []
    if _compiler(language) is None:
        missing.append(_COMPILERS[language][2])
    include = python_include_dir()
    if not (include / "Python.h").is_file():
        missing.append(f"Python.h (Python's headers, looked for in {include})")
    return missing


def compile_problem(device=None, error: BaseException | None = None) -> str:
    """Why ``torch.compile`` or a compiled Triton kernel cannot be built here, in one sentence.

    Parameters
    ----------
    device : str or torch.device, optional
        Where the compiled code would run (default: :func:`gpulab.best_device`). An Apple
        GPU has no Inductor backend that needs these tools and is answered as a CPU.
    error : BaseException, optional
        What compiling raised, if it was tried: named when no tool is missing.

    Returns
    -------
    str
        '' when nothing is missing and no error is given; otherwise a sentence (without a
        final full stop, so a lab can add what it does instead) naming what is missing and
        how to install it, or the error.

    Examples
    --------
    >>> import gpulab as gl
    >>> problem = gl.measure.toolchain.compile_problem("cpu")
    >>> problem == "" or problem.startswith("torch.compile (Inductor) cannot build")
    True
    """
    from gpulab.measure.device import torch_device

    if error is not None and not isinstance(error, BaseException):
        raise TypeError(f"error={error!r} must be an exception or None")
    on_gpu = torch_device(device).type == "cuda"
    what = (
        "Triton (and torch.compile, whose GPU kernels are Triton's)"
        if on_gpu
        else "torch.compile (Inductor)"
    )
    missing = missing_build_tools("cuda" if on_gpu else "cpu")
    if missing:
        code = "a C launcher for each kernel" if on_gpu else "C++ kernels"
        return (
            f"{what} cannot build {code} here: this machine has no {' and no '.join(missing)}; "
            f"{_INSTALL}"
        )
    if error is not None:
        lines = str(error).strip().splitlines()
        why = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
        return f"{what} failed here ({why}), although a compiler and Python's headers are present"
    return ""
