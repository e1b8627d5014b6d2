"""course.py: its commands and arguments, which environment it installs into, and when.

Environments are folders made in a temporary directory; nothing is installed with pip.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

PY = Path("/envs/some/bin/python")  # an interpreter path that is only compared, never run


@pytest.fixture(scope="module")
def course(root):
    spec = importlib.util.spec_from_file_location("course", root / "course.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["course"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("course", None)


@pytest.fixture
def commands(course, monkeypatch):
    """The commands build() would run, with what the config file said at that moment."""
    ran = []

    def fake_run(cmd, timeout, check=True, **kwargs):
        config = course.INSTRUCTOR_CONFIG
        ran.append(([str(c) for c in cmd], config.read_text() if config.exists() else None))
        return 0

    monkeypatch.setattr(course, "run", fake_run)
    # The real build cache (a developer's _build/) is never touched by these tests.
    monkeypatch.setattr(course, "BUILD_CACHE", course.Path("/nonexistent/gpulab/.jupyter_cache"))
    return ran


def test_default_build_is_the_readers_build(course, commands):
    assert course.build(course.Path(sys.executable)) == 0
    ((cmd, config),) = commands
    assert cmd[3:] == ["build", str(course.ROOT), "--warningiserror", "--nitpick", "--keep-going"]
    assert config is None


def test_solutions_open_build_uses_an_override_and_its_own_output(course, commands):
    assert course.build(course.Path(sys.executable), solutions_open=True) == 0
    ((cmd, config_text),) = commands
    assert cmd[cmd.index("--config") + 1] == str(course.INSTRUCTOR_CONFIG)
    assert cmd[cmd.index("--path-output") + 1] == str(course.INSTRUCTOR_OUTPUT)
    config = yaml.safe_load(config_text)
    selector = config["sphinx"]["config"]["togglebutton_selector"]
    assert selector == ".toggle, .admonition.dropdown:not(.solution)"
    readers = yaml.safe_load((course.ROOT / "_config.yml").read_text())
    # Everything else is the readers' configuration.
    assert config["sphinx"]["local_extensions"] == readers["sphinx"]["local_extensions"]
    assert config["sphinx"]["config"]["mathjax_path"] == readers["sphinx"]["config"]["mathjax_path"]
    assert config["repository"] == readers["repository"]
    assert not course.INSTRUCTOR_CONFIG.exists(), "the temporary config is removed"


def test_instructor_config_leaves_the_input_alone(course):
    base = {"title": "t", "sphinx": {"config": {"a": 1}}, "execute": {"timeout": 5}}
    out = course.instructor_config(base)
    assert base == {"title": "t", "sphinx": {"config": {"a": 1}}, "execute": {"timeout": 5}}
    assert out["sphinx"]["config"]["a"] == 1 and out["execute"]["timeout"] == 5
    assert out["execute"]["cache"].endswith(".jupyter_cache")


def test_solutions_open_goes_with_build_only(course, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["course.py", "test", "--solutions-open"])
    with pytest.raises(SystemExit):
        course.main()
    assert "--solutions-open goes with the build command only" in capsys.readouterr().err


# --------------------------------------------------------------------------- arguments


def test_test_passes_everything_after_it_to_pytest(course):
    assert course.parse_args(["test", "-k", "specs", "-x"]).pytest_args == ["-k", "specs", "-x"]
    assert course.parse_args(["test", "--", "-k", "specs"]).pytest_args == ["-k", "specs"]
    assert course.parse_args(["test"]).pytest_args == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["build", "--bogus"], "unrecognized arguments: --bogus"),
        (["build", "-k", "specs"], "unrecognized arguments: -k specs"),
        (["install", "extra"], "unrecognized arguments: extra"),
        (["stamp"], "invalid choice: 'stamp'"),
        ([], "the following arguments are required: command"),
        (["install", "--solutions-open"], "--solutions-open goes with the build command only"),
    ],
)
def test_unknown_arguments_are_errors(course, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        course.parse_args(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_pytest_runs_on_one_worker_per_core_unless_told_otherwise(course):
    python = course.Path("py")
    cmd = course.pytest_command(python, ["-k", "x"])
    assert cmd[1:] == ["-m", "pytest", "-n", "auto", "-k", "x"]
    # The user's arguments come last, so theirs win (pytest keeps the last -n).
    assert course.pytest_command(python, ["-n", "0"])[-2:] == ["-n", "0"]
    assert "-n" not in course.pytest_command(python, ["-p", "no:xdist"])


# --------------------------------------------------------------------------- which environment


def conda_install(tmp_path):
    """A conda installation's layout: the root (base) and one named environment."""
    root = tmp_path / "miniconda3"
    env = root / "envs" / "course"
    for folder in (root / "conda-meta", root / "condabin", root / "bin", env / "conda-meta"):
        folder.mkdir(parents=True)
    return root, env


def test_the_active_virtual_environment_is_used(course, tmp_path):
    env = course.choose_environment(
        prefix=tmp_path / "venv", base_prefix=tmp_path / "base", environ={}, executable=PY
    )
    assert (env.python, env.prefix) == (PY, tmp_path / "venv")


