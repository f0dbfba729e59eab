"""English stop words shared by the lexical leg and the excerpt matcher."""

from __future__ import annotations

LUCENE_ENGLISH_STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)
"""Lucene's ``EnglishAnalyzer`` default stop set (33 words), as OpenSearch's ``english`` analyzer uses,
so both index adapters ignore the same words."""

QUESTION_WORDS = frozenset({"how", "what", "when", "where", "which", "who", "why", "from"})
"""Words that shape a question but rarely appear near its answer; excerpts do not aim at them."""
