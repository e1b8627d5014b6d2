"""The notebook runner the tests use: a kernel that dies ends the run, it does not hang it."""

import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# Run in a process of its own, so that a runner that hangs fails this test at the timeout
# below instead of stalling the suite.
SCRIPT = textwrap.dedent(
    """
    import os, sys
    import nbformat
    from nbclient.exceptions import DeadKernelError
    from run_notebook import run_notebook

    cells = ["import os; print(os.getcwd(), os.environ['GPULAB_RUNNER_CHECK'])",
             "import signal; os.kill(os.getpid(), signal.SIGKILL)",
             "print('never runs')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env = dict(os.environ, GPULAB_RUNNER_CHECK="env-passed")
    try:
        run_notebook(nb, sys.argv[1], env, timeout_s=120)
    except DeadKernelError as err:
        print("DeadKernelError:", err)
    print("first cell:", nb.cells[0].outputs[0]["text"].strip())
    """
)


def test_a_kernel_killed_mid_cell_ends_the_run_with_dead_kernel_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=100,  # the cell timeout is 120 s: only kernel-death detection ends it sooner
    )
    assert proc.returncode == 0, proc.stderr
    assert "DeadKernelError: Kernel died" in proc.stdout
    assert f"first cell: {tmp_path} env-passed" in proc.stdout  # cwd and env reach the kernel
