"""What a question and a sentence are about, for the extractive answer: identifiers, products.

Two failures this prevents, both seen on real documentation questions. The crude stem cuts every
word to five letters, so "checkpoint_timeout" met "checkpoint_completion_target" ("check") and the
answer to "the default of checkpoint_timeout" was checkpoint_completion_target's "default value of
0.9": an identifier (a word with an underscore or an inner capital) is matched whole here. And a
question that names a product ("SQLite's …") was answered from another product's document: a
document's product is its docid's first path part ("postgresql/runtime-config-wal"), and when the
question names one or more of the products among the documents, only their documents answer, and a
sentence that names another of those products and none of the question's is not quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from nodes.evidence.sentences import WORD, stem
from nodes.tools.excerpts import STOPWORDS

_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
# A product named by a shorter form ("postgres" for "postgresql") must be at least this long.
MIN_ALIAS = 6


def is_identifier(word: str) -> bool:
    """A name in code or configuration: an underscore inside, or a capital after a small letter
    ("checkpoint_timeout", "DeflateCompressionLevel", "isolation_level")."""
    inner = word.strip("_")
    return "_" in inner or bool(_INNER_CAPITAL.search(word))


def term_key(word: str) -> str:
    """The key a word is matched by: an identifier whole (lower case), any other word its stem."""
    return word.lower().strip("_") if is_identifier(word) else stem(word)


@lru_cache(maxsize=1 << 14)
def keys(text: str) -> frozenset[str]:
    """The content words of `text` as match keys (`term_key`)."""
    return frozenset(term_key(w) for w in WORD.findall(text) if w.lower() not in STOPWORDS)


def identifiers(text: str) -> list[str]:
    """The identifiers of `text`, lower case, in order, without repeats."""
    return list(dict.fromkeys(w.lower().strip("_") for w in WORD.findall(text) if is_identifier(w)))


def asked_identifiers(question: str, docids: Sequence[str]) -> list[str]:
    """The question's identifiers that are not a product's name ("PostgreSQL" has an inner capital
    but names the product, which the subject rule holds; "max_connections" is asked about)."""
    products = {product_of(d) for d in docids} - {""}
    return [i for i in identifiers(question) if not named_products(i, products)]


def product_of(docid: str) -> str:
    """A document's product: its docid's first path part, lower case ('' for a flat docid)."""
    head, sep, _ = docid.partition("/")
    return head.lower() if sep else ""


def named_products(question: str, products: Iterable[str]) -> set[str]:
    """The products the question names: a word equal to one ("Python's" → python), or a long
    enough start of one ("Postgres" → postgresql); "sqlite3" does not name sqlite."""
    words = {w.lower() for w in WORD.findall(question)}
    return {p for p in products if p and (p in words or any(len(w) >= MIN_ALIAS and p.startswith(w) for w in words))}


def without_products(question: str, named: set[str]) -> str:
    """The question without the words that name the products in `named` ("What is the default
    checkpoint_timeout in PostgreSQL?" → "What is the default checkpoint_timeout in ?"): the subject
    rule already holds them, and a sentence of that product's manual seldom repeats its name."""
    if not named:
        return question
    return WORD.sub(lambda m: " " if named_products(m.group(), named) else m.group(), question)


def subject_products(question: str, docids: Sequence[str]) -> tuple[set[str], set[str]]:
    """(the products among the documents, those the question names)."""
    products = {product_of(d) for d in docids} - {""}
    return products, named_products(question, products)


def off_subject(sentence: str, docid: str, products: set[str], named: set[str]) -> bool:
    """Whether a sentence must not answer: the question names products and the sentence's
    document is another's, or the sentence names another of the products and none of the named."""
    if not named:
        return False
    if product_of(docid) and product_of(docid) not in named:
        return True
    said = named_products(sentence, products)
    return bool(said - named) and not said & named


def identifier_clash(question_ids: Sequence[str], sentence: str, context: str) -> bool:
    """Whether the sentence is about another identifier than the question's: the question names
    identifiers, the sentence (with the heading it stands under, `context`) names none of them,
    and its heading names another ("With the default value of 0.9" under
    checkpoint_completion_target is no answer about checkpoint_timeout)."""
    if not question_ids:
        return False
    own = set(identifiers(f"{sentence} {context}"))
    return not own & set(question_ids) and bool(set(identifiers(context)))
