"""Course-authoring tools: lab metadata, recording, student copies, workshops, the gallery.

These are for the people who write and teach the course, not for learners, so
``import gpulab`` never imports them. They need the optional extra ``gpulab[course]``
(nbformat, nbclient, PyYAML, jsonschema), installed from a checkout of the course::

    pip install -e ".[course]"

Import what you need from here, e.g. ``from gpulab.course import lab_table``, or use the
command line: ``python -m gpulab record [--all] | stamp | student`` (see
:mod:`gpulab.course.cli`).
"""

from __future__ import annotations

from gpulab.course.labs import LabInfo, lab_info, lab_table, list_labs, stamp_setup_cells
from gpulab.course.student import student_copy, write_student_copies
from gpulab.course.workshop import Agenda, make_agenda

__all__ = [
    "Agenda",
    "LabInfo",
    "lab_info",
    "lab_table",
    "list_labs",
    "make_agenda",
    "stamp_setup_cells",
    "student_copy",
    "write_student_copies",
]
