"""Data source rules (``knowledge.domain.data_sources``), the document queue's bodies
(``knowledge.contract.data_sources``), their table keys, and ``knowledge sync``'s follower."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from knowledge.adapters.dynamodb import keys
from knowledge.contract.data_sources import (
    DOCUMENT_MESSAGE,
    CreateDataSourceRequest,
    S3Notification,
    S3TestEvent,
    SyncWork,
)
from knowledge.domain.data_sources import (
    FAILURES_KEPT,
    DataSource,
    FailureReason,
    ObjectFailure,
    SyncCounts,
    SyncJob,
    key_problem,
    matches,
    source_uri,
    title_from_key,
)
from knowledge_local.cli.commands import sync

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _source(prefix: str = "docs/", include: tuple[str, ...] = ("**",)) -> DataSource:
    return DataSource(
        data_source_id="ds_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
        tenant_id="acme",
        knowledge_base_id="kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
        bucket="team-docs",
        prefix=prefix,
        include=include,
        created_by="ana",
        created_at=NOW,
    )


@pytest.mark.parametrize(
    ("glob", "key", "expected"),
    [
        ("**", "a/b/c.pdf", True),
        ("*.md", "guide.md", True),
        ("*.md", "team/guide.md", False),
        ("**/*.md", "team/guide.md", True),
        ("team/**", "team/a/b.txt", True),
        ("team/**", "other/a.txt", False),
        ("report-?.csv", "report-1.csv", True),
        ("report-[0-9].csv", "report-x.csv", False),
    ],
)
def test_matches_glob_and_key_selects_as_documented(glob: str, key: str, expected: bool) -> None:
    assert matches(key, (glob,)) is expected


def test_data_source_holds_only_keys_under_its_prefix_matching_a_glob() -> None:
    source = _source(include=("*.md", "ops/**"))

    assert [source.holds(key) for key in ("docs/a.md", "docs/ops/x/y.pdf", "docs/b/a.md", "other/a.md")] == [
        True,
        True,
        False,
        False,
    ]


def test_data_source_external_id_names_the_data_source_and_the_key() -> None:
    assert _source().external_id("docs/a.md") == "ds_01J9Z3K4QW5E6R7T8Y9V0A1B2C:docs/a.md"


def test_source_uri_percent_encodes_the_key_but_its_slashes() -> None:
    assert source_uri("team-docs", "guides/new guide#1.md") == "s3://team-docs/guides/new%20guide%231.md"


@pytest.mark.parametrize(
    ("key", "title"),
    [
        ("guides/deploy.md", "deploy"),
        ("README", "README"),
        ("a/.env", ".env"),
        ("x/report.v2.pdf", "report.v2"),
    ],
)
def test_title_from_key_is_the_file_name_without_its_suffix(key: str, title: str) -> None:
    assert title_from_key(key) == title


def test_key_problem_of_a_key_too_long_to_record_is_key_too_long() -> None:
    assert key_problem("a" * 1_001) is FailureReason.KEY_TOO_LONG
    assert key_problem("a" * 900) is None


def test_sync_job_keeps_the_first_failures_and_counts_them_all() -> None:
    job = SyncJob(
        sync_job_id="sj_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
        data_source_id="ds_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
        tenant_id="acme",
        knowledge_base_id="kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
        created_at=NOW,
    )
    failures = [
        ObjectFailure(key=f"k{number}", reason=FailureReason.TOO_LARGE, message="m") for number in range(60)
    ]

    recorded = job.recorded(SyncCounts(scanned=60, failed=60), failures)

    assert len(recorded.failures) == FAILURES_KEPT
    assert recorded.failures[0].key == "k0"
    assert recorded.counts.failed == 60


def test_document_message_of_s3_decodes_url_encoded_keys() -> None:
    body = {
        "Records": [
            {
                "eventSource": "aws:s3",
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": "team-docs"}, "object": {"key": "a+b%2Fc%2B.md", "size": 3}},
            }
        ]
    }

    message = DOCUMENT_MESSAGE.validate_json(json.dumps(body))

    assert isinstance(message, S3Notification)
    assert message.Records[0].s3.object.decoded_key == "a b/c+.md"


def test_document_message_of_s3_test_event_is_recognised() -> None:
    message = DOCUMENT_MESSAGE.validate_json('{"Service": "Amazon S3", "Event": "s3:TestEvent"}')

    assert isinstance(message, S3TestEvent)


@pytest.mark.parametrize(
    "body",
    [
        {
            "op": "sync",
            "tenant_id": "acme",
            "data_source_id": "kb_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
            "sync_job_id": "x",
        },
        {
            "op": "sync",
            "tenant_id": "a#b",
            "data_source_id": "ds_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
            "sync_job_id": "x",
        },
        {"Records": [{"eventSource": "aws:sqs", "eventName": "x", "s3": {}}]},
    ],
)
def test_document_message_malformed_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DOCUMENT_MESSAGE.validate_json(json.dumps(body))


def test_sync_work_of_well_formed_ids_is_accepted() -> None:
    work = SyncWork(
        op="sync",
        tenant_id="acme",
        data_source_id="ds_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
        sync_job_id="sj_01J9Z3K4QW5E6R7T8Y9V0A1B2C",
    )

    assert DOCUMENT_MESSAGE.validate_json(work.model_dump_json()) == work


def test_create_data_source_request_defaults_to_the_whole_bucket_and_every_object() -> None:
    request = CreateDataSourceRequest(type="s3", bucket="team-docs")

    assert (request.prefix, request.include) == ("", ["**"])


def test_synced_keys_sort_as_the_listing_and_keep_any_character() -> None:
    first = keys.synced_key("acme", "ds_1", "a#b/c.md")
    second = keys.synced_key("acme", "ds_1", "a#c.md")

    assert first.pk == second.pk == "T#acme#DS#ds_1"
    assert first.sk == "OBJ#a#b/c.md"
    assert first.sk < second.sk
    with pytest.raises(ValueError, match="never empty"):
        keys.synced_sort_key("")


def test_bucket_source_key_partitions_by_bucket() -> None:
    assert keys.bucket_source_key("team-docs", "acme", "ds_1") == keys.TableKey(
        "S3BUCKET#team-docs", "T#acme#DS#ds_1"
    )


class _Jobs:
    """Answers a job that runs, then succeeds."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers

    def sync_job(self, base_id: str, sync_job_id: str) -> dict[str, Any]:
        return self.answers.pop(0)


def _job(status: str, scanned: int) -> dict[str, Any]:
    counts = dict.fromkeys(sync.COUNTS, 0) | {"scanned": scanned, "added": scanned}
    return {"status": status, "phase": "listing", "pages": 1, "counts": counts}


def test_sync_follow_polls_until_the_job_ends() -> None:
    answers = [_job("queued", 0), _job("running", 5), _job("succeeded", 9)]
    ticks = iter(range(100))

    job = sync.follow(_Jobs(answers), "kb", "sj", clock=lambda: float(next(ticks)), sleep=lambda _: None)  # type: ignore[arg-type]

    assert job["status"] == "succeeded"
    assert sync.describe(job["counts"]) == "9 scanned, 9 added, 0 updated, 0 unchanged, 0 deleted, 0 failed"


def test_sync_follow_past_its_timeout_is_sync_timeout() -> None:
    ticks = iter(range(0, 1000, 10))

    with pytest.raises(sync.ApiError) as raised:
        sync.follow(
            _Jobs([_job("running", 1)] * 10),  # type: ignore[arg-type]
            "kb",
            "sj",
            timeout=25,
            clock=lambda: float(next(ticks)),
            sleep=lambda _: None,
        )

    assert raised.value.code == "sync_timeout"
