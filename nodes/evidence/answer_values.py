"""Reading the Exact Answer off a sentence: a value, a name or option, a yes/no — or nothing.

A value is read only when the sentence states it beside the question's own words, in a shape
reference documents use (`[default: 12]`, `(default `5s`)`, `:Number of Instances: 150`, "is -6",
"a maximum of 10", "The default is five minutes (5min)", `"DEFERRED" (default)`, "Default five
seconds"), or right after the question's words. A name or option is the one code-shaped word of a
sentence that holds most of the question's words and is not one of them. A yes/no is read only
from a sentence that holds most of the question's words: "no" when it negates, else "yes".
`context` (the heading a sentence stands under, e.g. "checkpoint_timeout (integer)") and the
document's title count as naming words, never as the value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nodes.evidence.answer_subject import is_identifier, keys, term_key
from nodes.evidence.sentences import WORD
from nodes.tools.excerpts import query_terms

EXACT_WINDOW_WORDS = 4
EXACT_MIN_COVERAGE = 0.6
EXACT_SPAN_WORDS = 8
# A yes/no needs a sentence holding this share of the question's words.
YES_NO_COVERAGE = 0.7
ASKING_WORDS = frozenset({"many", "much"})

QUANTITY_ASKED = re.compile(
    r"\b(?:how (?:many|much|long|large|big|often|old|far|fast)|what (?:number|percentage|size)|"
    r"value|default|number of|version|port|size|limit|count|timeout|year|when|unit|delay|backlog|"
    r"constant|threshold|maximum|minimum|max|min|largest|smallest|longest|shortest|level)\b",
    re.IGNORECASE,
)
_NAME_ASKED = re.compile(
    r"^\s*(?:who|whom|which (?:person|author|company|tool|library|program|command))\b|"
    r"\bwhat is the name\b|\bnamed?\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|sixty|"
    r"a hundred|one hundred)"
)
_UNIT = (
    r"(?:\s?(?:%|[kKMGT]?[bB]\b|ms\b|s\b|px\b|[kKmM]\b|°\w?)|\s(?:milli|micro)?seconds?\b|\sminutes?\b|\shours?\b|"
    r"\sdays?\b|\s(?:kilo|mega)?bytes?\b|\srows?\b|\sentries\b)?"
)
_NUM = rf"(?:[-+]?\d+(?:[.,]\d+)*|\b{_NUMBER_WORDS}\b)"
_VALUE = rf"(`[^`\n]{{1,40}}`|{_NUM}{_UNIT})"
_NUMBER = re.compile(rf"(?<![\w.]){_NUM}{_UNIT}", re.IGNORECASE)
_LITERAL = re.compile(r"`([^`\n]{1,60})`|\"([^\"\n]{1,60})\"|'([^'\n]{1,60})'|“([^”\n]{1,60})”")
_NAME = re.compile(r"[A-Z][\w'’.-]*(?:(?:\s+|,\s*|\s+and\s+)[A-Z][\w'’.-]*)*")
_CODE_WORD = re.compile(
    r"`([^`\n]{1,40})`|\"([^\"\n]{1,40})\"|(/[\w/.-]+\w)|\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b|"
    r"\b([A-Z][a-z]+[A-Z]\w*)\b|\b([A-Z][A-Z_]{2,})\b"
)
# A command-line option ("-Z", "--compress") for a question asking for an option or flag.
_OPTION_WORD = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
_OPTION_ASKED = re.compile(r"\b(?:option|flag|switch)\b", re.IGNORECASE)
# "i.e", "e.g": dotted, but no name.
_ABBREVIATION = re.compile(r"^(?:[a-z]\.){1,3}[a-z]?$", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|cannot|never|no|nor|neither|unsupported|disallowed|forbidden)\b|n't\b", re.I)
_TOKEN = re.compile(r"\w+", re.UNICODE)
_SHAPES: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(rf"[\[(]\s*default:?\s+({_VALUE[1:-1]}|[\w.+-]+)\s*[\])]", re.IGNORECASE), 0),
    (re.compile(r"(`[^`\n]{1,40}`|\"[^\"\n]{1,40}\"|\b\w[\w.-]*)\s*\(default\)", re.IGNORECASE), 0),
    (re.compile(rf"\bdefault(?:\s+value)?\s+(?:is\s+(?:\w+ly\s+)?|of\s+|:\s*)?{_VALUE}(?![\w-])", re.IGNORECASE), 0),
    (re.compile(rf"^\s*:?[A-Za-z][^:\n]{{0,60}}:\s+{_VALUE}(?![\w.-])"), 0),
    (re.compile(rf"\bdefaults?\s+to\s+{_VALUE}(?![\w-])", re.IGNORECASE), 0),
    (re.compile(rf"(?<![\w.-]){_VALUE}\s+by\s+default\b", re.IGNORECASE), 0),
    (re.compile(rf"\b(?:is|are)\s+(?:set|limited|fixed)\s+to\s+{_VALUE}(?![\w-])", re.IGNORECASE), 0),
    (re.compile(rf"\b(?:is|are|equals)\s+{_VALUE}(?![\w-])", re.IGNORECASE), 0),
    (re.compile(rf"\b(?:maximum|minimum)\s+of\s+{_VALUE}(?![\w-])", re.IGNORECASE), EXACT_WINDOW_WORDS),
)


def question_stems(question: str) -> list[str]:
    """The question's content words as match keys (identifiers whole, other words stemmed), in
    order, without the words that only ask for a quantity (ASKING_WORDS)."""
    content = set(query_terms(question)) - ASKING_WORDS
    return list(dict.fromkeys(term_key(w) for w in WORD.findall(question) if w.lower() in content))


def _clean(value: str) -> str:
    return value.strip().strip("`\"'“”").strip()


def shaped_value(question: str, sentence: str, title: str = "") -> tuple[str, float]:
    """The value `sentence` states in a recognised shape beside the question's words, with the
    share of the question's words that name it ('', 0.0 when none). The naming words — up to
    EXACT_SPAN_WORDS words before the shape, the shape's own words and, for "a maximum of N",
    EXACT_WINDOW_WORDS after — with `title` (title and heading) must hold EXACT_MIN_COVERAGE of the
    question's words, at least one of them in the sentence."""
    wanted = set(question_stems(question))
    if not wanted or not QUANTITY_ASKED.search(question):
        return "", 0.0
    tokens = list(_TOKEN.finditer(sentence))
    named = keys(title) & wanted
    headed = heads_identifier(question, title)
    best: tuple[str, float] = ("", 0.0)
    for shape, after in _SHAPES:
        for m in shape.finditer(sentence):
            before = [t for t in tokens if t.end() <= m.start()][-EXACT_SPAN_WORDS:]
            following = [t for t in tokens if t.start() >= m.end()][:after]
            own = ({term_key(t.group()) for t in before + following} | keys(m.group())) & wanted
            cover = len(own | named) / len(wanted)
            if headed or heads_identifier(question, sentence[: m.start()]):
                # the entry's heading, or the sentence before the value, names the question's identifier
                cover = max(cover, EXACT_MIN_COVERAGE)
            if own and cover >= EXACT_MIN_COVERAGE and cover > best[1]:
                best = (_clean(m.group(1)), cover)
    return best


