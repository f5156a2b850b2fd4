"""Author names as reference managers expect them: a person split into family, given, particle
and suffix; an organisation kept whole.

Why: a stored author is one string ("Lin, Jimmy", "Ludwig van der Rohe Jr.", "The PARI Group").
Splitting at the last space made "The PARI Group" the person `{Group, The PARI}` and lost
"van der" and "Jr."; reference managers then sort, abbreviate and cite the wrong parts. Personal
names are parsed by `nameparser` (particles, suffixes, "Last, First" forms), never by new rules.

Which names are organisations is the one hand-written rule here (`is_organisation`), because no
parser can know it: a name is an organisation when

1. it has an organisation word (`ORGANISATION_WORDS`: Group, Team, Project, Foundation, Inc., …),
2. it starts with "The " ("The PARI Group", "The Rust Project Developers"),
3. it has `&` or digits ("Smith & Wesson", "3Com"), or
4. nameparser cannot split it into a first and a last name ("GNU", "Debian").

Table-tested in tests/test_bibliography_names.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Whole words (case-insensitive, a trailing "." ignored) that make a name an organisation's.
ORGANISATION_WORDS = frozenset(
    """group team project projects foundation consortium inc incorporated ltd llc gmbh corp corporation
    company university universität université college school association committee developers
    contributors community institute institut society organization organisation council laboratory
    laboratories lab labs authors maintainers initiative agency department centre center board
    alliance collective federation office ministry collaboration publishers""".split()
)
_WORD = re.compile(r"[^\W\d_][\w'’-]*\.?")
_NOT_A_PERSON = re.compile(r"[&\d]|^the\s", re.I)
# A mail address after a name ("Linus Torvalds <torvalds@osdl.org>", man pages' AUTHORS lines).
_MAIL = re.compile(r"\s*[<(\[]?\s*(mailto:)?[\w.+-]+@[\w-]+(\.[\w-]+)+\s*[>)\]]?")


# BibTeX's "von Last, Jr, First" (and RIS's "Last, First, Suffix" read wrongly as it): put in
# the order nameparser reads, "First von Last Jr".
_LAST_SUFFIX_FIRST = re.compile(r"^([^,]+),\s*(jr\.?|sr\.?|ii|iii|iv),\s*([^,]+)$", re.I)


def _ordered(name: str) -> str:
    return _LAST_SUFFIX_FIRST.sub(r"\3 \1 \2", name)


def is_organisation(name: str) -> bool:
    """Whether `name` is an organisation's (the module's rule), so it is cited whole."""
    from nameparser import HumanName

    name = _ordered(" ".join(name.split()))
    if not name:
        return False
    if _NOT_A_PERSON.search(name):
        return True
    if any(w.rstrip(".").casefold() in ORGANISATION_WORDS for w in _WORD.findall(name)):
        return True
    parsed = HumanName(name)
    return not (parsed.first and parsed.last)


@dataclass(frozen=True)
class Name:
    """One author as the formats cite it: a person's parts, or an organisation's `literal`."""

    family: str = ""  # without the particle: "Rohe"
    given: str = ""  # first and middle names: "Ludwig Mies"
    particle: str = ""  # "van der": CSL's non-dropping particle, BibTeX's von part
    suffix: str = ""  # "Jr.", "III"
    literal: str = ""  # an organisation, kept whole: "The PARI Group"

    @property
    def surname(self) -> str:
        """The family name with its particle ("van der Rohe"), or the organisation."""
        return self.literal or " ".join(p for p in (self.particle, self.family) if p)

    def display(self) -> str:
        """The name as one line, "Family, Given" ("van der Rohe, Ludwig, Jr."), or the organisation."""
        if self.literal:
            return self.literal
        return ", ".join(p for p in (self.surname, self.given, self.suffix) if p)


def _particle(last_list: Sequence[str]) -> tuple[str, str]:
    """(particle, family) of nameparser's last-name words: leading lower-case words ("van der",
    "de la", "von") are the particle, the rest the family ("Sparck Jones" stays whole)."""
    words = list(last_list)
    n = 0
    while n < len(words) - 1 and words[n][:1].islower():
        n += 1
    return " ".join(words[:n]), " ".join(words[n:])


def parse_name(raw: str) -> Name | None:
    """One stored author as a `Name`; None for an empty string."""
    from nameparser import HumanName

    text = " ".join(_MAIL.sub(" ", raw).split()).strip(" ,;")
    if not text:
        return None
    if is_organisation(text):
        return Name(literal=text)
    parsed = HumanName(_ordered(text))
    particle, family = _particle(parsed.last_list)
    given = " ".join(p for p in (parsed.first, parsed.middle) if p)
    return Name(family=family, given=given, particle=particle, suffix=parsed.suffix)


def parse_names(authors: Sequence[str]) -> list[Name]:
    """Every non-empty stored author as a `Name`, in order."""
    return [n for n in (parse_name(a) for a in authors) if n is not None]
