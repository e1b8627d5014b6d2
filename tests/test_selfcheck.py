"""The chapters' "predict, then check" questions: the API, its HTML, and four per chapter,
at least half of them asking the reader to choose.

The page's script (book/_ext/static/selfcheck.js) is checked in a browser in
tests/test_browser_selfcheck.py; here, what it is given: the answer and tolerance in the
HTML, the same rule in Python, and arguments refused with messages that name them.
"""

from __future__ import annotations

import ast
import html
import re
from html.parser import HTMLParser

import pytest
from test_chapters import chapters

from gpulab.labkit.selfcheck import format_answer, scientific, selfcheck

MIN_QUESTIONS = 4
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)


def _number(**overrides):
    args = dict(
        label="mb-add",
        question="What is the intensity of an FP32 add, in FLOP/byte?",
        answer=1 / 12,
        rel_tol=0.05,
        unit="FLOP/byte",
        hint="Count the bytes.",
        solution=["1 FLOP for 12 bytes.", "That is `1/12`."],
    )
    args.update(overrides)
    return selfcheck(**args)


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the text, of an HTML fragment."""

    def __init__(self, fragment: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(fragment)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def first(self, tag: str, cls: str | None = None) -> dict[str, str | None]:
        for name, attrs in self.tags:
            if name == tag and (cls is None or cls in (attrs.get("class") or "").split()):
                return attrs
        raise AssertionError(f"no <{tag} class={cls}> in the fragment")


# --------------------------------------------------------------------------- the API


def test_a_number_question_carries_its_answer_and_tolerance():
    q = _number()
    page = _Elements(q.to_html())
    box = page.first("div", "gl-selfcheck")
    assert box["id"] == "gl-sc-mb-add" and box["data-kind"] == "number"
    assert float(box["data-answer"]) == 1 / 12  # full precision, not the rounded display
    assert float(box["data-tolerance"]) == 0.05 and box["data-tolerance-kind"] == "relative"
    assert box["data-unit"] == "FLOP/byte"
    text = " ".join(page.text)
    assert "Answers within 5% of the worked answer count as right." in text
    assert "0.0833 FLOP/byte" in text  # the answer, in the solution
    assert "1 FLOP for 12 bytes." in text and "<p>That is <code>1/12</code>.</p>" in q.to_html()


def test_the_form_is_labelled_and_announces_its_result():
    page = _Elements(_number().to_html())
    field = page.first("input", "gl-sc-input")
    label = page.first("label")
    assert label["for"] == field["id"] == "gl-sc-mb-add-input"
    assert set(field["aria-describedby"].split()) == {
        "gl-sc-mb-add-question",
        "gl-sc-mb-add-tolerance",
    }
    result = page.first("p", "gl-sc-result")
    assert result["role"] == "status" and result["aria-live"] == "polite"
    # Without the script the form stays hidden and a sentence says why; the hint and the
    # solution are <details> a reader opens by hand.
    assert "hidden" in page.first("form")
    assert page.first("p", "gl-sc-nojs") is not None
    assert {"gl-sc-hint", "gl-sc-solution"} <= {
        a.get("class") for tag, a in page.tags if tag == "details"
    }


def test_an_absolute_tolerance_is_stated_in_the_answers_unit():
    q = _number(answer=2.45, rel_tol=None, abs_tol=0.1, unit="ms")
    box = _Elements(q.to_html()).first("div", "gl-selfcheck")
    assert box["data-tolerance-kind"] == "absolute" and float(box["data-tolerance"]) == 0.1
    assert q.tolerance_text == "Answers within ± 0.1 ms of the worked answer count as right."
    whole = _number(answer=3, rel_tol=None, abs_tol=0.5, unit="waves")
    assert whole.tolerance_text.startswith("The answer is a whole number")
    assert whole.accepts(3) and whole.accepts(3.4) and not whole.accepts(4)


@pytest.mark.parametrize(
    ("typed", "right"),
    [(1 / 12, True), (0.083, True), (0.0875, True), (0.0876, False), (0.079, False),
     (-1 / 12, False), (float("nan"), False), ("0.083", False), (True, False)],
)  # fmt: skip
def test_accepts_a_number_within_the_tolerance_only(typed, right):
    assert _number().accepts(typed) is right


def test_a_choice_question_carries_the_index_of_the_right_option():
    q = selfcheck(
        "mb-bound",
        "What limits a matrix-vector product on an H100?",
        "memory bandwidth",
        choices=["compute (FLOP/s)", "memory bandwidth"],
        hint="Compare the intensity with the ridge point.",
        solution="1 FLOP/byte, far below 295.",
    )
    page = _Elements(q.to_html())
    box = page.first("div", "gl-selfcheck")
    assert box["data-kind"] == "choice" and box["data-answer"] == "1"
    radios = [a for t, a in page.tags if t == "input" and a.get("type") == "radio"]
    assert [r["value"] for r in radios] == ["0", "1"]
    assert {r["name"] for r in radios} == {"gl-sc-mb-bound-input"}
    assert q.accepts("memory bandwidth") and not q.accepts("compute (FLOP/s)")
    assert q.tolerance_text == "" and "memory bandwidth" in str(q)


def test_text_is_escaped():
    q = _number(question="Is 1 < 2 & 3 > 2?", hint="<script>alert(1)</script>")
    out = q.to_html()
    assert "<script>" not in out and html.escape("<script>") in out
    assert "1 &lt; 2 &amp; 3 &gt; 2" in out


def test_a_notebook_shows_html_and_readable_text():
    bundle = _number()._repr_mimebundle_()
    assert bundle["text/html"].startswith('<div class="gl-selfcheck"')
    assert bundle["text/plain"].splitlines()[0].startswith("Predict, then check.")
    assert "Answer: 0.0833 FLOP/byte" in bundle["text/plain"]


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"label": "Bad Label"}, ValueError, "label='Bad Label'"),
        ({"label": 3}, TypeError, "label=3 must be a str"),
        ({"question": "  "}, ValueError, "question='  ' must be a non-empty sentence"),
        ({"hint": None}, TypeError, "hint=None must be a str"),
        ({"solution": []}, ValueError, "solution=.* at least one non-empty paragraph"),
        ({"solution": [1]}, TypeError, "solution=.* a str or a sequence of str"),
        ({"answer": "0.08"}, TypeError, "answer='0.08' must be a finite number"),
        ({"answer": True}, TypeError, "answer=True must be a finite number"),
        ({"answer": float("inf")}, ValueError, "answer=inf must be a finite number"),
        ({"rel_tol": None}, ValueError, "exactly one of rel_tol or abs_tol; got neither"),
        ({"abs_tol": 0.1}, ValueError, "exactly one of rel_tol or abs_tol; got both"),
        ({"rel_tol": 5}, ValueError, "rel_tol=5.0 must be a fraction above 0 and below 1"),
        ({"rel_tol": None, "abs_tol": 0}, ValueError, "abs_tol=0.0 must be a positive number"),
        ({"answer": 0}, ValueError, "answer=0 cannot have a relative tolerance"),
        ({"unit": ""}, ValueError, "unit='' must be a non-empty unit"),
        ({"digits": 0}, ValueError, "digits=0 must be a positive integer"),
        ({"digits": 11}, ValueError, "digits=11 must be at most 10"),
        ({"choices": ["a", "b"]}, ValueError, "rel_tol, abs_tol and unit apply to a number"),
        ({"choices": "ab", "rel_tol": None, "unit": None}, TypeError, "choices='ab'"),
        ({"choices": ["a", "a"], "rel_tol": None, "unit": None, "answer": "a"}, ValueError,
         "two or more distinct options"),
        ({"choices": ["a", "b"], "rel_tol": None, "unit": None, "answer": "c"}, ValueError,
         "answer='c' is not one of the choices"),
    ],
)  # fmt: skip
def test_bad_arguments_name_the_parameter(overrides, error, match):
    with pytest.raises(error, match=match):
        _number(**overrides)


def test_numbers_are_written_for_a_reader():
    assert format_answer(16.9286) == "16.9" and format_answer(270336) == "270,336"
    assert format_answer(0.15789) == "0.158" and format_answer(1.6) == "1.6"
    assert scientific(6.74e19) == "6.74 × 10¹⁹" and scientific(3.39e38) == "3.39 × 10³⁸"


# --------------------------------------------------------------------------- the chapters


def selfcheck_calls(source: str) -> list[ast.Call]:
    """The ``selfcheck(...)`` calls in a chapter's code cells."""
    calls = []
    for cell in CELL.findall(source):
        code = "\n".join(line for line in cell.splitlines() if not line.startswith(":"))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "selfcheck":
                calls.append(node)
    return calls


