"""Where things live: the package's import graph has no cycle, pure data sits near the bottom,
no module reaches into another's private names, and ``import gpulab`` and the cost models
load with the standard library alone (the live book runs them without NumPy or torch)."""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gpulab"

#: The longest chain of imports (modules on it) the layout allows. Before the package was
#: regrouped it was 14 (``__main__`` down to the precision names, through a cycle).
LONGEST_CHAIN_LIMIT = 10


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path) -> list[tuple[str, list[str], bool]]:
    """(module, names, at top level) for every import of a gpulab module in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, [], id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] + [node.module or ""]
                module = ".".join(p for p in base if p)
            else:
                module = node.module
            found.append((module, [a.name for a in node.names], id(node) in top))
    return [f for f in found if f[0] == "gpulab" or f[0].startswith("gpulab.")]


@cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the gpulab modules it imports, at top level or inside a function.

    ``from gpulab.x import y`` counts as an edge to ``gpulab.x.y`` when that is a module, and
    to ``gpulab.x`` otherwise. A submodule's import of its parent package is implied by Python
    and is not an edge; an import of another package is (its ``__init__`` runs).
    """
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for module, names, _ in _imports(name, path):
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules]
            if len(targets) < len(names) or not names:
                targets.append(module)
            for target in targets:
                parts = target.split(".")
                for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b too
                    prefix = ".".join(parts[:i])
                    if prefix in modules and not name.startswith(prefix + ".") and prefix != name:
                        edges.add(prefix)
        graph[name] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _longest_chain(graph: dict[str, set[str]]) -> list[str]:
    @cache
    def longest(node: str) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for nxt in graph[node]:
            if len(chain := longest(nxt)) > len(best):
                best = chain
        return (node, *best)

    return list(max((longest(n) for n in sorted(graph)), key=len))


def test_the_graph_sees_the_imports_it_should():
    graph = import_graph()
    assert "gpulab.hardware.specs" in graph["gpulab.costmodels.chooser"]  # top level
    assert "gpulab.measure.bench" in graph["gpulab.costmodels.roofline"]  # inside a function
    assert "gpulab.hardware" in graph["gpulab.costmodels.chooser"]  # the package's __init__
    assert "gpulab" not in graph["gpulab.hardware.specs"]  # the parent is implied


def test_a_cycle_is_found_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert _longest_chain({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"c"}}) == ["a", "b", "c"]


def test_the_package_imports_have_no_cycle():
    assert _cycle(import_graph()) is None


def test_the_longest_import_chain_is_shorter_than_before_the_regrouping():
    chain = _longest_chain(import_graph())
    assert len(chain) <= LONGEST_CHAIN_LIMIT, " -> ".join(chain)


def test_the_spec_registry_depends_on_nothing_but_the_checks_and_the_precision_names():
    graph = import_graph()
    assert graph["gpulab.hardware.specs"] == {"gpulab._checks", "gpulab.hardware.precision"}
    assert graph["gpulab.hardware.precision"] == {"gpulab._checks"}
    assert graph["gpulab._checks"] == set()


#: The package's layers, bottom first: a module may import its own layer and those below it,
#: never one above, at top level or inside a function. The top-level modules (``_checks``,
#: ``units``, ``palette``, ...) are the bottom; ``gpulab`` itself (lazy exports) and
#: ``gpulab.__main__`` sit on top of everything.
LAYERS = ("hardware", "measure", "costmodels", "kernels", "labkit", "diagrams", "course")


def _layer(module: str) -> int:
    parts = module.split(".")
    if module in ("gpulab", "gpulab.__main__"):
        return len(LAYERS) + 1
    if len(parts) == 2 and parts[1] not in LAYERS:
        return 0  # a top-level module: the base everything may use
    return LAYERS.index(parts[1]) + 1


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{name} imports {target}"
        for name, targets in graph.items()
        for target in targets
        if _layer(target) > _layer(name)
    )


def test_every_module_has_a_layer():
    subpackages = {n.split(".")[1] for n in _modules() if n.count(".") >= 2}
    assert subpackages == set(LAYERS)


