"""What kind of answer a question asks for: a yes/no, a choice between sides it names, a value, a
name, an option, a date — or none of these (then no Exact Answer is read)."""

from __future__ import annotations

import re

_YES_NO = re.compile(
    r"^\s*(?:[^,?]{0,40},\s*)?(?:can|does|do|did|is|are|was|were|will|would|should|could|may|must|has|have)\b",
    re.IGNORECASE,
)
# "Which …", also after an opening phrase ("In SQLite, which default limit is larger: …").
_WHICH = re.compile(r"(?:^|^[^,?]{0,40},)\s*(?:which|what|who)\b", re.IGNORECASE)
_SIDES = re.compile(r"(?::|\bbetween\b|\bof\b)\s+([^:?]+?)\s+(?:or|and)\s+([^:?]+?)\s*\??\s*$", re.IGNORECASE)
_OPTION = re.compile(r"\b(?:flag|option|directive|setting|parameter|mode|level|protocol|preset)\b", re.IGNORECASE)
_NAME = re.compile(
    r"^\s*(?:who|which (?:exception|error|shell|function|method|class|module|command|program|tool|library|file|"
    r"person|author|company))\b|\bwhat is the name\b|\bnamed?\b",
    re.IGNORECASE,
)
_DATE = re.compile(
    r"^\s*when\b|\bwhat year\b|\b(?:which|what)\s+(?:[\w/.-]+\s+){0,3}?(?:year|version|release)\b", re.IGNORECASE
)
_MORE = re.compile(r"\b(?:more|most|higher|highest|larger|largest|longer|longest|bigger|greater|later)\b", re.I)
_LESS = re.compile(r"\b(?:less|least|fewer|fewest|lower|lowest|smaller|smallest|shorter|shortest|earlier)\b", re.I)
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)
KINDS = ("yes-no", "comparison", "date", "name", "option", "value", "other")


def comparison_sides(question: str) -> tuple[str, ...]:
    """The two sides of "which … : A or B" / "which of A and B", articles dropped; () otherwise."""
    if not _WHICH.search(question):
        return ()
    m = _SIDES.search(question)
    if not m:
        return ()
    return tuple(_ARTICLE.sub("", s.strip()).strip() for s in m.groups())


def direction(question: str) -> int:
    """+1 when the question asks which side has more of something, -1 for less, 0 when unsaid."""
    return 1 if _MORE.search(question) else -1 if _LESS.search(question) else 0


def question_kind(question: str, quantity_asked: bool) -> str:
    """One of KINDS. `quantity_asked`: the question asks for a quantity ("default", "how many")."""
    if _YES_NO.search(question):
        return "yes-no"
    if comparison_sides(question):
        return "comparison"
    if _DATE.search(question):
        return "date"
    if _NAME.search(question):
        return "name"
    if re.match(r"^\s*which\b", question, re.I) and _OPTION.search(question):
        return "option"
    return "value" if quantity_asked else "other"
