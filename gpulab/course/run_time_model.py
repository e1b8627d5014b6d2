"""How long a lab will take to record on a GPU class it was never recorded on: an ESTIMATE.

A recording of the same device class (:func:`gpulab.course.recordings.device_class`) is the
best guide, and :func:`gpulab.course.recordings.lab_estimate` uses it whenever there is
one. Without it, the model is

    GPU run time ~ recorded CPU run time + sum over compilers of (compiles x seconds per compile)

and nothing else: no speed-up factor, no invented figure. Its two inputs:

* the **recorded CPU run time** of the lab (``gpulab.run_time_s["cpu"]``, written by
  ``python -m gpulab record``). A GPU run uses larger problem sizes (:func:`gpulab.scale`)
  on a faster device; the model does not guess how these two balance, and says so.
* the **compiles** a GPU run adds, which a CPU run does not pay (there Triton is
  interpreted, Numba's kernels run in its simulator and CUDA-only cells are skipped):
  :func:`compile_counts` counts their call sites in the lab's code (a site that reuses a
  kernel an earlier site compiled counts again, a kernel compiled again for new shapes or
  constants does not: a count of sites, not of compiles measured), and the
  seconds per compile are **measured** figures the caller passes (``--compile-s
  triton=SECONDS`` on the command line). The course ships no such figure until one is
  measured on a GPU machine; a lab whose compiles have no measured cost gets an estimate
  marked incomplete ("at least"), which a plan treats as unknown
  (:mod:`gpulab.course.record_plan`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpulab.units import format_duration

__all__ = [
    "COMPILERS",
    "COMPILE_SITES",
    "RunTimeEstimate",
    "compile_counts",
    "estimate_gpu_run_time",
    "parse_compile_costs",
]

#: The compilers a GPU run of a lab pays for, in the order they are reported.
COMPILERS = ("triton", "numba", "inductor")

#: What counts as one compile in a lab's code, per compiler (regular expressions, each match
#: one compile): the course's Triton kernels (``gpulab.kernels.triton_kernels``) and a
#: learner's Triton kernel graded on the GPU; Numba kernels compiled for the GPU, directly, by
#: ``ck.time_launch`` when it is handed a kernel function (a course kernel built in the call,
#: or a matmul kernel given with its grid) rather than one compiled already, or by the kernel
#: gym when it times them; a ``torch.compile`` call (Inductor), also through
#: ``gpulab.labkit.launch_overhead.time_compiled``.
COMPILE_SITES = {
    "triton": (r"\btk\.(?:vector_add|softmax|matmul|bias_gelu)\(", r"\bgrade_triton\("),
    "numba": (
        r"\bcompile_for_gpu\(",
        r"\bck\.time_launch\(\s*(?:ck\.\w|kernel, \()",
        r"\bgrade_kernel\([^\n]*time_on_gpu=",
        r"@cuda\.jit\b",
    ),
    "inductor": (r"\btorch\.compile\(", r"\btime_compiled\("),
}


def _code(nb: dict) -> str:
    cells = nb.get("cells", [])
    return "\n".join("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code")


def compile_counts(nb: dict) -> dict[str, int]:
    """Compiles a GPU run of the notebook ``nb`` adds, per compiler, counted from its code.

    Parameters
    ----------
    nb : dict
        The lab notebook as JSON (``json.load``) or an ``nbformat`` notebook.

    Returns
    -------
    dict
        Count per compiler in :data:`COMPILERS`: each match of :data:`COMPILE_SITES` in the
        code cells (comments included) once.

    Examples
    --------
    >>> nb = {"cells": [{"cell_type": "code", "source": "y = tk.softmax(x)\\nz = tk.matmul(a, b)"},
    ...                 {"cell_type": "code", "source": "f = torch.compile(model)"},
    ...                 {"cell_type": "markdown", "source": "torch.compile( in prose"}]}
    >>> compile_counts(nb)
    {'triton': 2, 'numba': 0, 'inductor': 1}
    """
    from gpulab._checks import wrong_type

    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise wrong_type("nb", nb, "a notebook as a dict with a 'cells' list (json.load)")
    code = _code(nb)
    return {
        compiler: sum(len(re.findall(pattern, code)) for pattern in COMPILE_SITES[compiler])
        for compiler in COMPILERS
    }


def parse_compile_costs(text: str | None) -> dict[str, float]:
    """Seconds per compile, from ``"triton=2.5,numba=0.8"`` (the ``--compile-s`` option).

    Each figure must be one measured where the labs will run (the first call of a kernel
    minus a later call); the course ships none.

    >>> parse_compile_costs("triton=2.5, inductor=30")
    {'triton': 2.5, 'inductor': 30.0}
    >>> parse_compile_costs(None)
    {}
    >>> parse_compile_costs("cuda=1")
    Traceback (most recent call last):
    ...
    ValueError: compile_s='cuda=1': 'cuda' is not a compiler; use triton, numba, inductor
    """
    from gpulab._checks import wrong_type

    if text is None:
        return {}
    if not isinstance(text, str):
        raise wrong_type("compile_s", text, "a str such as 'triton=2.5,numba=0.8'")
    costs = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in COMPILERS:
            raise ValueError(
                f"compile_s={text!r}: {name!r} is not a compiler; use {', '.join(COMPILERS)}"
            )
        try:
            seconds = float(value)
        except ValueError:
            seconds = float("nan")
        if not 0 <= seconds <= 3600:  # nan fails too
            raise ValueError(
                f"compile_s={text!r}: {name}={value.strip()!r} must be seconds per compile, "
                "from 0 to 3600"
            )
        costs[name] = seconds
    return costs


@dataclass(frozen=True)
class RunTimeEstimate:
    """A lab's expected run time on one device class and what it rests on.

    ``seconds`` is None where nothing is known; ``complete`` is False where the model left
    out compiles of unmeasured cost (``unpriced``: their count per compiler), so that
    ``seconds`` is a lower bound; ``recorded`` is True for a recording of the same class.
    """

    seconds: float | None
    basis: str
    recorded: bool = False
    unpriced: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.seconds is not None and not self.unpriced

    def shown(self) -> str:
        """The seconds as a table shows them: ``"12 s"``, ``">= 14 s"`` or ``"-"``."""
        if self.seconds is None:
            return "-"
        return ("" if self.complete else ">= ") + format_duration(self.seconds)


def estimate_gpu_run_time(
    cpu_s: float | None, counts: dict[str, int], costs: dict[str, float]
) -> RunTimeEstimate:
    """The model's ESTIMATE: the CPU run time plus each compile at its measured cost.

    Parameters
    ----------
    cpu_s : float or None
        The lab's recorded CPU run time, in seconds (None: never recorded, no estimate).
    counts : dict
        Compiles per compiler (:func:`compile_counts`).
    costs : dict
        Measured seconds per compile per compiler (:func:`parse_compile_costs`); a compiler
        missing here leaves the estimate incomplete.

    Examples
    --------
    >>> e = estimate_gpu_run_time(14.0, {"triton": 4, "numba": 0, "inductor": 0}, {"triton": 2.0})
    >>> e.seconds, e.complete
    (22.0, True)
    >>> print(e.basis)
    ESTIMATE: the CPU run's 14 s + 4 Triton compiles x 2.0 s (measured cost given)
    >>> e = estimate_gpu_run_time(14.0, {"triton": 4, "numba": 2, "inductor": 0}, {})
    >>> e.shown(), e.unpriced
    ('>= 14 s', {'triton': 4, 'numba': 2})
    """
    from gpulab._checks import non_negative_number

    if cpu_s is None:
        return RunTimeEstimate(None, "never recorded on CPU: no estimate")
    cpu_s = non_negative_number("cpu_s", cpu_s)
    names = {"triton": "Triton", "numba": "Numba", "inductor": "Inductor"}
    seconds, parts, unpriced = cpu_s, [], {}
    for compiler in COMPILERS:
        n = counts.get(compiler, 0)
        if not n:
            continue
        if compiler in costs:
            seconds += n * costs[compiler]
            parts.append(f"{n} {names[compiler]} compiles x {costs[compiler]:.1f} s")
        else:
            unpriced[compiler] = n
    basis = f"ESTIMATE: the CPU run's {format_duration(cpu_s)}"
    basis += "".join(f" + {part}" for part in parts)
    basis += " (measured cost given)" if parts else ""
    if unpriced:
        listed = ", ".join(f"{n} {names[c]}" for c, n in unpriced.items())
        basis += f" + {listed} compile(s) of unmeasured cost (--compile-s): a lower bound"
    if not parts and not unpriced:
        basis += "; no compiles; the GPU's larger problem sizes are not modelled"
    return RunTimeEstimate(seconds, basis, unpriced=unpriced)
