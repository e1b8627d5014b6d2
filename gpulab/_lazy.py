"""Subpackages load their modules on first use: ``gl.costmodels.memory`` imports the module
when it is first read (PEP 562), so ``import gpulab`` stays light."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def submodule_loader(package: str, modules: tuple[str, ...]) -> tuple[Callable, Callable]:
    """``__getattr__`` and ``__dir__`` for a package whose ``modules`` load when first read.

    Examples
    --------
    >>> getattr_, dir_ = submodule_loader("gpulab.hardware", ("specs",))
    >>> getattr_("specs").__name__
    'gpulab.hardware.specs'
    >>> getattr_("nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'gpulab.hardware' has no attribute 'nothing'
    """

    def __getattr__(name: str):
        if name not in modules:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return importlib.import_module(f"{package}.{name}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(modules))

    return __getattr__, __dir__
