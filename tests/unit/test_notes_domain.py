"""Pure rules of notes (DESIGN §9): paths, visibility, claims, lifecycle and fusion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from knowledge.domain.memory.lifecycle import NoteDraft, forgotten_note, new_note, restored_note, revised_note
from knowledge.domain.memory.notes import (
    REDACTED,
    ForgetMode,
    MemoryType,
    NoteStatus,
    can_see_note,
    content_claim,
    normalize_path,
    path_ancestors,
)
from knowledge.domain.memory.retrieval import NoteHit, NoteLegHits, fuse_notes
from knowledge.domain.models import Principal, Scope
from knowledge.domain.retrieval.hits import SearchMode

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _draft(content: str = "Deploys happen on Tuesdays.", **changes: object) -> NoteDraft:
    fields: dict[str, object] = {
        "content": content,
        "scope": Scope.PRIVATE,
        "team_id": None,
        "agent_id": None,
        "path": "/",
        "memory_type": MemoryType.FACT,
        "importance": 0.5,
        "semantic_key": None,
        "expires_at": None,
        **changes,
    }
    return NoteDraft(**fields)  # type: ignore[arg-type]


def _principal(subject_id: str, tenant_id: str = "t", team_ids: frozenset[str] = frozenset()) -> Principal:
    return Principal(tenant_id=tenant_id, subject_id=subject_id, scopes=frozenset(), team_ids=team_ids)


@pytest.mark.parametrize(
    ("raw", "stored"), [("", "/"), ("/", "/"), ("projects//alpha/ ", "/projects/alpha"), (" a / b ", "/a/b")]
)
def test_normalize_path_drops_empty_segments_and_spaces(raw: str, stored: str) -> None:
    assert normalize_path(raw) == stored


def test_path_ancestors_lists_every_prefix_a_filter_may_name() -> None:
    assert path_ancestors("/a/b") == ["/", "/a", "/a/b"]
    assert path_ancestors("/") == ["/"]


def test_can_see_note_follows_the_base_visibility_rule() -> None:
    private = new_note("t", "alice", _draft(), supersedes=(), now=NOW)
    team = new_note("t", "alice", _draft(scope=Scope.TEAM, team_id="red"), supersedes=(), now=NOW)
    tenant = new_note("t", "alice", _draft(scope=Scope.TENANT), supersedes=(), now=NOW)

    assert can_see_note(_principal("alice"), private)
    assert not can_see_note(_principal("bob"), private)
    assert can_see_note(_principal("bob", team_ids=frozenset({"red"})), team)
    assert not can_see_note(_principal("bob", team_ids=frozenset({"blue"})), team)
    assert can_see_note(_principal("bob"), tenant)
    assert not can_see_note(_principal("alice", tenant_id="other"), tenant)


def test_content_claim_is_the_same_for_the_same_fact_spaced_differently() -> None:
    one = new_note("t", "alice", _draft("Deploys  happen\non Tuesdays. "), supersedes=(), now=NOW)
    two = new_note("t", "alice", _draft("Deploys happen on Tuesdays."), supersedes=(), now=NOW)
    other_path = new_note(
        "t", "alice", _draft("Deploys happen on Tuesdays.", path="/ops"), supersedes=(), now=NOW
    )

    assert content_claim(one) == content_claim(two)
    assert content_claim(one) != content_claim(other_path)


def test_lifecycle_changes_each_yield_the_next_version() -> None:
    note = new_note("t", "alice", _draft(expires_at=NOW + timedelta(hours=1)), supersedes=(), now=NOW)
    revised = revised_note(note, _draft("Deploys happen on Thursdays."), supersedes=("nt_x",), now=NOW)
    redacted = forgotten_note(revised, ForgetMode.REDACT, now=NOW)
    soft = forgotten_note(revised, ForgetMode.SOFT, now=NOW)

    assert (revised.version, revised.supersedes, revised.expires_at) == (2, ("nt_x",), None)
    assert (redacted.status, redacted.content) == (NoteStatus.FORGOTTEN, REDACTED)
    assert restored_note(soft, now=NOW).status is NoteStatus.ACTIVE
    assert note.is_current(NOW)
    assert not note.is_current(NOW + timedelta(hours=2))
    with pytest.raises(ValueError, match="deletes"):
        forgotten_note(note, ForgetMode.HARD, now=NOW)


def test_fuse_notes_ranks_as_knowledge_fusion_does() -> None:
    legs = NoteLegHits(
        lexical=[
            NoteHit(note_id="nt_a", version=2, score=9.0),
            NoteHit(note_id="nt_b", version=1, score=3.0),
        ],
        semantic=[
            NoteHit(note_id="nt_b", version=1, score=0.9),
            NoteHit(note_id="nt_c", version=4, score=0.1),
        ],
    )

    hybrid = fuse_notes(legs, SearchMode.HYBRID, 0.5)
    rrf = fuse_notes(legs, SearchMode.RRF, 0.5)

    # max-only scaling per leg (score / leg maximum), then alpha * lexical + (1 - alpha) * semantic
    assert [(hit.note_id, hit.version) for hit in hybrid] == [("nt_b", 1), ("nt_a", 2), ("nt_c", 4)]
    assert [hit.final for hit in hybrid] == pytest.approx(
        [0.5 * 3.0 / 9.0 + 0.5 * 0.9 / 0.9, 0.5 * 9.0 / 9.0, 0.5 * 0.1 / 0.9]
    )
    assert rrf[0].note_id == "nt_b"
    assert rrf[0].final == pytest.approx(1 / 62 + 1 / 61)
    assert fuse_notes(legs, SearchMode.SEMANTIC, 0.5)[0].lexical is not None
