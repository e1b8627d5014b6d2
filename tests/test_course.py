"""course.py: its commands and arguments, which environment it installs into, and when.

Environments are folders made in a temporary directory; nothing is installed with pip.
"""

import importlib.util
import os
import re
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
def commands(course, monkeypatch, tmp_path):
    """The commands build() would run, with what the config file said at that moment."""
    ran = []

    def record(cmd):
        cmd = [str(c) for c in cmd]
        config = course.Path(cmd[cmd.index("--config") + 1]) if "--config" in cmd else None
        ran.append((cmd, config.read_text() if config is not None else None))

    def fake_run_logged(cmd, timeout):  # the book builds
        record(cmd)
        return 0, ""

    def fake_run(cmd, timeout, check=True, **kwargs):  # any other command
        record(cmd)
        return 0

    monkeypatch.setattr(course, "run_logged", fake_run_logged)
    monkeypatch.setattr(course, "run", fake_run)
    # The real build cache and outputs (a developer's _build/) are never touched by these tests.
    monkeypatch.setattr(course, "BUILD_CACHE", course.Path("/nonexistent/gpulab/.jupyter_cache"))
    # Own names too: a build's configuration is written beside _config.yml, named after its
    # output, and a real build (the suite's book build) may be running at the same time.
    monkeypatch.setattr(course, "ZH_OUTPUT", tmp_path / "zh-under-test")
    monkeypatch.setattr(course, "ZH_HTML", tmp_path / "html" / "zh")
    monkeypatch.setattr(course, "GETTEXT_OUTPUT", tmp_path / "i18n-under-test")
    monkeypatch.setattr(course, "GETTEXT_TEMPLATES", tmp_path / "i18n-under-test" / "templates")
    return ran


def test_default_build_is_the_readers_build_in_both_languages(course, commands):
    assert course.build(course.Path(sys.executable)) == 0
    (english, config), (chinese, zh_text) = commands
    strict = ["build", str(course.ROOT), "--warningiserror", "--nitpick", "--keep-going"]
    assert english[3:] == strict and config is None
    # The Chinese edition: the same strict build, with an override and its own output.
    assert chinese[3:8] == strict
    config_path = course.edition_config_path(course.ZH_OUTPUT)
    assert chinese[chinese.index("--config") + 1] == str(config_path)
    assert config_path.parent == course.ROOT  # beside _config.yml: its paths resolve from there
    assert chinese[chinese.index("--path-output") + 1] == str(course.ZH_OUTPUT)
    zh = yaml.safe_load(zh_text)
    assert zh["sphinx"]["config"]["language"] == "zh_CN"
    assert zh["sphinx"]["config"]["html_search_language"] == "zh"
    assert zh["execute"]["cache"] == str(course.BUILD_CACHE)  # the English build's cache
    readers = yaml.safe_load((course.ROOT / "_config.yml").read_text())
    assert zh["sphinx"]["local_extensions"] == readers["sphinx"]["local_extensions"]
    assert zh["sphinx"]["config"]["locale_dirs"] == ["locale/"]
    # The widget scripts load in the order _config.yml gives (RequireJS before what needs it).
    assert list(zh["sphinx"]["config"]["nb_ipywidgets_js"]) == list(
        readers["sphinx"]["config"]["nb_ipywidgets_js"]
    )
    assert not config_path.exists(), "the temporary config is removed"


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_one_edition_only(course, commands, edition):
    assert course.build(course.Path(sys.executable), edition=edition) == 0
    ((cmd, _config),) = commands
    assert ("--config" in cmd) == (edition == "zh")


def test_the_catalogues_are_refreshed_from_a_gettext_build(course, commands):
    assert course.update_translations(course.Path(sys.executable)) == 0
    (extract, config), (ui, _), (questions, _), (merge, _), (tidy, _) = commands
    assert ui[-1] == str(course.GETTEXT_TEMPLATES / "ui.pot")
    assert questions[-2:] == [str(course.ROOT / "book"), str(course.GETTEXT_TEMPLATES /
                                                          "selfchecks.pot")]
    assert extract[extract.index("--custom-builder") + 1] == "gettext"
    assert extract[extract.index("--path-output") + 1] == str(course.GETTEXT_OUTPUT)
    settings = yaml.safe_load(config)
    assert settings["sphinx"]["config"]["gettext_compact"] is False
    assert settings["execute"]["cache"] == str(course.BUILD_CACHE)  # the English build's runs
    assert merge[merge.index("-l") + 1] == "zh_CN"
    assert merge[merge.index("-d") + 1] == str(course.ROOT / "locale")
    # Then every catalogue is tidied (obsolete entries and python-format flags dropped).
    assert "tidy_catalogue" in tidy[2] and tidy[-1] == str(course.ROOT)