def exact_value(question: str, sentence: str, title: str = "") -> str:
    """The value the question asks for, read off `sentence`, or '' (`value_and_cover`)."""
    return value_and_cover(question, sentence, title)[0]


def value_and_cover(question: str, sentence: str, title: str = "") -> tuple[str, float]:
    """A value in a recognised shape (`shaped_value`), else one within EXACT_WINDOW_WORDS words
    after the last of the question's words when most of them stand together ("the default weight
    value is 50" → "50"), else a name after them for a question asking for one; with the share
    (0–1) of the question's words that name it. ('', 0.0) when unsure."""
    shaped = shaped_value(question, sentence, title)
    if shaped[0]:
        return shaped
    wanted = question_stems(question)
    tokens = list(_TOKEN.finditer(sentence))
    hits = [i for i, t in enumerate(tokens) if term_key(t.group()) in wanted]
    if not wanted or not hits:
        return "", 0.0
    last = hits[-1]
    near = {term_key(tokens[i].group()) for i in hits if i > last - EXACT_SPAN_WORDS}
    if len(near) < EXACT_MIN_COVERAGE * len(wanted):
        return sentence_number(question, sentence, title, tokens[last].end())
    cover = len(near | (keys(title) & set(wanted))) / len(wanted)
    window_end = tokens[min(len(tokens) - 1, last + EXACT_WINDOW_WORDS)].end()
    tail = sentence[tokens[last].end() : window_end]
    if QUANTITY_ASKED.search(question):
        literal = _LITERAL.search(tail)
        if literal:
            return next(g for g in literal.groups() if g), cover
        number = _NUMBER.search(tail)
        if number:
            return number.group().strip(), cover
    if _NAME_ASKED.search(question):
        asked = {t.lower() for t in _TOKEN.findall(question)}
        for match in _NAME.finditer(sentence[tokens[last].end() :]):
            name = match.group().rstrip(".,")
            if name and not {t.lower() for t in _TOKEN.findall(name)} & asked:
                return name, cover
    return "", 0.0


