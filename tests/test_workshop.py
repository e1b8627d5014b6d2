"""The agenda generator: fits the time, has breaks, follows the labs' metadata, rejects nonsense."""

from pathlib import Path

import pytest

from gpulab import course
from gpulab.course.workshop import (
    DEFAULTS,
    STANDARD_FORMATS,
    lab_minutes,
    labs_in_course_order,
    make_agenda,
    standard_agendas,
)


def fake_lab(i: int, cpu_s: float = 60.0, cuda_s: float | None = None) -> course.LabInfo:
    run = {"cpu": cpu_s} | ({"cuda:Tesla T4": cuda_s} if cuda_s is not None else {})
    return course.LabInfo(
        Path(f"notebooks/lab{i}_lab.ipynb"), f"Lab {i}", f"book/ch{i}", "any", run
    )


TEN_LABS = [fake_lab(i, cpu_s=40.0 + 30 * i) for i in range(10)]


@pytest.mark.parametrize("minutes", [60, 90, 120, 210, 300, 390, 480])
def test_agenda_fits_in_its_time_and_slots_are_contiguous(minutes):
    agenda = make_agenda(TEN_LABS, minutes)
    assert agenda.used_minutes <= minutes
    assert agenda.spare_minutes == minutes - agenda.used_minutes >= 0
    for before, after in zip(agenda.slots, agenda.slots[1:], strict=False):
        assert after.start_min == before.end_min
    assert agenda.slots[0].kind == "welcome" and agenda.slots[-1].kind == "wrap-up"
    assert list(agenda.covered) + list(agenda.left_out) == TEN_LABS  # in course order


@pytest.mark.parametrize("minutes", [210, 390, 480])
def test_no_session_runs_past_the_limit_without_a_break(minutes):
    agenda = make_agenda(TEN_LABS, minutes)
    assert any(s.kind in ("break", "lunch") for s in agenda.slots)
    limit, session, first_in_session = DEFAULTS["session_max_min"], 0, True
    for slot, after in zip(agenda.slots, agenda.slots[1:], strict=False):
        if slot.kind in ("break", "lunch"):
            session, first_in_session = 0, True
        elif slot.kind == "chapter":  # a chapter and its lab are never split by a break
            assert after.kind == "lab" and after.lab is slot.lab
            block = slot.minutes + after.minutes
            assert first_in_session or session + block <= limit, (slot, session)
            first_in_session = False
            session += block
        elif slot.kind == "welcome":
            session += slot.minutes


def test_full_day_has_one_lunch_and_shorter_days_none():
    agendas = {a.name: a for a in standard_agendas(TEN_LABS)}
    full = agendas["Full day"]
    assert [s.kind for s in full.slots].count("lunch") == 1
    for name in ("90-minute taster", "Half day"):
        assert "lunch" not in [s.kind for s in agendas[name].slots]


def test_longer_formats_cover_more_and_say_what_does_not_fit():
    taster, half, full = standard_agendas(TEN_LABS)
    assert taster.covered[0] is TEN_LABS[0]  # the taster starts at chapter 1
    assert len(taster.covered) <= len(half.covered) <= len(full.covered) < len(TEN_LABS)
    text = full.to_markdown(link_prefix="../")
    assert f"Does not fit in {full.minutes} minutes: {len(full.left_out)} lab(s)" in text
    assert full.left_out[0].title in text
    assert "(../notebooks/lab0_lab.ipynb)" in text and "(../book/ch0.md)" in text


def test_lab_slot_uses_recorded_run_time_for_the_device_class():
    lab = fake_lab(1, cpu_s=300.0, cuda_s=30.0)  # recorded on a T4
    assert lab_minutes(lab, device="cuda:Tesla T4", working_min=20)[0] == 21
    assert lab_minutes(lab, working_min=20)[0] == 21  # Colab's T4 by default
    minutes, note = lab_minutes(lab, device="cpu", working_min=20)
    assert minutes == 25 and "5.0 min as recorded on CPU" in note
    # Another GPU class: the T4's time is not used, and the note says there is no recording.
    minutes, note = lab_minutes(lab, device="cuda:H100 SXM5 80GB", working_min=0)
    assert minutes == 5 and "no GPU (H100 SXM5 80GB) record yet" in note
    cpu_only = fake_lab(2, cpu_s=61.0)
    minutes, note = lab_minutes(cpu_only, device="cuda:Tesla T4", working_min=0)
    assert minutes == 2 and "no GPU (Tesla T4) record yet" in note
    unrecorded = course.LabInfo(Path("x.ipynb"), "X", "book/x", "any")
    assert lab_minutes(unrecorded, working_min=15) == (
        15,
        "run time not recorded yet; 15 min working time",
    )
    with pytest.raises(ValueError, match="device_class='cuda' names no GPU"):
        lab_minutes(lab, device="cuda")
    agenda = make_agenda([lab], 90, device="cuda:Tesla T4", working_min=20, reading_min=15)
    (lab_slot,) = [s for s in agenda.slots if s.kind == "lab"]
    assert lab_slot.minutes == 21 and lab_slot.lab is lab