def test_an_activated_named_conda_environment_is_used(course, tmp_path):
    root, named = conda_install(tmp_path)
    environ = {
        "CONDA_PREFIX": str(named),
        "CONDA_DEFAULT_ENV": "course",
        "CONDA_EXE": str(root / "bin" / "conda"),
    }
    env = course.choose_environment(named, named, environ, PY)
    assert (env.python, env.prefix) == (PY, named)
    assert "'course'" in env.description


@pytest.mark.parametrize(
    "environ_of",
    [
        # base auto-activated at login: the usual case
        lambda root: {"CONDA_PREFIX": str(root), "CONDA_DEFAULT_ENV": "base"},
        # base activated by path, or an older conda: the layout or CONDA_EXE still tell
        lambda root: {"CONDA_PREFIX": str(root), "CONDA_DEFAULT_ENV": str(root)},
        lambda root: {"CONDA_PREFIX": str(root), "CONDA_EXE": str(root / "bin" / "conda")},
    ],
)
def test_conda_base_is_never_installed_into(course, tmp_path, environ_of):
    root, _ = conda_install(tmp_path)
    environ = environ_of(root)
    if "CONDA_EXE" in environ:
        (root / "condabin").rmdir()  # only CONDA_EXE can tell
    env = course.choose_environment(root, root, environ, PY)
    assert env.python is None and env.prefix == course.VENV


def test_conda_prefix_of_another_python_is_ignored(course, tmp_path):
    root, named = conda_install(tmp_path)
    pyenv = tmp_path / "pyenv" / "versions" / "3.11.7"
    pyenv.mkdir(parents=True)
    # A shell with a conda environment active runs a Python that is not that environment's.
    environ = {"CONDA_PREFIX": str(named), "CONDA_DEFAULT_ENV": "course"}
    assert course.choose_environment(pyenv, pyenv, environ, PY).python is None
    # A CONDA_PREFIX that matches, but is no conda environment (no conda-meta).
    environ = {"CONDA_PREFIX": str(pyenv), "CONDA_DEFAULT_ENV": "course"}
    assert course.choose_environment(pyenv, pyenv, environ, PY).python is None


# --------------------------------------------------------------------------- the .venv


def make_venv(path, with_own_pip):
    """A real virtual environment, made quickly: no pip, or a stand-in package named pip."""
    venv.EnvBuilder(with_pip=False, system_site_packages=True, symlinks=os.name != "nt").create(
        path
    )
    if with_own_pip:
        (site_packages,) = [p for p in path.glob("**/site-packages") if p.is_dir()]
        (site_packages / "pip").mkdir()
        (site_packages / "pip" / "__init__.py").write_text("")
    return path


def test_a_healthy_venv_is_kept(course, tmp_path):
    path = make_venv(tmp_path / ".venv", with_own_pip=True)
    assert course.venv_problem(path) is None
    created = []
    assert course.ensure_venv(path, create=lambda *a: created.append(a)) == course.venv_python(path)
    assert created == []


@pytest.mark.skipif(os.name == "nt", reason="POSIX layout and links")
@pytest.mark.parametrize(
    "break_it, problem",
    [
        (lambda p: shutil.rmtree(p), "it does not exist"),
        (lambda p: (p / "pyvenv.cfg").unlink(), "no pyvenv.cfg"),
        (lambda p: (p / "bin" / "python").unlink(), "missing or a broken link"),
        (
            lambda p: ((p / "bin" / "python").unlink(), (p / "bin" / "python").symlink_to(p / "x")),
            "missing or a broken link",
        ),
        (
            lambda p: (
                (p / "bin" / "python").unlink(),
                (p / "bin" / "python").write_text("#!/bin/sh\nexit 3\n"),
                (p / "bin" / "python").chmod(0o755),
            ),
            "does not run",
        ),
        (lambda p: make_venv(p, with_own_pip=False) and None, "pip is not installed in it"),
    ],
    ids=["missing", "no-config", "no-python", "broken-link", "python-fails", "no-own-pip"],
)
def test_a_half_created_venv_is_rebuilt(course, tmp_path, break_it, problem):
    path = make_venv(tmp_path / ".venv", with_own_pip=True)
    if "pip is not" in problem:
        shutil.rmtree(path)
    break_it(path)
    assert problem in course.venv_problem(path)
    created = []

    def create(where, clear):
        created.append((where, clear))
        if where.exists():
            shutil.rmtree(where)
        make_venv(where, with_own_pip=True)

    assert course.ensure_venv(path, create=create) == course.venv_python(path)
    # An existing folder is cleared first; a missing one is simply made.
    assert created == [(path, problem != "it does not exist")]
    assert course.venv_problem(path) is None


def test_a_venv_that_stays_broken_stops_with_the_reason(course, tmp_path, capsys):
    path = tmp_path / ".venv"
    with pytest.raises(SystemExit, match="still unusable: it has no pyvenv.cfg"):
        course.ensure_venv(path, create=lambda where, clear: where.mkdir())
    with pytest.raises(SystemExit, match="could not create .*apt install python3-venv"):
        course.ensure_venv(tmp_path / "other", create=lambda *a: 1 / 0)


