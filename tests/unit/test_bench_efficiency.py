"""``bench.efficiency``'s own parts: the generated notes, what the model is given for documents, the
progress lines and the wait for the index (no runtime, no data set)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench.efficiency import Progress, TextSet, dialogue_turns, embedded_texts, wait_until
from knowledge_local.cli.documents import SourceDocument


def test_dialogue_turns_are_distinct_short_and_the_same_for_a_seed() -> None:
    turns = dialogue_turns(2_000)

    assert len(set(turns)) == 2_000
    assert all(30 <= len(turn) <= 160 for turn in turns)
    assert dialogue_turns(50) == turns[:50]
    assert dialogue_turns(50, seed=1) != turns[:50]


def test_notes_are_embedded_as_they_are_and_documents_as_titled_chunks() -> None:
    notes = TextSet("notes", notes=["One note.", "Another note."])
    long_text = " ".join(f"Sentence number {n} says something about indexing." for n in range(400))
    documents = TextSet(
        "pages",
        documents=[
            SourceDocument(Path("a.md"), "a", "Short page", "A short page."),
            SourceDocument(Path("b.md"), "b", "Long page", long_text),
        ],
    )

    assert embedded_texts(notes) == ["One note.", "Another note."]
    texts = embedded_texts(documents)
    assert len(texts) > 2
    assert texts[0].startswith("Short page")
    assert all(text.startswith("Long page") for text in texts[1:])
    assert (notes.size, notes.unit, documents.size, documents.unit) == (2, "notes", 2, "documents")


def test_a_progress_line_gives_the_phase_the_count_the_rate_and_the_time_left(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress("notes written", 10, "notes")
    progress.add(4)
    progress.show(force=True)

    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("notes written: 4 of 10 notes after ")
    assert "/s, ETA " in line

    searchable = Progress("notes searchable", 100, "notes", started=time.monotonic() - 100)
    searchable.set(50)  # its clock is past the first line's time: the line comes at once
    assert (
        capsys.readouterr().err.strip() == "notes searchable: 50 of 100 notes after 100 s, 0.5/s, ETA 100 s"
    )


def test_waiting_ends_when_every_id_is_indexed_and_times_out_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("bench.efficiency.POLL_SECONDS", 0.0)
    rounds: list[list[str]] = []

    def indexed(pending: Sequence[str]) -> set[str]:
        rounds.append(list(pending))
        return set(pending[:1])  # one more each round

    wait_until(["a", "b", "c"], indexed, Progress("waiting", 3, "notes"), timeout=10)
    assert rounds == [["a", "b", "c"], ["b", "c"], ["c"]]

    with pytest.raises(TimeoutError, match="1 of 1 still not indexed"):
        wait_until(["x"], lambda pending: set(), Progress("waiting", 1, "notes"), timeout=0)
