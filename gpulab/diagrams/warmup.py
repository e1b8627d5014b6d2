"""The kernel warm-up's grader as its lab calls it: grade a step, then draw its record.

The steps are defined in :mod:`gpulab.kernels.gym_warmup` and graded by
:func:`gpulab.kernels.gym.grade_kernel`; the drawing of which thread touched which element
is :func:`gpulab.diagrams.kernels.draw_touches`. Grading sits below drawing in the package's
layers, so the call that does both lives here.

See also the lab "Kernel warm-up" (``notebooks/kernel_warmup_lab.ipynb``).

Examples
--------
>>> from gpulab.diagrams import warmup
>>> def triple(a, out):
...     out[cuda.threadIdx.x] = 3 * a[cuda.threadIdx.x]
>>> warmup.grade(triple, "map", draw=False).passed
Kernel gym: triple on task 'map'
  right  n = 1
  right  n = 5
  right  n = 12
Passed: right on every shape, every target met.
True
"""

from __future__ import annotations

from gpulab.kernels.gym_warmup import CONV_TAPS, TASKS, WARMUP_BLOCK, get_warmup_task

__all__ = ["CONV_TAPS", "TASKS", "WARMUP_BLOCK", "grade"]


def grade(kernel, name, *, draw: bool = True):
    """Grade ``kernel`` on the warm-up step ``name``, print the report and draw the touches.

    Parameters
    ----------
    kernel : function or None
        The kernel (None: not written yet; the report says so, and nothing is drawn).
    name : str or Task
        The step, one of :data:`TASKS`.
    draw : bool
        Also draw which thread touched which element on the step's last shape
        (:func:`gpulab.diagrams.draw_touches`); where the kernel did not run to the end,
        a sentence says why nothing is drawn.

    Returns
    -------
    GradeReport
        As :func:`gpulab.kernels.gym.grade_kernel` returns it.
    """
    from gpulab._checks import flag
    from gpulab.kernels.gym import grade_kernel

    task = get_warmup_task(name)
    flag("draw", draw)
    report = grade_kernel(kernel, task)
    if not draw or not report.answered:
        return report
    if report.counts is None:
        print("No drawing: the kernel did not run to the end on every shape.")
        return report
    from gpulab.diagrams.kernels import draw_touches

    draw_touches(report)
    return report