def test_an_upward_import_is_found_when_there_is_one():
    graph = {
        "gpulab.costmodels.chooser": {"gpulab.labkit.networks", "gpulab.hardware.specs"},
        "gpulab.labkit.plotting": {"gpulab.palette", "gpulab.costmodels.roofline"},
        "gpulab.units": {"gpulab.measure.bench"},
        "gpulab.__main__": {"gpulab.course.cli"},
    }
    assert _upward_imports(graph) == [
        "gpulab.costmodels.chooser imports gpulab.labkit.networks",
        "gpulab.units imports gpulab.measure.bench",
    ]


def test_imports_only_point_down_the_layers():
    """Counting imports inside functions: a cost model that imports lab code to build a
    network, or for its colours, runs up the layers even where it loads lazily."""
    assert _upward_imports(import_graph()) == []


def test_no_module_imports_another_modules_private_names():
    offences = []
    for name, path in _modules().items():
        for module, names, _ in _imports(name, path):
            for imported in names:
                private = imported.startswith("_") and not imported.startswith("__")
                if private and f"{module}.{imported}" not in _modules():
                    offences.append(f"{name} imports {module}.{imported}")
    assert offences == []


def test_module_names_do_not_shadow_their_own_functions():
    """``gl.check`` must be the function: no module is named after a public name of gl."""
    import gpulab as gl

    top_modules = {n.split(".")[1] for n in _modules() if n.count(".") == 1}
    assert top_modules & set(gl.__all__) - {"diagrams"} == set()


# What the live book runs in the browser: it has the standard library and gpulab, nothing else.
STDLIB_ONLY = (
    "gpulab",
    "gpulab.units",
    "gpulab.hardware.specs",
    "gpulab.hardware.precision",
    "gpulab.hardware.sm",
    "gpulab.hardware.interconnects",
    "gpulab.hardware.memory_ladder",
    "gpulab.costmodels.flops",
    "gpulab.costmodels.roofline",
    "gpulab.costmodels.memory",
    "gpulab.costmodels.comms",
    "gpulab.costmodels.parallelism",
    "gpulab.costmodels.training_time",
    "gpulab.costmodels.published_models",
    "gpulab.costmodels.published_runs",
    "gpulab.costmodels.inference",
    "gpulab.costmodels.chooser",
    "gpulab.palette",
    "gpulab.kernels.occupancy",
    "gpulab.labkit.calculators",
    "gpulab.labkit.planning",
    "gpulab.labkit.svgchart",
)

BLOCKER = """
import sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"numpy", "torch", "matplotlib", "ipywidgets", "scipy"}:
            raise ImportError(f"{name} is blocked: the module must load without it")
        return None

sys.meta_path.insert(0, Blocked())
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
"""


def test_the_calculator_modules_import_with_the_standard_library_alone():
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKER, *STDLIB_ONLY],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PACKAGE.parent,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_calculators_compute_without_numpy_or_torch():
    """Importing is not enough: the calculators' arithmetic runs with NumPy blocked too."""
    script = BLOCKER + (
        "import gpulab as gl\n"
        "m = gl.estimate_training_memory(1_300_000_000, precision='amp_bf16', optimizer='adam')\n"
        "assert m.total_bytes == 16 * 1_300_000_000\n"
        "assert gl.predict_time('T4', 1e12, 1e9, precision='fp16').time_s > 0\n"
        "assert gl.dp_step_time(0.1, 1e9, 8, link='NVLink 4').comm_s > 0\n"
        "assert gl.pipeline_bubble(4, 8) == 3 / 11\n"
        "assert gl.simulate_pipeline([1.0, 1.0], [2.0, 2.0], 4).bubble > 0\n"
        "alpha, beta = gl.fit_alpha_beta([1e3, 1e6], [1e-5 + 1e3 / 1e10, 1e-5 + 1e6 / 1e10], 2)\n"
        "assert abs(beta - 1e10) < 1e3, beta\n"
        "assert gl.occupancy('A100 80GB', threads_per_block=256).warps_per_sm == 64\n"
        "plan = gl.plan_training('BERT-base', batch_size=8)\n"
        "assert plan.options\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        cwd=PACKAGE.parent,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("module", ["numpy", "torch"])
def test_the_blocker_really_blocks(module):
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKER, module], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0 and "is blocked" in proc.stderr
