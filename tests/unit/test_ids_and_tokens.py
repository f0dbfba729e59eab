from __future__ import annotations

from datetime import UTC, datetime, timedelta

from knowledge.domain import ids
from knowledge.domain.access.bearer_tokens import hash_token, new_token
from knowledge.domain.models import TokenRecord


def test_new_ids_are_prefixed_well_formed_and_increasing() -> None:
    minted = [ids.new_revision_id() for _ in range(1000)]
    assert all(ids.is_well_formed(value, ids.REVISION_PREFIX) for value in minted)
    assert minted == sorted(minted)
    assert len(set(minted)) == len(minted)


def test_is_well_formed_rejects_wrong_prefix_and_junk() -> None:
    item_id = ids.new_item_id()
    assert ids.is_well_formed(item_id, ids.ITEM_PREFIX)
    assert not ids.is_well_formed(item_id, ids.KB_PREFIX)
    assert not ids.is_well_formed("ki_../../etc", ids.ITEM_PREFIX)
    assert not ids.is_well_formed(item_id.lower(), ids.ITEM_PREFIX)


def test_token_hash_is_stable_and_tokens_are_unique() -> None:
    token = new_token()
    assert hash_token(token) == hash_token(token)
    assert len(hash_token(token)) == 64
    assert new_token() != token


def test_token_record_expired_or_revoked_is_not_valid() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    base = TokenRecord(
        token_hash="h", tenant_id="t", subject_id="s", created_at=now, expires_at=now + timedelta(hours=1)
    )
    assert base.is_valid_at(now)
    assert not base.is_valid_at(now + timedelta(hours=1))
    assert not base.model_copy(update={"revoked": True}).is_valid_at(now)


def test_the_shape_of_an_id_names_its_kind_with_the_right_article() -> None:
    assert ids.shape_of(ids.ERASURE_PREFIX).startswith("must be an erasure id: er_ followed by 26")
    assert ids.shape_of(ids.EXPORT_PREFIX).startswith("must be an export id")
    assert ids.shape_of(ids.KB_PREFIX).startswith("must be a knowledge base id")