# --------------------------------------------------------------------------- the requirements stamp


@pytest.fixture
def project(tmp_path):
    (tmp_path / "requirements.txt").write_text("-e .\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return tmp_path


@pytest.fixture
def installs(course, monkeypatch):
    """What ensure_requirements would run; nothing is installed."""
    calls = []
    monkeypatch.setattr(course, "ensure_torch", lambda python: calls.append("torch"))
    monkeypatch.setattr(course, "ensure_cupy", lambda python: calls.append("cupy"))
    monkeypatch.setattr(course, "python_has", lambda python, code: True)

    def fake_run(cmd, timeout, check=True, **kwargs):
        calls.append([str(c) for c in cmd[1:]])
        return 0

    monkeypatch.setattr(course, "run", fake_run)
    return calls


def test_a_matching_stamp_skips_every_install(course, project, installs):
    stamp = project / "env" / course.STAMP_NAME
    stamp.parent.mkdir()
    stamp.write_text(course.requirements_digest(project) + "\n")
    assert course.ensure_requirements(PY, stamp, root=project) is False
    assert installs == []  # no pip, no network


def test_changed_requirements_reinstall_without_build_isolation(course, project, installs):
    stamp = project / course.STAMP_NAME
    stamp.write_text("an older digest\n")
    assert course.ensure_requirements(PY, stamp, root=project) is True
    requirements = str(project / "requirements.txt")
    pip = ["-m", "pip", "install", "--no-build-isolation", "-r", requirements]
    assert installs == ["torch", pip, "cupy"]
    assert stamp.read_text() == course.requirements_digest(project) + "\n"
    installs.clear()
    assert course.ensure_requirements(PY, stamp, root=project) is False and installs == []
    (project / "requirements.txt").write_text("-e .\nnumpy\n")
    assert course.ensure_requirements(PY, stamp, root=project) is True


def test_build_isolation_stays_when_setuptools_cannot_be_had(course, monkeypatch, installs):
    monkeypatch.setattr(course, "python_has", lambda python, code: False)
    monkeypatch.setattr(course, "run", lambda cmd, timeout, check=True: installs.append(cmd) or 1)
    assert course.build_isolation_args(PY) == []
    ((*_, requirement),) = installs
    assert requirement == course.BUILD_BACKEND_REQUIREMENT


@pytest.mark.parametrize(
    "setuptools_version, has_wheel, ok",
    [
        ("63.2.0", True, False),  # no PEP 660 editable installs yet
        ("65.5.0", False, False),  # editable installs, but bdist_wheel comes from wheel
        ("65.5.0", True, True),
        ("70.1.0", False, True),  # bdist_wheel is setuptools' own
        ("80.9.0", False, True),
    ],
)
def test_the_build_backend_probe(course, tmp_path, setuptools_version, has_wheel, ok):
    (tmp_path / "setuptools").mkdir()
    (tmp_path / "setuptools" / "__init__.py").write_text(f"__version__ = {setuptools_version!r}\n")
    (tmp_path / "wheel").mkdir()
    (tmp_path / "wheel" / "__init__.py").write_text("" if has_wheel else "raise ImportError\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", course.BUILD_BACKEND_PROBE], env=env, capture_output=True
    )
    assert (proc.returncode == 0) == ok, proc.stderr


def test_a_build_cache_older_than_the_package_or_the_labs_is_dropped(course, tmp_path):
    cache = tmp_path / "_build" / ".jupyter_cache"
    (cache / "executed" / "old").mkdir(parents=True)
    (cache / "executed" / "old" / "base.ipynb").write_text("{}")
    (cache / "global.db").write_text("cache")
    (tmp_path / "gpulab").mkdir()
    (tmp_path / "gpulab" / "model.py").write_text("x = 1")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "a_lab.ipynb").write_text("{}")
    inputs = ("gpulab", "notebooks", "_config.yml")  # _config.yml absent: ignored
    for path in (tmp_path / "gpulab" / "model.py", tmp_path / "notebooks" / "a_lab.ipynb"):
        os.utime(path, (1_000, 1_000))
    os.utime(cache / "executed" / "old" / "base.ipynb", (2_000, 2_000))
    os.utime(cache / "global.db", (4_000, 4_000))  # a later build served it from the cache
    assert not course.drop_stale_build_cache(cache, inputs, tmp_path)  # nothing newer: kept
    assert cache.exists()
    # A lab re-recorded after that chapter ran, even if a build has touched the cache since.
    os.utime(tmp_path / "notebooks" / "a_lab.ipynb", (3_000, 3_000))
    (tmp_path / "_build" / ".doctrees").mkdir()
    assert course.drop_stale_build_cache(cache, inputs, tmp_path)
    assert not cache.exists()
    assert not (tmp_path / "_build" / ".doctrees").exists()  # so that every page is read again
    assert not course.drop_stale_build_cache(cache, inputs, tmp_path)  # no cache: nothing to do