def test_solutions_open_build_uses_an_override_and_its_own_output(course, commands):
    assert course.build(course.Path(sys.executable), solutions_open=True) == 0
    ((cmd, config_text),) = commands
    assert cmd[cmd.index("--config") + 1] == str(course.INSTRUCTOR_CONFIG)
    assert cmd[cmd.index("--path-output") + 1] == str(course.INSTRUCTOR_OUTPUT)
    config = yaml.safe_load(config_text)
    selector = config["sphinx"]["config"]["togglebutton_selector"]
    assert selector == ".toggle, .admonition.dropdown:not(.solution)"
    assert config["sphinx"]["config"]["gpulab_language_switch"] is False  # no edition beside
    assert config["sphinx"]["config"]["gpulab_solutions_open"] is True  # the labs' solutions
    readers = yaml.safe_load((course.ROOT / "_config.yml").read_text())
    # Everything else is the readers' configuration.
    assert config["sphinx"]["local_extensions"] == readers["sphinx"]["local_extensions"]
    assert config["sphinx"]["config"]["mathjax_path"] == readers["sphinx"]["config"]["mathjax_path"]
    assert config["repository"] == readers["repository"]
    assert list(config["sphinx"]["config"]["nb_ipywidgets_js"]) == list(
        readers["sphinx"]["config"]["nb_ipywidgets_js"]
    )
    assert not course.INSTRUCTOR_CONFIG.exists(), "the temporary config is removed"


def test_the_instructors_build_shares_the_one_build_cache(course, monkeypatch):
    """The cache's location is written once: the instructors' build follows BUILD_CACHE."""
    elsewhere = course.Path("/elsewhere/_build/.jupyter_cache")
    monkeypatch.setattr(course, "BUILD_CACHE", elsewhere)
    config = course.instructor_config({"execute": {"cache": "x"}})
    assert config["execute"]["cache"] == str(elsewhere)


def test_the_build_cache_is_where_the_readers_build_keeps_it(course):
    """course.py drops BUILD_CACHE when it is stale: it must be the cache the book build uses."""
    config = yaml.safe_load((course.ROOT / "_config.yml").read_text(encoding="utf-8"))
    named = (config.get("execute") or {}).get("cache")
    if named:  # a relative path is taken from the folder the build runs in, the root
        assert (course.ROOT / named).resolve() == course.BUILD_CACHE.resolve()
    else:  # myst-nb's default: beside the HTML output, _build/html
        assert course.BUILD_CACHE == course.ROOT / "_build" / ".jupyter_cache"


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
        (["translations", "--edition", "zh"], "--edition goes with the build command only"),
        (["build", "--edition", "fr"], "invalid choice: 'fr'"),
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
    monkeypatch.setattr(course, "ensure_numba_cuda", lambda python, args: calls.append("numba"))
    monkeypatch.setattr(course, "python_has", lambda python, code, what="": True)

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
    assert installs == ["torch", pip, "cupy", "numba"]
    assert stamp.read_text() == course.requirements_digest(project) + "\n"
    installs.clear()
    assert course.ensure_requirements(PY, stamp, root=project) is False and installs == []
    (project / "requirements.txt").write_text("-e .\nnumpy\n")
    assert course.ensure_requirements(PY, stamp, root=project) is True


def test_a_matching_stamp_installs_again_once_torch_is_gone(course, project, installs, monkeypatch):
    stamp = project / course.STAMP_NAME
    stamp.write_text(course.requirements_digest(project) + "\n")
    asked = []

    def torch_uninstalled(python, code, what=""):
        asked.append(code)
        return code != course.INSTALLED_PROBE

    monkeypatch.setattr(course, "python_has", torch_uninstalled)
    assert course.ensure_requirements(PY, stamp, root=project) is True
    assert asked[0] == course.INSTALLED_PROBE
    assert installs[0] == "torch" and installs[1][-2:] == ["-r", str(project / "requirements.txt")]


def _fake_site(folder, torch=True, gpulab=True):
    """A folder to put on PYTHONPATH holding a stand-in torch and gpulab's install record."""
    folder.mkdir()
    if torch:
        (folder / "torch").mkdir()
        (folder / "torch" / "__init__.py").write_text("")
    if gpulab:
        record = folder / "gpulab-0.1.0.dist-info"
        record.mkdir()
        (record / "METADATA").write_text("Name: gpulab\nVersion: 0.1.0\n")
    return folder


