"""Install the rehearsal GPU (``fake_cuda.py``) when ``GPULAB_REHEARSAL`` names one.

Python imports ``sitecustomize`` at start-up from its path, so a kernel or a ``torchrun``
rank started with this folder (and ``tests/``) on ``PYTHONPATH`` is a rehearsal process
before the first line of a lab runs.
"""

import fake_cuda

fake_cuda.install_from_environment()
