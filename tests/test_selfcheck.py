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


def _template(**overrides):
    args = dict(
        label="mb-matvec",
        question="A BF16 product with `W` of {d:,} × {d:,} on an {gpu}: what limits it?",
        answer="memory bandwidth",
        choices=["memory bandwidth", "compute (FLOP/s)", "{d:,}"],
        hint="Compare its intensity with the ridge point of {ridge:.0f}.",
        solution=["{i:.2f} FLOP/byte: it is {bound}-bound.", "Literal braces: {{x}}."],
        values=dict(d=4096, gpu="H100 SXM", ridge=295.2, i=0.99951, bound="memory"),
    )
    args.update(overrides)
    return selfcheck(**args)


def test_templates_are_filled_from_their_values():
    q = _template()
    filled = "A BF16 product with `W` of 4,096 × 4,096 on an H100 SXM: what limits it?"
    assert q.fill(q.question) == filled
    text = str(q)
    assert "  - 4,096" in text and "ridge point of 295." in text
    assert "1.00 FLOP/byte: it is memory-bound." in text and "Literal braces: {x}." in text
    assert "Answer: memory bandwidth" in text
    # the page shows the filled text too; the templates never reach it
    page = q.to_html()
    assert "4,096 × 4,096" in page and "{d:,}" not in page and "{{" not in page
    assert "data-text-" not in page  # the script's replies: English, its own defaults


def test_a_choice_answer_can_be_a_template():
    q = _template(answer="{d:,}")
    assert _Elements(q.to_html()).first("div", "gl-selfcheck")["data-answer"] == "2"
    assert q.answer_text == "4,096"


def test_the_messages_to_translate_are_the_templates_and_the_word_values():
    q = _template()
    assert q.messages == [
        q.question, "memory bandwidth", "compute (FLOP/s)", q.hint, *q.solution, "H100 SXM",
        "memory",
    ]  # fmt: skip  # the choice "{d:,}" is a number: not offered


def test_a_translation_fills_in_the_same_numbers():
    table = {
        "A BF16 product with `W` of {d:,} × {d:,} on an {gpu}: what limits it?":
            "在 {gpu} 上，`W` 为 {d:,} × {d:,} 的 BF16 乘积：是什么限制了它？",
        "memory bandwidth": "内存带宽",
        "{i:.2f} FLOP/byte: it is {bound}-bound.": "{i:.2f} FLOP/字节：它是{bound}受限的。",
        "memory": "访存",
        "Hint": "提示",
        "Right.": "正确。",
    }  # fmt: skip
    q = _template()
    page = q.to_html(lambda text: table.get(text, text))
    assert "在 H100 SXM 上，<code>W</code> 为 4,096 × 4,096 的 BF16 乘积" in page
    assert "1.00 FLOP/字节：它是访存受限的。" in page
    assert "<summary>提示</summary>" in page and "内存带宽" in page
    # untranslated texts stay English; the numbers are the English page's
    assert "compute (FLOP/s)" in page and "ridge point of 295." in page
    assert 'data-text-right="正确。"' in page and 'data-text-pick="Pick an answer first."' in page
    assert q.to_html() == _template().to_html()  # English unchanged


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"values": [("d", 1)]}, TypeError, "values=.* must be a dict"),
        ({"values": {"d": None}}, TypeError, r"values\['d'\]=None must be a number or a str"),
        ({"values": {"not a name": 1}}, ValueError, "keys must be Python names"),
        ({"values": {"d": 1}}, ValueError, "the template .* cannot be filled from values=.'d'."),
        ({"hint": "a {brace"}, ValueError, "double a literal brace"),
    ],
)  # fmt: skip
def test_bad_templates_and_values_are_named(overrides, error, match):
    with pytest.raises(error, match=match):
        _template(**overrides)


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


def test_the_chapters_texts_are_templates_not_f_strings(root):
    """An f-string is filled before anyone could translate it: the Chinese edition would show
    it in English. Figures go into ``values=`` and the text stays a template."""
    problems = []
    for chapter in chapters(root):
        for call in selfcheck_calls((root / f"{chapter}.md").read_text(encoding="utf-8")):
            texts = [*call.args[1:2], *(k.value for k in call.keywords
                                         if k.arg in ("question", "hint", "solution"))]  # fmt: skip
            for text in texts:
                if any(isinstance(n, ast.JoinedStr) for n in ast.walk(text)):
                    problems.append(f"{chapter}.md:{text.lineno}: an f-string; use values=...")
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