def test_the_installed_probe_finds_torch_and_gpulab_in_the_environment_only(
    course, tmp_path, monkeypatch
):
    env = tmp_path / "env"  # an interpreter that sees no installed packages but PYTHONPATH's
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env)
    python = course.venv_python(env)

    def has_both(site):
        monkeypatch.setenv("PYTHONPATH", str(site))
        return course.python_has(python, course.INSTALLED_PROBE)

    site = _fake_site(tmp_path / "site")
    assert has_both(site)
    (site / "torch" / "__init__.py").unlink()  # an uninstall that left the folder behind
    assert not has_both(site)
    assert not has_both(_fake_site(tmp_path / "no-gpulab", gpulab=False))
    # Found only in the current folder (the repository has a gpulab/ there): not installed.
    monkeypatch.chdir(_fake_site(tmp_path / "here"))
    assert not has_both(_fake_site(tmp_path / "empty", torch=False, gpulab=False))


@pytest.mark.parametrize(
    "failure, reason",
    [
        (subprocess.TimeoutExpired(["python"], 300), "did not finish in 300 s"),
        (PermissionError("not executable"), "could not be run (not executable)"),
    ],
)
def test_a_hung_probe_counts_as_missing_and_says_so(course, monkeypatch, capsys, failure, reason):
    def hang(*args, **kwargs):
        raise failure

    monkeypatch.setattr(course.subprocess, "run", hang)
    assert course.python_has(PY, "import torch", "torch") is False
    assert f"gave up checking for torch with {PY} (it {reason}): taken as missing" in (
        capsys.readouterr().out
    )
    assert course.torch_cuda_major(PY) is None
    # On a GPU machine CuPy is then left out, with a reason, rather than stopping the install.
    installed = []
    monkeypatch.setattr(course, "has_nvidia_gpu", lambda: True)
    monkeypatch.setattr(course, "run", lambda cmd, timeout, check=True: installed.append(cmd))
    course.ensure_cupy(PY)
    assert installed == []
    assert "CuPy is not installed" in capsys.readouterr().out


def test_build_isolation_stays_when_setuptools_cannot_be_had(course, monkeypatch, installs):
    monkeypatch.setattr(course, "python_has", lambda python, code, what="": False)
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


def test_a_new_benchmark_report_drops_the_build_cache(course, tmp_path):
    """The gallery page reads results/: a report added after the chapters ran updates it."""
    cache = tmp_path / "_build" / ".jupyter_cache"
    (cache / "executed").mkdir(parents=True)
    (cache / "executed" / "gallery.ipynb").write_text("{}")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "2026-12-02-cpu.json").write_text("{}")
    os.utime(tmp_path / "results" / "2026-12-02-cpu.json", (1_000, 1_000))
    os.utime(cache / "executed" / "gallery.ipynb", (2_000, 2_000))
    assert not course.drop_stale_build_cache(cache, root=tmp_path)
    (tmp_path / "results" / "2026-12-03-nvidia-h200.json").write_text("{}")
    os.utime(tmp_path / "results" / "2026-12-03-nvidia-h200.json", (3_000, 3_000))
    assert course.drop_stale_build_cache(cache, root=tmp_path)
    assert not cache.exists()


def test_every_folder_a_chapter_reads_is_a_build_cache_input(course):
    """A path like "../results" in a chapter's code is read at build time: its top folder must
    be among the inputs that make a stale cache go."""
    code_cells = re.compile(r"^```\{code-cell\}.*?^```", re.M | re.S)
    read = set()
    for chapter in (course.ROOT / "book").glob("*.md"):
        for cell in code_cells.findall(chapter.read_text(encoding="utf-8")):
            read |= set(re.findall(r"[\"']\.\./([\w.-]+)", cell))
    assert {"results", "notebooks"} <= read  # the gallery and the labs' tables, at least
    assert read <= set(course.CACHE_INPUTS), read - set(course.CACHE_INPUTS)


# What jupyter-book 1.x (myst-nb) prints when a chapter cell fails, shortened, colours kept:
# the cause comes first, then ~130 lines of tracebacks of the build itself.
FAILED_BUILD_LOG = """\
/repo/book/page.md: Executing notebook using local CWD [mystnb]
\x1b[91m/repo/book/page.md: WARNING: Executing notebook failed: CellExecutionError
Traceback (most recent call last):
  File "nbclient/client.py", line 918, in _check_raise_for_error
    raise CellExecutionError.from_cell_and_msg(cell, exec_reply_content)
nbclient.exceptions.CellExecutionError: An error occurred while executing the following cell:
------------------
import math
y = math.sqrt(-1)
------------------


\x1b[0;31m---------------------------------------------------------------------------\x1b[0m
\x1b[0;31mValueError\x1b[0m                                Traceback (most recent call last)
Cell \x1b[0;32mIn[2], line 2\x1b[0m
\x1b[1;32m      1\x1b[0m \x1b[38;5;28;01mimport\x1b[39;00m math
\x1b[0;32m----> 2\x1b[0m y \x1b[38;5;241m=\x1b[39m math.sqrt(-1)

\x1b[0;31mValueError\x1b[0m: math domain error

 [mystnb.exec]\x1b[39;49;00m
/repo/book/other.md: WARNING: Executing notebook failed: CellTimeoutError
Traceback (most recent call last):
nbclient.exceptions.CellTimeoutError: A cell timed out while it was being executed, after 60 s.
 [mystnb.exec]
\x1b[91mException occurred:\x1b[39;49;00m
myst_nb.core.execute.base.ExecutionError: /repo/book/page.md
Traceback (most recent call last):
RuntimeError: There was an error in building your book. Look above for the cause.
"""