def heads_identifier(question: str, title: str) -> bool:
    """Whether the heading or title (`title`) names an identifier the question names."""
    asked = {k for k in keys(question) if "_" in k or not k.isalpha()}
    return bool(asked and asked & {k for k in keys(title) if "_" in k or not k.isalpha()})


def sentence_number(question: str, sentence: str, title: str, after: int) -> tuple[str, float]:
    """For a question asking for a quantity: the number a sentence states when the sentence with
    its heading holds EXACT_MIN_COVERAGE of the question's words ("By default, SQLite does a
    checkpoint automatically when the WAL file reaches a threshold size of 1000 pages"): the first
    within EXACT_WINDOW_WORDS words after the question's last word there (`after`); a number the
    question itself states is never the answer. ('', 0.0) when unsure."""
    if not QUANTITY_ASKED.search(question):
        return "", 0.0
    cover = coverage(question, sentence, title)
    if cover < EXACT_MIN_COVERAGE:
        return "", 0.0
    given = {m.group().strip() for m in _NUMBER.finditer(question)}
    window = " ".join(sentence[after:].split()[: EXACT_WINDOW_WORDS + 1])
    found = [m for m in _NUMBER.finditer(window) if m.group().strip() not in given]
    return (found[0].group().strip(), cover) if found else ("", 0.0)


def coverage(question: str, sentence: str, context: str = "") -> float:
    """Share of the question's words in the sentence and its `context` (title, heading)."""
    wanted = question_stems(question)
    return len(keys(f"{sentence} {context}") & set(wanted)) / len(wanted) if wanted else 0.0


# "Which release first supported …", "since which version …": the version a sentence names after
# a cue ("since version 3.35.0", "Available in Apache HTTPD 2.2.15 and later", "for PostgreSQL
# 10") — dotted, or a small number after a name or the word version/release, so neither "in 5
# seconds" nor "in RFC 7230" is one. Only for questions about a version's history: "which protocol
# version does it use" asks for a value.
VERSION_ASKED = re.compile(
    r"^(?=.*\b(?:since|first|introduced|added|renamed|removed|deprecated|available|supported|new)\b)"
    r".*\b(?:which|what)\s+(?:[\w/.-]+\s+){0,3}(?:version|release)\b",
    re.I,
)
_VERSION = re.compile(
    r"\b(?:since|in|for|as of|from|starting with|added in|introduced in|new in)\s+"
    r"((?:(?:[A-Z][\w/+-]*|version|release)\s+){0,3})v?(\d+(?:\.\d+){0,3})(?![\w.]*\d)",
    re.I,
)
_VERSION_ASKING = frozenset(term_key(w) for w in ("version", "release", "first", "since"))
_MAX_PLAIN_VERSION = 99


