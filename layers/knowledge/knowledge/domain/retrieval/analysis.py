"""Text analysis of the lexical (BM25) leg: one analyzer for every language family (DESIGN §4).

Both index adapters analyze ``title``, ``text`` and the query alike:

1. NFKC normalization (full-width Latin and half-width katakana to their usual forms, ligatures,
   decomposed accents composed), as OpenSearch's ``cjk_width`` filter and more.
2. Words by Unicode's default word boundaries (UAX #29), as Lucene's ``standard`` tokenizer:
   ``don't``, ``3.14`` and ``snake_case`` stay whole; pieces with no letter, digit or emoji go.
3. CJK: each run of Han, Hiragana, Katakana and Hangul characters becomes its overlapping character
   bigrams, as the ``cjk_bigram`` filter. Indexed text also keeps every single character
   (``output_unigrams``: ``東京都`` → ``東 東京 京 京都 都``), while a query keeps only the bigrams
   (``東京``, ``京都``), or the character itself when it stands alone: ``京都`` does not match ``東京``,
   and a one-character query (``雨``) still matches.
4. Lower case, then ASCII folding (``Café`` → ``cafe``, ``straße`` → ``strasse``, the typographic
   apostrophes ``’`` and ``‘`` → ``'``), as ``asciifolding``; so ``Alzheimer’s`` loses its possessive
   to the stemmer as ``Alzheimer's`` does.
5. Lucene's English stop words are removed.

The engines then stem with Snowball English (porter2), which also drops the possessive ``'s``:
tantivy's ``english`` stemmer in the embedded index, the ``stemmer`` filter with ``language: porter2``
in OpenSearch. No plugin is needed, so a local run, a test server and any OpenSearch domain agree,
but for these known differences (pinned by ``tests/integration/test_opensearch_analysis.py``):

- Lucene 9.12's Snowball English, an older release than tantivy's, conflates more word families
  (``organism`` and ``organization`` → ``organ``, ``interval`` → ``interv``, ``universal`` →
  ``univers``) and keeps ``-ologist`` whole (tantivy: ``-olog``);
- NFKC folds what Lucene's filters keep or drop: the micro sign (``µg`` → ``μg``), superscripts and
  subscripts (``m²`` → ``m2``), ``™`` → ``tm``; decomposed accents (``e`` + U+0301) are composed
  here but not by OpenSearch's built-in filters, so text written that way matches only locally.

On BEIR SciFact they touch 1,076 of 5,183 abstracts and 9 of 1,109 queries and move lexical nDCG@10
by less than 0.001 (docs/benchmarks.md).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import regex

from knowledge.domain.retrieval.stopwords import LUCENE_ENGLISH_STOP_WORDS

CJK_CHARACTERS = (
    r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\u30fc\uff70"  # the prolonged sound marks are Common
)
"""The character class (``regex`` syntax) of the scripts turned into bigrams."""

_CJK_RUN = regex.compile(f"[{CJK_CHARACTERS}]+")
_WORD_BOUNDARY = regex.compile(r"\b", flags=regex.WORD | regex.V1)
_TOKEN_CONTENT = regex.compile(r"[\p{L}\p{N}\p{Extended_Pictographic}\p{Regional_Indicator}]")
_COMBINING_ACCENTS = regex.compile(r"[\u0300-\u036f]")
_FOLDS_BEYOND_DECOMPOSITION = {
    "æ": "ae",
    "œ": "oe",
    "ø": "o",
    "ß": "ss",
    "đ": "d",
    "ð": "d",
    "ħ": "h",
    "ı": "i",
    "ł": "l",
    "ŀ": "l",
    "ŋ": "n",
    "þ": "th",
    "ſ": "s",
}


_APOSTROPHES = "\u2018\u2019"
"""The quotation marks UAX #29 keeps inside a word (``Alzheimer’s``, ``don’t``), which Lucene's
``asciifolding`` turns into ``'``."""


def _ascii_folds() -> dict[int, str]:
    """Lower-case Latin letters with an ASCII base: their base (``é`` → ``e``), plus the letters whose
    ASCII form is not a decomposition (``ø`` → ``o``), and the in-word apostrophes (``’`` → ``'``)."""
    table: dict[int, str] = {ord(letter): ascii for letter, ascii in _FOLDS_BEYOND_DECOMPOSITION.items()}
    table.update({ord(mark): "'" for mark in _APOSTROPHES})
    for code in (*range(0x00C0, 0x0250), *range(0x1E00, 0x1F00)):
        character = chr(code)
        base = "".join(c for c in unicodedata.normalize("NFKD", character) if not unicodedata.combining(c))
        if base != character and base.isascii() and base.isalpha():
            table.setdefault(code, base.lower())
    return table


_ASCII_FOLDS = _ascii_folds()


def fold(word: str) -> str:
    """``word`` normalized, lower-cased and ASCII-folded (steps 1 and 4): the form two spellings of a
    word share when they should match (``Café``, ``CAFÉ`` and ``cafe`` → ``cafe``)."""
    return _fold_normalized(unicodedata.normalize("NFKC", word))


def analyze(text: str, *, query: bool = False) -> list[str]:
    """The terms of ``text`` before stemming, in order (steps 1–5 of the module doc); ``query`` selects
    the query form of CJK runs (bigrams only).

    Pure and total: any string gives a (possibly empty) list; no term contains whitespace.
    """
    terms = _terms(unicodedata.normalize("NFKC", text), unigrams=not query)
    return [term for term in terms if term not in _STOP_WORDS]


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query; empty when it holds only stop words, punctuation or spaces, so
    the lexical leg has nothing to match."""
    return list(dict.fromkeys(analyze(text, query=True)))


_STOP_WORDS = LUCENE_ENGLISH_STOP_WORDS


def _fold_normalized(word: str) -> str:
    # Lower-casing can leave a bare combining accent (``İ`` → ``i`` + U+0307), which goes too.
    folded: str = _COMBINING_ACCENTS.sub("", word.casefold().translate(_ASCII_FOLDS))
    return folded


def _terms(text: str, *, unigrams: bool) -> Iterator[str]:
    position = 0
    for run in _CJK_RUN.finditer(text):
        yield from _words(text[position : run.start()])
        yield from _bigrams(run.group(), unigrams=unigrams)
        position = run.end()
    yield from _words(text[position:])


def _words(text: str) -> Iterator[str]:
    for piece in _WORD_BOUNDARY.split(text):
        if _TOKEN_CONTENT.search(piece):
            yield _fold_normalized(piece)


def _bigrams(run: str, *, unigrams: bool) -> Iterator[str]:
    if unigrams or len(run) == 1:
        yield run[0]
    for index in range(1, len(run)):
        yield run[index - 1 : index + 1]
        if unigrams:
            yield run[index]