def test_failed_cells_names_page_cell_line_and_error(course):
    assert course.failed_cells(FAILED_BUILD_LOG) == [
        "/repo/book/page.md, code cell 2 (line 2: y = math.sqrt(-1)): "
        "ValueError: math domain error",
        "/repo/book/other.md: CellTimeoutError: A cell timed out while it was being executed, "
        "after 60 s.",
    ]
    assert course.failed_cells("build succeeded.\n") == []


def test_a_page_inside_the_repository_is_named_relative_to_it(course):
    log = FAILED_BUILD_LOG.replace("/repo/", f"{course.ROOT}/")
    assert course.failed_cells(log)[0].startswith("book/page.md, code cell 2 ")


def test_a_failed_build_ends_with_the_failing_cells(course, capsys):
    # a stand-in for jupyter-book: prints the log of a failed build and exits with status 1
    script = f"import sys; sys.stdout.write({FAILED_BUILD_LOG!r}); sys.exit(1)"
    assert course.run_build([sys.executable, "-c", script]) == 1
    out = capsys.readouterr().out
    assert "There was an error in building your book" in out  # the build's output is shown
    summary = out[out.index("Look above for the cause.") :].splitlines()[1:]
    assert summary[0] == "[course] the build failed because a chapter cell raised an error:"
    assert summary[1].endswith(
        "code cell 2 (line 2: y = math.sqrt(-1)): ValueError: math domain error"
    )
    assert "CellTimeoutError" in summary[2] and len(summary) == 3


def test_a_build_that_succeeds_adds_no_summary(course, capsys):
    assert course.run_build([sys.executable, "-c", "print('build succeeded.')"]) == 0
    assert capsys.readouterr().out == "build succeeded.\n"


@pytest.mark.parametrize("cuda_major", ["12", "13"])
def test_a_gpu_machine_gets_numba_cuda_for_torchs_cuda_major(
    course, root, monkeypatch, cuda_major
):
    installed = []
    monkeypatch.setattr(course, "has_nvidia_gpu", lambda: True)
    monkeypatch.setattr(course, "python_has", lambda python, code, what="": False)
    monkeypatch.setattr(course, "torch_cuda_major", lambda python: cuda_major)
    monkeypatch.setattr(course, "run", lambda cmd, timeout, check=True: installed.append(cmd))
    course.ensure_numba_cuda(PY, ["--no-build-isolation"])
    extra = f"kernels-cu{cuda_major}"
    assert installed == [
        [PY, "-m", "pip", "install", "--no-build-isolation", "-e", f".[{extra}]"]
    ]
    # The extra exists, and pins numba-cuda with the CUDA libraries of that major.
    pyproject = (root / "pyproject.toml").read_text()
    assert f'\n{extra} = ["numba-cuda[cu{cuda_major}]>=0.22"]\n' in pyproject


def test_numba_cuda_is_left_out_without_a_gpu_or_for_a_cuda_it_has_no_libraries_for(
    course, monkeypatch, capsys
):
    installed = []
    monkeypatch.setattr(course, "run", lambda cmd, timeout, check=True: installed.append(cmd))
    monkeypatch.setattr(course, "python_has", lambda python, code, what="": False)
    monkeypatch.setattr(course, "has_nvidia_gpu", lambda: False)
    course.ensure_numba_cuda(PY, [])
    monkeypatch.setattr(course, "has_nvidia_gpu", lambda: True)
    monkeypatch.setattr(course, "torch_cuda_major", lambda python: "11")
    course.ensure_numba_cuda(PY, [])
    assert installed == []
    assert "torch reports CUDA 11, for which numba-cuda has no libraries" in (
        capsys.readouterr().out
    )


def test_course_py_and_the_setup_cell_know_the_same_numba_cuda_extras(course, root):
    from gpulab.course.labs import NUMBA_CUDA_MAJORS

    assert course.NUMBA_CUDA_MAJORS == NUMBA_CUDA_MAJORS
    pyproject = (root / "pyproject.toml").read_text()
    for major in NUMBA_CUDA_MAJORS:
        assert f'\nkernels-cu{major} = ["numba-cuda[cu{major}]>=0.22"]\n' in pyproject