def _answer(call: ast.Call) -> ast.expr:
    keywords = {k.arg: k.value for k in call.keywords}
    return keywords.get("answer", call.args[2] if len(call.args) > 2 else None)


def test_every_teaching_chapter_has_four_self_checks_computed_not_typed(root):
    problems = []
    for chapter in chapters(root):
        source = (root / f"{chapter}.md").read_text(encoding="utf-8")
        calls = selfcheck_calls(source)
        if len(calls) < MIN_QUESTIONS:
            problems.append(f"{chapter}: {len(calls)} self-check questions, {MIN_QUESTIONS} wanted")
        labels = [c.args[0].value for c in calls if c.args and isinstance(c.args[0], ast.Constant)]
        if len(labels) != len(calls) or len(set(labels)) != len(labels):
            problems.append(f"{chapter}: labels missing or repeated: {labels}")
        for call in calls:
            answer = _answer(call)
            if answer is None or isinstance(answer, ast.Constant | ast.UnaryOp):
                problems.append(
                    f"{chapter}.md:{call.lineno}: the answer is typed ({ast.unparse(answer)}), "
                    "not computed"
                )
        # One contiguous section, before the exercises.
        if calls:
            check = source.find("\n## Check yourself\n")
            exercises = source.find("\n## Exercises\n")
            if not 0 < check < exercises:
                problems.append(f"{chapter}: no '## Check yourself' section before the exercises")
            elif source.find("selfcheck(", exercises) != -1 or source.find("selfcheck(") < check:
                problems.append(f"{chapter}: a self-check outside its section")
    assert not problems, "\n".join(problems)