def test_allowances_change_the_plan():
    short = make_agenda(TEN_LABS, 390, working_min=5, reading_min=5)
    long = make_agenda(TEN_LABS, 390, working_min=40, reading_min=20)
    assert len(short.covered) > len(long.covered)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"minutes": 0}, "minutes=0 must be a positive whole number"),
        ({"minutes": -30}, "minutes=-30"),
        ({"minutes": 90.5}, "minutes=90.5"),
        ({"minutes": True}, "minutes=True"),
        ({"minutes": 90, "working_min": -1}, "working_min=-1"),
        ({"minutes": 90, "session_max_min": 0}, "session_max_min=0"),
        ({"minutes": 90, "coffee_min": 5}, r"unknown allowance\(s\) \['coffee_min'\]"),
        ({"minutes": 30}, "minutes=30 is too short: .* need 56"),
    ],
)
def test_bad_inputs_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_agenda([fake_lab(0, cpu_s=10.0)], **kwargs)


def test_no_labs_is_an_error():
    with pytest.raises(ValueError, match=r"labs=\[\] is empty"):
        make_agenda([], 90)


def test_course_labs_in_toc_order_with_their_notes(root):
    labs = labs_in_course_order(root)
    assert labs and {lab.path.name for lab in labs} == {
        p.name for p in (root / "notebooks").glob("*.ipynb")
    }
    basics = next(lab for lab in labs if lab.path.stem == "gpu_basics_lab")
    assert "**Emphasise.**" in basics.instructor_notes
    for name, minutes in STANDARD_FORMATS:
        agenda = make_agenda(labs, minutes, name=name)
        assert agenda.covered and agenda.used_minutes <= minutes


def test_labs_missing_from_the_toc_come_last(tmp_path, root):
    (tmp_path / "notebooks").mkdir()
    for stem in ("a_lab", "b_lab", "c_lab"):
        text = (root / "notebooks" / "gpu_basics_lab.ipynb").read_text()
        (tmp_path / "notebooks" / f"{stem}.ipynb").write_text(text)
    (tmp_path / "_toc.yml").write_text(
        "root: book/intro\nparts:\n  - caption: X\n    chapters:\n"
        "      - file: notebooks/c_lab\n      - file: notebooks/b_lab\n"
    )
    assert [lab.path.stem for lab in labs_in_course_order(tmp_path)] == ["c_lab", "b_lab", "a_lab"]


def test_closing_lab_ends_the_agenda_and_its_time_is_reserved():
    capstone = fake_lab(99, cpu_s=55.0)
    labs = [*TEN_LABS, capstone]
    for minutes in (210, 390):
        agenda = make_agenda(labs, minutes, closing=capstone)
        assert agenda.used_minutes <= minutes
        *_, brk, chapter, lab, wrap = agenda.slots
        assert (brk.kind, chapter.kind, lab.kind, wrap.kind) == (
            "break",
            "chapter",
            "lab",
            "wrap-up",
        )
        assert lab.lab is capstone and chapter.lab is capstone
        assert lab.minutes == 1 + DEFAULTS["working_min"]  # 55 s recorded, rounded up
        assert "closing session; run 55 s as recorded on CPU" in lab.note
        assert agenda.covered[-1] is capstone and capstone not in agenda.left_out
        without = make_agenda(TEN_LABS, minutes)
        assert len(agenda.covered) - 1 <= len(without.covered)  # the others fill what is left
    taster, half, full = standard_agendas(labs, closing=capstone)
    assert capstone not in taster.covered  # the taster keeps to the first chapters
    assert half.covered[-1] is capstone and full.covered[-1] is capstone


def test_closing_lab_that_cannot_fit_is_refused():
    with pytest.raises(ValueError, match="minutes=40 is too short for the closing session"):
        make_agenda(TEN_LABS, 40, closing=fake_lab(99))
    with pytest.raises(ValueError, match="closing='capstone'"):
        make_agenda(TEN_LABS, 210, closing="capstone")
