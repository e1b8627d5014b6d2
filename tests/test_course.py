"""course.py: the readers' build is unchanged; ``build --solutions-open`` is the instructors'."""

import importlib.util
import sys

import pytest
import yaml


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
