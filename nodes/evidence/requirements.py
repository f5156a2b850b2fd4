"""Requirements a careful reader would write, from the intent's text alone.

A request such as "find the documents about WAL checkpoints in PostgreSQL, as man pages" asks
for a subject ("WAL checkpoints"), a product ("PostgreSQL": what the document must be about)
and a document type ("man pages"); the words "find the documents about" are how it was asked,
not what is asked for. Scoring a document on the request's opener rewards whatever says
"documents", and scoring it on the intent reworded gives every document the same mark on every
aspect. So the opener is cut off, constraints become items of their own kind, and the rest is
cut into the subject and one requirement per qualifying aspect ("X for Y with Z" → three).

Pure and deterministic; `nodes.evidence.planning` builds the plan from these pieces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nodes.job.state import ChecklistKind
from nodes.tools.excerpts import query_terms

# -- openers: how a request is asked, never what it asks for ----------------------------------
_DOCS = (
    r"(?:documents?|docs|documentation|pages?|papers?|articles?|sections?|material|information|info|"
    r"references?|texts?|resources?|publications?|works?|passages?|results?|entries|anything|something)"
)
_ABOUT = (
    r"(?:about|on|regarding|concerning|describing|discussing|covering|explaining|mentioning|"
    r"dealing\s+with|related\s+to|relating\s+to|(?:that|which)\s+(?:describes?|discuss(?:es)?|explains?|"
    r"covers?|mentions?|deals?\s+with|talks?\s+about|(?:is|are)\s+about|tells?\s+(?:me\s+)?about))"
)
_AUX = r"(?:is|are|was|were|does|do|did|can|could|should|would|will|must|may|might|has|have)"
_OPENERS = [
    re.compile(p + r"\s*", re.I)
    for p in (
        r"(?:please\s+)?(?:find|show|list|give|get|search\s+for|look\s+for|look\s+up|locate|retrieve|return|fetch|"
        r"tell)(?:\s+me)?(?:\s+(?:all|any|some|the|every|of))*(?:\s+(?:relevant|related)?\s*"
        + _DOCS
        + r"\s+(?:that\s+|which\s+)?"
        + _ABOUT
        + r")?(?=\s)",
        r"(?:i\s*'?m|i\s+am|we\s*'?re|we\s+are)\s+(?:looking|searching)\s+for(?:\s+(?:any|some|the)?\s*"
        + _DOCS
        + r"\s+"
        + _ABOUT
        + r")?",
        r"(?:i\s*'?m|i\s+am|we\s*'?re|we\s+are)\s+interested\s+in(?:\s+(?:any|some|the)?\s*"
        + _DOCS
        + r"\s+"
        + _ABOUT
        + r")?",
        r"(?:i|we)\s+(?:want|need|would\s+like)(?:\s+to\s+(?:know|find|read|see|learn|understand))?(?:\s+(?:more\s+)?about)?",
        r"(?:looking|searching)\s+for",
        r"interested\s+in",
        r"what\s+" + _DOCS + r"\s+(?:exist|are\s+there)\s+(?:that|which)\s+" + _ABOUT.replace("(?:that|which)\\s+", ""),
        r"(?:any|all|some|the)?\s*" + _DOCS + r"\s+" + _ABOUT,
        r"how\s+(?:to|do\s+(?:i|you|we)|can\s+(?:i|you|we|one)|does\s+one|should\s+(?:i|one|we))",
        r"(?:what|which|who|where)\s+" + _AUX + r"(?:\s+(?:the|a|an))?",
        r"(?:what|which|who)(?=\s)",
        r"(?:explain|describe)(?:\s+(?:the|a|an))?",
        r"(?:does|do|is|are|can|could|should|will|would|must|may)\s+(?=\w)",
        r"(?:only|just|also)(?=\s)",
    )
]

# -- constraints ------------------------------------------------------------------------------
# Document types and formats, as a reader names them. "example(s)" and "guide" are left out: too
# often part of the topic ("examples of recursion").
_DOCTYPE = (
    r"(?:man(?:ual)?\s+pages?|manpages?|manuals?|pdfs?|tutorials?|how-?tos?|faqs?|readmes?|release\s+notes|"
    r"changelogs?|api\s+(?:docs|documentation|reference)|reference\s+(?:manuals?|guides?|pages?|documentation)|"
    r"references?|user\s+guides?|html\s+pages?)"
)
# "man pages about X", "a tutorial on X": the document type heads the request.
_DOCTYPE_HEAD = re.compile(
    r"^(?:an?\s+|the\s+|any\s+|some\s+|all\s+)?(" + _DOCTYPE + r")\s+(?:" + _ABOUT + r"|for|of)\s+", re.I
)
# "… in PDF", "… as man pages", "… in PDF format".
_DOCTYPE_AS = re.compile(
    r"[,;]?\s*\b(?:in|as)\s+(?:an?\s+|the\s+)?(" + _DOCTYPE + r")(?:\s+(?:format|form|files?|only))?\b", re.I
)
# "…, man pages only" / "…, tutorials".
_DOCTYPE_TAIL = re.compile(r"[,;]\s*(?:only\s+)?(" + _DOCTYPE + r")(?:\s+only)?\s*[.?!]?\s*$", re.I)

# A product or named system: a capitalised or mixed-case name ("SQLite", "PostgreSQL", "Apache
# httpd", "Python 3.11"), never a sentence's first word by its capital alone.
_NAME_WORD = r"(?:[A-Z][\w+#]*(?:[.\-/][\w+#]+)*|[a-z]+[A-Z][\w+#]*)"
_NAME = _NAME_WORD + r"(?:\s+(?:" + _NAME_WORD + r"|\d+(?:\.\d+)*))*"
_NOT_PRODUCTS = {"it", "let", "that", "what", "who", "there", "here", "one", "today", "everyone", "i"}
# Not an eponym ("Alzheimer's disease", "Broca's area", "Dijkstra's algorithm"): a notion's name.
_POSSESSIVE = re.compile(
    r"\b(" + _NAME + r")(?:'s|’s)\s+(?!(?i:disease|syndrome|area|law|theorem|lemma|algorithm|method|rule|"
    r"principle|equation|constant|test|effect|hypothesis|conjecture)\b)"
)
# "… in SQLite", "… for Apache", "… in PostgreSQL 15": a name that ends its clause. Not after "of"
# ("downstream of EGFR") nor "the" ("in the United States"): in claims those name a topic or place.
_CLAUSE_END = r"(?=\s*(?:$|[,;:?!)]|\.(?:\s|$)|\s+(?:for|with|using|when|and|but|not|other\s+than|except)\b))"
_PRODUCT_PREP = re.compile(
    r"\s*\b(?:in|for|on|under|within|inside)\s+(" + _NAME + r")"
    r"(?:\s+(?:docs|documentation|manual|server|database|module|package|library))?" + _CLAUSE_END
)

# -- requirement pieces ---------------------------------------------------------------------
# Cue words that start a qualifying aspect; the requirement before a cue is the subject.
_CUE_KIND: dict[str, ChecklistKind] = {
    "for": "application",
    "applied to": "application",
    "across": "application",
    "using": "method",
    "with": "method",
    "via": "method",
    "based on": "method",
}
_AND = re.compile(r"\s+(?:and|or)\s+", re.I)
_LEAD = re.compile(r"^(?:the|a|an|any|some|all|about|on|regarding|of|either|both)\s+", re.I)
# Author and venue phrases: constraints the navigator checks against the store (metadata items),
# so not part of any requirement's text.
_BY_AUTHOR = re.compile(
    r"\b(?:written|authored|co-authored|published|(?:articles|papers|publications|works))\s+(?:written\s+)?"
    r"(?:either\s+)?by\s+[A-Z][\w'.\-]*"
    r"(?:(?:,?\s+|\s+(?:or|and)\s+)(?:[A-Z][\w'.\-]*|others))*"
)
_VENUE = re.compile(
    r"\b(?:published in|appeared in|appearing in|presented at|in the proceedings of)\s+(?:the\s+)?"
    r"[A-Z][\w&\-]*(?:\s+(?:of\s+(?:the\s+)?)?[A-Z][\w&\-]*)*"
)
_ONLY_DOCS = re.compile(r"^\s*(?:the\s+|any\s+|some\s+|all\s+)?" + _DOCS + r"\s*$", re.I)


@dataclass
class Parsed:
    """The intent read as requirements: its body (no opener, no constraints), the product and
    document-type constraints it named, in the order met."""

    body: str
    products: list[str] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    metadata_only: bool = False  # only constraints: an author, a venue ("articles by Prieve"), a product


def strip_openers(text: str) -> str:
    """The request without the words that only ask ("find the documents about", "I'm looking
    for", "how to", "what is the", a question's leading "does"), repeatedly from the start, and
    without a question mark. Returns the text unchanged rather than nothing when it is all opener."""
    rest = " ".join(text.split()).strip()
    changed = True
    while changed and rest:
        changed = False
        for opener in _OPENERS:
            m = opener.match(rest)
            if m and m.end() > 0 and query_terms(rest[m.end() :]):
                rest, changed = rest[m.end() :].lstrip(" ,:"), True
                break
        m = _LEAD.match(rest)
        if m and query_terms(rest[m.end() :]) and changed:
            rest = rest[m.end() :]
    rest = rest.rstrip(" ?!.")
    return rest if query_terms(rest) else text.strip()


def _products(text: str) -> tuple[list[str], str]:
    """Products the text names as what documents must be about ("Python's X", "X in SQLite"),
    and the text without those phrases (the possessive leaves its noun: "Python's zlib" → "zlib")."""
    found: list[str] = []

    def keep(name: str) -> bool:
        first = name.split()[0].lower().rstrip(".")
        return first not in _NOT_PRODUCTS and bool(query_terms(name))

    def poss(m: re.Match[str]) -> str:
        if keep(m.group(1)):
            found.append(m.group(1))
            return ""
        return m.group(0)

    def prep(m: re.Match[str]) -> str:
        if keep(m.group(1)):
            found.append(m.group(1))
            return ""
        return m.group(0)

    text = _POSSESSIVE.sub(poss, text)
    text = _PRODUCT_PREP.sub(prep, text)
    return list(dict.fromkeys(found)), " ".join(text.split()).strip(" ,;")


def _formats(text: str) -> tuple[list[str], str]:
    """Document types or formats the text asks for ("man pages about X", "X in PDF"), and the
    text without them."""
    found: list[str] = []
    m = _DOCTYPE_HEAD.match(text)
    if m and query_terms(text[m.end() :]):
        found.append(m.group(1))
        text = text[m.end() :]
    for pattern in (_DOCTYPE_AS, _DOCTYPE_TAIL):
        m = pattern.search(text)
        if m and query_terms(text[: m.start()] + text[m.end() :]):
            found.append(m.group(1))
            text = text[: m.start()] + text[m.end() :]
    return list(dict.fromkeys(f.lower() for f in found)), " ".join(text.split()).strip(" ,;")


def parse_requirements(core: str, *, lone_product_is_subject: bool = True) -> Parsed:
    """The intent's core (years and exclusions already taken out) as a body and its constraints.
    A name that is all the text says is its subject, unless `lone_product_is_subject` is False
    (a steering note narrowing a plan that has its subject)."""
    body = strip_openers(core)
    for constraint in (_BY_AUTHOR, _VENUE):
        rest = " ".join(constraint.sub(" ", body).split()).strip(" ,;")
        if query_terms(rest) and not _ONLY_DOCS.match(rest):
            body = rest
        elif rest != body:  # "articles by Prieve": the author is the whole request
            return Parsed(body="", metadata_only=True)
    formats, body = _formats(body)
    body = strip_openers(body)  # "tutorials on how to …"
    products, rest = _products(body)
    if not query_terms(rest) and lone_product_is_subject:  # "find the pages in SQLite": SQLite is the subject
        products, rest = [], body
    if not query_terms(rest):  # a steer "only in PostgreSQL": a product, no subject of its own
        return Parsed(body="", products=products, formats=formats, metadata_only=True)
    return Parsed(body=rest.strip(" ,;.?!"), products=products, formats=formats)


def aspect_kind(cue: str) -> ChecklistKind:
    """The kind of a requirement cut off by `cue`: method ("using", "with" …), application
    ("for", "applied to" …) or a plain aspect (a comma, "when", "and")."""
    return _CUE_KIND.get(" ".join(cue.lower().split()).strip(" ,;"), "aspect")


def split_and(piece: str) -> list[str]:
    """An aspect "Y and Z" (or "Y or Z": a comparison's sides) as two requirements ("with
    compression and encryption" asks for both), unless the first side only qualifies the last. Only aspects are split: in a subject "and" often
    names one notion ("search and replace")."""
    parts = [p.strip(" ,;") for p in _AND.split(piece)]
    if len(parts) < 2 or any(not query_terms(p) for p in parts):
        return [piece]
    first, last = query_terms(parts[0]), query_terms(parts[-1])
    # "regional or distant metastases": a longer last side shares its head noun with the first,
    # which is then only a modifier; two sides of three words or more are two things.
    if len(last) > len(first) and min(len(first), len(last)) < 3:
        return [piece]
    return parts


# Adverbial and filler phrases that qualify a neighbouring requirement but state none of their own.
# Cut off as a piece ("EventEmitter maximum listeners, by default" → "by default"), one became a
# requirement whose only content word, "default", matched an unrelated sentence 5.0/5.
FILLER_PHRASES = (
    "by default",
    "in general",
    "in practice",
    "in particular",
    "in detail",
    "in short",
    "in brief",
    "for example",
    "for instance",
    "at least",
    "at most",
    "e.g.",
    "i.e.",
    "etc.",
    "generally",
    "usually",
    "typically",
    "also",
)
_FILLER = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(p) for p in FILLER_PHRASES) + r")(?!\w)", re.IGNORECASE)


def filler_piece(piece: str, cue: str = "") -> bool:
    """Whether a piece (with the cue word that cut it off: " for " + "example") holds no content
    word beyond stopwords and FILLER_PHRASES ("by default", "in general", "for example", …)."""
    return not query_terms(_FILLER.sub(" ", f"{cue.strip(' ,;')} {piece}"))


# The preposition that attaches a qualifier to the subject's head ("compression of data streams",
# "conversion between Unicode and …", "scheduling callbacks after a delay").
_SUBJECT_PREP = re.compile(
    r"\s+(?:of|between|after|before|in|by|from|on|into|over|during|within|through|among)\s+", re.I
)


@dataclass(frozen=True)
class SubjectParts:
    """A subject cut into the notions it names (`heads`, topics) and the qualifier a
    preposition attaches to them (`qualifiers`, aspects)."""

    heads: list[str]
    qualifiers: list[str] = field(default_factory=list)


_NOMINAL = ("ing", "ion", "ment")


def split_subject(piece: str, protected: list[tuple[int, int]] | None = None) -> SubjectParts:
    """The subject as the parts a careful reader would check on their own: the qualifier after
    the first preposition ("compression of data streams" → "compression" + "data streams"), and
    the sides of the head's "and" when each is a notion of its own — two of two words or more
    ("write-ahead logging and checkpoint configuration"), a lone gerund before a phrase
    ("vacuuming and reclaiming free space"), or two nominalisations sharing their modifier ("log
    file configuration and rotation" → "… rotation" too). A lone word before a longer side
    shares its head ("date and time handling"), and two lone words name one notion ("search and
    replace"): neither is cut. Never inside `protected` spans (brackets, quotes)."""
    qualifiers: list[str] = []
    for m in _SUBJECT_PREP.finditer(piece):
        if any(a < m.start() < b for a, b in protected or []):
            continue
        head, qualifier = piece[: m.start()], piece[m.end() :]
        if query_terms(head) and not filler_piece(qualifier, m.group()):  # "tuning in practice"
            qualifiers, piece = [qualifier], head
        break
    sides: list[str] = []
    for side in (p.strip(" ,;") for p in _AND.split(piece)):
        last = sides[-1] if sides else ""
        if len(query_terms(last)) == 1 and " " not in last and not last.lower().endswith("ing"):
            sides[-1] = f"{last} and {side}"  # "date and time formatting": one notion's modifier
        else:
            sides.append(side)
    if len(sides) != 2 or not all(query_terms(s) for s in sides):
        return SubjectParts([piece], qualifiers)
    first, second = sides
    n_first, n_second = len(query_terms(first)), len(query_terms(second))
    own = min(n_first, n_second) >= 2 or (n_first == 1 and first.lower().endswith("ing") and n_second >= 2)
    if own:
        return SubjectParts(sides, qualifiers)
    head_word = first.split()[-1].lower()
    if n_second == 1 and n_first >= 2 and any(head_word.endswith(x) and second.lower().endswith(x) for x in _NOMINAL):
        return SubjectParts([first, f"{first.rsplit(' ', 1)[0]} {second}"], qualifiers)
    return SubjectParts([piece], qualifiers)


def clean_piece(piece: str) -> str:
    """A requirement phrase without leading articles or prepositions and trailing punctuation."""
    piece = piece.strip(" ,;.?!:")
    m = _LEAD.match(piece)
    if m and query_terms(piece[m.end() :]):
        piece = piece[m.end() :]
    return piece