def _versions(text: str) -> list[str]:
    return [
        m.group(2)
        for m in _VERSION.finditer(text)
        if "." in m.group(2) or (m.group(1).strip() and int(m.group(2)) <= _MAX_PLAIN_VERSION)
    ]


def states_version(text: str) -> bool:
    """Whether `text` names a version after a cue, as `version_value` reads one."""
    return bool(_versions(text))


def version_value(question: str, sentence: str, context: str = "") -> tuple[str, float]:
    """For a question about a version's history (VERSION_ASKED): the version the sentence names
    after a cue when the sentence itself holds EXACT_MIN_COVERAGE of the question's other words —
    its heading does not count, as a page's title ("… supported by SQLite") would lend its words to
    every line. A version the question itself states is never the answer. ('', 0.0) when unsure."""
    if not VERSION_ASKED.search(question):
        return "", 0.0
    wanted = set(question_stems(question)) - _VERSION_ASKING
    cover = len(keys(sentence) & wanted) / len(wanted) if wanted else 0.0
    # The code names it asks about ("RETURNING", "mod_reqtimeout") are its subject: the sentence or
    # its heading must name them ("… extended to include the EXCLUDE clause" is another's history).
    names = {term_key(w) for w in WORD.findall(question) if is_identifier(w) or (w.isupper() and len(w) > 2)}
    if cover < EXACT_MIN_COVERAGE or not names <= keys(f"{sentence} {context}"):
        return "", 0.0
    found = [v for v in _versions(sentence) if v not in question]
    return (found[0], cover) if found else ("", 0.0)


def code_name(question: str, sentence: str, context: str = "") -> tuple[str, float]:
    """For "which exception/option/shell …": the first code-shaped word of the sentence (a literal,
    a path, a dotted or CamelCase name, an ALL-CAPS constant) that is not one of the question's,
    when the sentence (with `context`) holds EXACT_MIN_COVERAGE of the question's words."""
    cover = coverage(question, sentence, context)
    if cover < EXACT_MIN_COVERAGE:
        return "", 0.0
    asked = keys(question) | {w.lower() for w in WORD.findall(question)}
    options = [m.group(1) for m in _OPTION_WORD.finditer(sentence)] if _OPTION_ASKED.search(question) else []
    for word in [*options, *(next(g for g in m.groups() if g) for m in _CODE_WORD.finditer(sentence))]:
        if word.lower() not in asked and not keys(word) <= asked and not _ABBREVIATION.match(word):
            return word, cover
    return "", 0.0


def yes_no(question: str, sentence: str, context: str = "") -> tuple[str, float]:
    """("no" | "yes", cover) from a sentence holding YES_NO_COVERAGE of the question's words:
    "no" when it negates; ('', 0.0) when no sentence can decide."""
    cover = coverage(question, sentence, context)
    if cover < YES_NO_COVERAGE:
        return "", 0.0
    negated = bool(_NEGATION.search(sentence)) != bool(_NEGATION.search(question))
    return ("no" if negated else "yes"), cover


def numeric(value: str) -> float | None:
    """The number a value states (digits or a number word), None when none."""
    words = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
    words |= {"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "hundred": 100}
    m = re.search(r"[-+]?\d+(?:\.\d+)?", value.replace(",", ""))
    if m:
        return float(m.group())
    found: Sequence[str] = [w for w in _TOKEN.findall(value.lower()) if w in words]
    return float(words[found[-1]]) if found else None