#: Pages of book/ that teach no chapter of their own, and so carry no self-checks.
NOT_TAUGHT = {"intro", "glossary", "bibliography", "gallery", "workshop", "model_accuracy"}


def is_conceptual(call: ast.Call) -> bool:
    """A question that asks the reader to choose (a direction, a class, a device), not a number."""
    return any(k.arg == "choices" for k in call.keywords)


def count_questions(source: str) -> tuple[int, int]:
    """(all self-checks, conceptual ones) in a chapter's source."""
    calls = selfcheck_calls(source)
    return len(calls), sum(is_conceptual(c) for c in calls)


def test_every_page_of_the_book_is_a_teaching_chapter_or_named_as_none(root):
    taught = {c.removeprefix("book/") for c in chapters(root)}
    pages = {p.stem for p in (root / "book").glob("*.md")}
    assert pages - NOT_TAUGHT <= taught, sorted(pages - NOT_TAUGHT - taught)


def test_at_least_half_of_each_chapters_self_checks_are_conceptual(root):
    """Predict a direction, classify or choose: at least half of a chapter's questions."""
    counts = {
        chapter: count_questions((root / f"{chapter}.md").read_text(encoding="utf-8"))
        for chapter in chapters(root)
    }
    assert len(counts) >= 15
    problems = [
        f"{chapter}: {conceptual} of {total} questions ask to choose; at least half wanted"
        for chapter, (total, conceptual) in counts.items()
        if total < MIN_QUESTIONS or 2 * conceptual < total
    ]
    assert not problems, "\n".join(problems)


def test_the_conceptual_count_sees_a_chapter_of_numbers():
    cell = "```{code-cell} ipython3\n:tags: [remove-input]\n\nCALL\n```\n"

    def number(i):
        return cell.replace("CALL", f'selfcheck("n{i}", "Q?", a / b, rel_tol=0.05)')

    def choice(i):
        return cell.replace("CALL", f'selfcheck("c{i}", "Q?", x[k], choices=x)')

    numbers = "".join(number(i) for i in range(3))
    assert count_questions(numbers + choice(0)) == (4, 1)
    assert count_questions(numbers + choice(0) + choice(1)) == (5, 2)
    assert count_questions(number(0) + choice(0)) == (2, 1)


def test_the_chapter_check_sees_a_typed_answer():
    cell = '```{code-cell} ipython3\n:tags: [remove-input]\n\nselfcheck("x", "Q?", ANSWER)\n```\n'
    typed = selfcheck_calls(cell.replace("ANSWER", "12.5"))
    computed = selfcheck_calls(cell.replace("ANSWER", "a / b"))
    assert isinstance(_answer(typed[0]), ast.Constant)
    assert isinstance(_answer(computed[0]), ast.BinOp)
