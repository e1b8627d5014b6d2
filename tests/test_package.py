"""The package's shape: a quick, lazy ``import gpulab``, every public name resolving, and
the course tools kept apart from the learner API."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types

import pytest

import gpulab as gl
from gpulab.__main__ import main

HEAVY = ("matplotlib.pyplot", "ipywidgets", "gpulab.course", "nbformat", "nbclient", "yaml")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(out.stdout.split())


def test_import_gpulab_loads_no_plotting_widgets_or_course_tools():
    loaded = _modules_after("import gpulab")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_first_use_loads_only_what_it_needs():
    loaded = _modules_after("import gpulab as gl\ngl.get_spec('t4')")
    assert "gpulab.hardware.specs" in loaded
    assert not loaded & {"matplotlib.pyplot", "gpulab.course", "torch"}


#: The modules in the learner's namespace: gl.diagrams.draw_fusion, gl.networks.resnet50, ...
LEARNER_MODULES = {"diagrams": "gpulab.diagrams", "envs": "gpulab.labkit.envs",
                   "networks": "gpulab.labkit.networks"}  # fmt: skip


@pytest.mark.parametrize("name", [n for n in gl.__all__ if n != "__version__"])
def test_every_public_name_resolves_to_what_it_names(name):
    value = getattr(gl, name)
    if name in LEARNER_MODULES:
        assert isinstance(value, types.ModuleType) and value.__name__ == LEARNER_MODULES[name]
    else:
        assert not isinstance(value, types.ModuleType), f"gl.{name} is a module, not the API"
        if callable(value) and name != "setup_lab":
            assert value.__module__.startswith("gpulab."), value.__module__
    assert name in dir(gl)


def test_the_learner_namespace_stays_small():
    assert len(gl.__all__) <= 120


def test_every_subpackage_module_is_reachable_from_gl():
    """Records and less-used functions are not top-level, but one attribute path away."""
    assert gl.measure.bench.BenchResult.__name__ == "BenchResult"
    assert gl.costmodels.memory.MemoryEstimate.__name__ == "MemoryEstimate"
    assert gl.hardware.specs.DeviceSpec.__name__ == "DeviceSpec"
    assert gl.kernels.simulator.KernelCounts.__name__ == "KernelCounts"
    assert callable(gl.diagrams.draw_fusion) and callable(gl.diagrams.recorded.output_record)
    with pytest.raises(AttributeError, match="no_such_module"):
        gl.costmodels.no_such_module  # noqa: B018


def test_names_shared_with_their_module_stay_functions_after_the_module_is_imported():
    import gpulab.labkit.answers
    import gpulab.labkit.training_loop  # noqa: F401

    assert callable(gl.check) and gl.check.__module__ == "gpulab.labkit.answers"
    assert callable(gl.train) and gl.train.__module__ == "gpulab.labkit.training_loop"
    assert callable(gl.provenance) and gl.provenance.__module__ == "gpulab.measure.provenance"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        gl.no_such_thing  # noqa: B018


def test_launch_is_the_grid_simulator_and_torchrun_lives_in_distributed():
    from gpulab.kernels import simulator as simt
    from gpulab.labkit import launcher as distributed

    assert gl.launch is simt.launch
    assert gl.torchrun is distributed.torchrun


def test_course_tools_are_not_part_of_the_learner_api():
    for name in ("lab_table", "list_labs", "make_agenda", "write_student_copies", "LabInfo"):
        assert name not in gl.__all__
    from gpulab import course

    assert callable(course.lab_table) and callable(course.write_student_copies)


def test_learner_cli_hands_course_commands_to_the_course_cli(root, tmp_path, capsys):
    # 'student' is a course command: python -m gpulab must still offer it.
    labs = tmp_path / "labs"
    labs.mkdir()
    shutil.copy(root / "notebooks" / "gpu_basics_lab.ipynb", labs)
    assert main(["student", str(tmp_path / "out"), "--notebooks", str(labs)]) == 0
    assert "wrote 1 student copy" in capsys.readouterr().out
    assert (tmp_path / "out" / "gpu_basics_lab.ipynb").is_file()
    with pytest.raises(SystemExit):
        main(["no-such-command"])


def test_course_command_without_the_course_extra_says_what_to_install(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "nbformat", None)  # as if gpulab[course] were missing
    (tmp_path / "x_lab.ipynb").write_text("{}")
    assert main(["student", str(tmp_path / "out"), "--notebooks", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs nbformat" in err and "pip install -e '.[course]'" in err
