"""A deterministic synthetic corpus of BrowseComp-Plus-like length, written as a BEIR folder.

Document `i` depends only on (seed, i), so the 10k collection is a prefix of the 100k one and
two runs write identical files. Documents are streamed to `corpus.jsonl` one at a time: the
generator never holds more than one document's words.

- Text: ~5,000 words (4,000–6,000; `words` sets another mean, ±20%) in paragraphs of 60–140 words, drawn from a Zipfian
  vocabulary (exponent 1.05 over 200,000 pseudo-words built from syllables; the most frequent
  ranks are real English function words, so stopwords behave as in real text).
- Topics: every document has a primary topic (one of `TOPICS`) and, half the time, a secondary
  one. A topic is a theme (real English words MiniLM understands, shared by 25 topics) plus three
  pseudo-words unique to it. They are planted in three paragraphs of a primary-topic document
  (one of a secondary) and one topic word goes into the title.
- Queries: one per topic (the first `queries`), two theme words and two of the topic's unique
  words; qrels grade primary-topic documents 2 and secondary-topic documents 1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SEED = 12
VOCAB = 200_000
ZIPF_S = 1.05
TOPICS = 1000
THEMES = (
    "volcano eruption lava magma ash crater",
    "violin orchestra symphony concert melody composer",
    "glacier ice melting arctic polar climate",
    "vaccine immune antibody infection virus clinic",
    "railway locomotive train station track freight",
    "bakery bread flour oven dough pastry",
    "satellite orbit rocket launch spacecraft telescope",
    "election ballot voter parliament campaign candidate",
    "coral reef ocean fish marine diving",
    "chess tournament grandmaster opening endgame rating",
    "wine vineyard grape harvest cellar vintage",
    "earthquake fault seismic tremor quake tsunami",
    "bicycle cycling race pedal helmet tour",
    "honey bees hive pollen beekeeper swarm",
    "bridge engineering steel cable suspension span",
    "museum painting gallery artist canvas exhibition",
    "football stadium goal league striker match",
    "pharmacy drug dosage prescription tablet medicine",
    "desert sand dune camel oasis drought",
    "library books archive manuscript reading catalogue",
    "submarine navy torpedo sonar vessel fleet",
    "coffee espresso roast beans barista brew",
    "forest wildfire smoke firefighters blaze evacuation",
    "bank loan mortgage interest credit lender",
    "dinosaur fossil skeleton paleontology excavation bones",
    "airport airline flight runway pilot passengers",
    "robot automation factory assembly machine sensor",
    "hospital surgery surgeon patient operation nurse",
    "mountain climbing summit expedition altitude everest",
    "opera singer soprano stage aria theatre",
    "cheese dairy milk cows farm pasture",
    "hurricane storm wind flooding rainfall landfall",
    "smartphone battery screen charger device app",
    "court judge trial verdict lawyer jury",
    "whale dolphin migration ocean pod mammal",
    "garden roses flowers soil compost seeds",
    "olympics athlete medal sprint marathon record",
    "printing press newspaper journalist editor headline",
    "mining copper ore quarry miners shaft",
    "piano pianist keyboard sonata recital chords",
)
_FUNCTION_WORDS = (
    "the of and to a in is that for it as was with on by be this are from at or an "
    "which have not they their has but one were all been we more its had also there "
    "can other when some into would than only new over these such most after"
).split()
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = [c + v for c in _CONSONANTS for v in _VOWELS]  # 70


def pseudo_word(j: int) -> str:
    """A unique pronounceable word for index j (2 syllables below 4,900, then 3, then 4)."""
    n = len(_SYLLABLES)
    length = 2 if j < n**2 else 3 if j < n**2 + n**3 else 4
    j -= 0 if length == 2 else n**2 if length == 3 else n**2 + n**3
    out = []
    for _ in range(length):
        j, r = divmod(j, n)
        out.append(_SYLLABLES[r])
    return "".join(out)


@dataclass(frozen=True)
class Topic:
    theme: tuple[str, ...]
    unique: tuple[str, str, str]

    def words(self) -> list[str]:
        return [*self.theme, *self.unique]


def topic(t: int) -> Topic:
    theme = tuple(THEMES[t % len(THEMES)].split())
    base = VOCAB + 3 * t
    return Topic(theme, (pseudo_word(base), pseudo_word(base + 1), pseudo_word(base + 2)))


class Vocabulary:
    def __init__(self) -> None:
        ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
        weights = ranks**-ZIPF_S
        self.cdf = np.cumsum(weights / weights.sum())
        self.words = [_FUNCTION_WORDS[j] if j < len(_FUNCTION_WORDS) else pseudo_word(j) for j in range(VOCAB)]

    def draw(self, rng: np.random.Generator, n: int) -> list[str]:
        idx = np.searchsorted(self.cdf, rng.random(n), side="right").clip(max=VOCAB - 1)
        return [self.words[i] for i in idx.tolist()]


@dataclass(frozen=True)
class SyntheticDoc:
    docid: str
    title: str
    text: str
    primary: int
    secondary: int | None


def _plant(rng: np.random.Generator, words: list[str], t: Topic, share: float) -> None:
    """Replace a share of a paragraph's words by the topic's words (in place)."""
    vocab = t.words()
    for pos in rng.choice(len(words), size=min(len(words), max(2, int(len(words) * share))), replace=False).tolist():
        words[pos] = vocab[int(rng.integers(len(vocab)))]


LONG_WORDS = 5000  # the mean length of a document (BrowseComp-Plus-like); `--words` chooses another


def make_doc(vocab: Vocabulary, i: int, seed: int = SEED, mean_words: int = LONG_WORDS) -> SyntheticDoc:
    """Document `i`: `mean_words` words on average (0.8–1.2×), in paragraphs of 60–140 words."""
    rng = np.random.default_rng([seed, i])
    primary = int(rng.integers(TOPICS))
    secondary = int(rng.integers(TOPICS)) if rng.random() < 0.5 else None
    if secondary == primary:
        secondary = None
    n_words = int(rng.integers(mean_words * 4 // 5, mean_words * 6 // 5 + 1))
    words = vocab.draw(rng, n_words)
    paragraphs, start = [], 0
    while start < n_words:
        size = int(rng.integers(60, 141))
        if n_words - (start + size) < 30:  # no stub paragraph at the end
            size = n_words - start
        paragraphs.append(words[start : start + size])
        start += size
    plants = [(primary, 0.15)] * 3 + ([(secondary, 0.10)] if secondary is not None else [])
    # a short document has fewer paragraphs than plants: some paragraph then takes two
    few = len(paragraphs) < len(plants)
    for (t, share), p in zip(plants, rng.choice(len(paragraphs), size=len(plants), replace=few).tolist(), strict=True):
        _plant(rng, paragraphs[p], topic(t), share)
    main = topic(primary)
    title_words = vocab.draw(rng, int(rng.integers(3, 7)))
    title_words.insert(int(rng.integers(len(title_words) + 1)), main.unique[0])
    title = " ".join(title_words).capitalize()
    text = "\n\n".join(" ".join(p) for p in paragraphs)
    return SyntheticDoc(f"d{i:06d}", title, text, primary, secondary)


def iter_docs(n: int, seed: int = SEED, words: int = LONG_WORDS) -> Iterator[SyntheticDoc]:
    vocab = Vocabulary()
    for i in range(n):
        yield make_doc(vocab, i, seed, words)


def query_text(t: int) -> str:
    top = topic(t)
    return " ".join([top.theme[0], top.theme[1], top.unique[0], top.unique[1]])


@dataclass(frozen=True)
class Written:
    documents: int
    raw_bytes: int  # UTF-8 bytes of titles and texts (what a reader of the corpus reads)
    file_bytes: int  # corpus.jsonl on disk
    queries: int


def write_beir(folder: Path, n: int, queries: int = 60, seed: int = SEED, words: int = LONG_WORDS) -> Written:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv for the first n documents."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    wanted = range(min(queries, TOPICS))
    relevant: dict[int, dict[str, int]] = {t: {} for t in wanted}
    raw = 0
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for doc in iter_docs(n, seed, words):
            raw += len(doc.title.encode()) + len(doc.text.encode())
            out.write(json.dumps({"_id": doc.docid, "title": doc.title, "text": doc.text}) + "\n")
            if doc.primary in relevant:
                relevant[doc.primary][doc.docid] = 2
            if doc.secondary in relevant:
                relevant[doc.secondary].setdefault(doc.docid, 1)
    kept = [t for t in wanted if relevant[t]]
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        for t in kept:
            out.write(json.dumps({"_id": f"q{t:04d}", "text": query_text(t)}) + "\n")
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for t in kept:
            for docid, grade in sorted(relevant[t].items()):
                out.write(f"q{t:04d}\t{docid}\t{grade}\n")
    return Written(n, raw, (folder / "corpus.jsonl").stat().st_size, len(kept))
