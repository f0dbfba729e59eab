"""DynamoDBKnowledgeStore failures: DynamoDB errors become domain errors; retries happen where safe."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.domain.models import ItemStatus, KnowledgeBase, Source
from knowledge.domain.retrieval.truth import CandidateKey
from knowledge.errors import ConflictError, DependencyUnavailableError
from tests.conftest import TABLE_NAME
from tests.support.store import REGION, failing, intercepted, make_base, make_store, new_client, raw_items

TENANT = "tenant-a"
UNAVAILABLE_CODES = [
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "ResourceNotFoundException",
]


@pytest.fixture
def client(table: Any) -> Any:
    return new_client()


@pytest.fixture
def store(client: Any) -> DynamoDBKnowledgeStore:
    return make_store(client, page_size_chars=1_000)


@pytest.fixture
def base(store: DynamoDBKnowledgeStore) -> KnowledgeBase:
    return make_base(store, TENANT)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("knowledge.adapters.dynamodb.table.backoff", lambda attempt: 0.0)


def test_get_item_throttled_client_raises_dependency_unavailable() -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    store = make_store(client)

    with Stubber(client) as stubber:
        stubber.add_client_error("get_item", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(DependencyUnavailableError) as raised:
            store.get_item(TENANT, "ki_01ABSENT00000000000000000000")

    assert raised.value.retryable
    assert raised.value.code == "dependency_unavailable"


@pytest.mark.parametrize("code", UNAVAILABLE_CODES)
def test_list_items_unavailable_codes_raise_dependency_unavailable(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase, code: str
) -> None:
    with intercepted(client, "Query", failing(code, times=1)), pytest.raises(DependencyUnavailableError):
        store.list_items(TENANT, base.knowledge_base_id, limit=10, next_token=None)


def test_get_item_validation_error_propagates_unchanged(store: DynamoDBKnowledgeStore, client: Any) -> None:
    with intercepted(client, "GetItem", failing("ValidationException", times=1)), pytest.raises(ClientError):
        store.get_item(TENANT, "ki_01ABSENT00000000000000000000")


def test_get_item_unreachable_endpoint_raises_dependency_unavailable() -> None:
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=1)
    client = boto3.client("dynamodb", region_name=REGION, endpoint_url="http://127.0.0.1:9", config=config)
    store = DynamoDBKnowledgeStore(TABLE_NAME, dynamodb_client=client)

    with pytest.raises(DependencyUnavailableError):
        store.get_item(TENANT, "ki_01ABSENT00000000000000000000")


def test_add_revision_throttled_seal_keeps_item_and_hides_pages(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase
) -> None:
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="T",
        content="v1",
        source=Source(),
        external_id=None,
        publish=True,
    )
    reasons = {"CancellationReasons": [{"Code": "None"}, {"Code": "ThrottlingError"}]}

    throttled = failing("TransactionCanceledException", 1, **reasons)
    with intercepted(client, "TransactWriteItems", throttled), pytest.raises(DependencyUnavailableError):
        store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content="x" * 2_500,
            title=None,
            source=None,
            publish=True,
            expected_version=1,
        )

    assert store.get_item(TENANT, item.knowledge_item_id) == item
    assert len(store.list_revisions(TENANT, item.knowledge_item_id, limit=10, next_token=None).entries) == 1
    # The outcome of a throttled commit is unknown to the caller, so its pages stay (unreachable).
    assert len(raw_items("PAGE#")) == 1 + 3


def test_publish_revision_transaction_conflict_is_retried_and_succeeds(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase, no_backoff: None
) -> None:
    item, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="T",
        content="v1",
        source=Source(),
        external_id=None,
        publish=False,
    )
    reasons = {"CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}]}

    with intercepted(client, "TransactWriteItems", failing("TransactionCanceledException", 2, **reasons)):
        published = store.publish_revision(
            TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=1
        )

    assert (published.version, published.status) == (2, ItemStatus.PUBLISHED)
    assert store.get_item(TENANT, item.knowledge_item_id) == published


def test_publish_revision_persistent_transaction_conflict_raises_conflict(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase, no_backoff: None
) -> None:
    item, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="T",
        content="v1",
        source=Source(),
        external_id=None,
        publish=False,
    )
    reasons = {"CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}]}

    conflicting = failing("TransactionCanceledException", 100, **reasons)
    with intercepted(client, "TransactWriteItems", conflicting), pytest.raises(ConflictError):
        store.publish_revision(
            TENANT, item.knowledge_item_id, revision.knowledge_revision_id, expected_version=1
        )

    assert store.get_item(TENANT, item.knowledge_item_id) == item


def _unprocessed_once() -> Any:
    calls = [0]

    def answer(body: dict[str, Any]) -> dict[str, Any] | None:
        calls[0] += 1
        if calls[0] > 1:
            return None
        return {"Responses": {TABLE_NAME: []}, "UnprocessedKeys": body["RequestItems"]}

    return answer


def test_get_items_unprocessed_keys_are_retried_until_found(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase, no_backoff: None
) -> None:
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="T",
        content="v1",
        source=Source(),
        external_id=None,
        publish=False,
    )

    with intercepted(client, "BatchGetItem", _unprocessed_once()):
        found = store.get_items(TENANT, [item.knowledge_item_id])

    assert found == {item.knowledge_item_id: item}


def test_get_items_keys_never_processed_raise_dependency_unavailable(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase, no_backoff: None
) -> None:
    def never(body: dict[str, Any]) -> dict[str, Any]:
        return {"Responses": {TABLE_NAME: []}, "UnprocessedKeys": body["RequestItems"]}

    with intercepted(client, "BatchGetItem", never), pytest.raises(DependencyUnavailableError):
        store.get_items(TENANT, ["ki_01ABSENT00000000000000000000"])


def test_read_candidates_unprocessed_keys_are_retried_until_found(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase, no_backoff: None
) -> None:
    item, revision = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="T",
        content="v1",
        source=Source(),
        external_id=None,
        publish=True,
    )
    candidate = CandidateKey(base.knowledge_base_id, item.knowledge_item_id, revision.knowledge_revision_id)

    with intercepted(client, "BatchGetItem", _unprocessed_once()):
        records = store.read_candidates(TENANT, [candidate])

    assert records.items == {item.knowledge_item_id: item}
    assert records.bases == {base.knowledge_base_id: base}
    assert records.revisions == {(item.knowledge_item_id, revision.knowledge_revision_id): revision}


def test_read_candidates_keys_never_processed_raise_dependency_unavailable(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase, no_backoff: None
) -> None:
    def never(body: dict[str, Any]) -> dict[str, Any]:
        return {"Responses": {TABLE_NAME: []}, "UnprocessedKeys": body["RequestItems"]}

    candidate = CandidateKey(
        base.knowledge_base_id, "ki_01ABSENT00000000000000000000", "kr_01ABSENT00000000000000000000"
    )
    with intercepted(client, "BatchGetItem", never), pytest.raises(DependencyUnavailableError):
        store.read_candidates(TENANT, [candidate])


def test_add_revision_throttled_page_write_removes_written_pages(
    store: DynamoDBKnowledgeStore, client: Any, base: KnowledgeBase
) -> None:
    item, _ = store.create_item(
        TENANT,
        base.knowledge_base_id,
        title="T",
        content="v1",
        source=Source(),
        external_id=None,
        publish=True,
    )
    calls = [0]

    def third_put_throttled(_: dict[str, Any]) -> dict[str, Any] | None:
        calls[0] += 1
        return {"Error": {"Code": "ThrottlingException", "Message": "slow down"}} if calls[0] == 3 else None

    with intercepted(client, "PutItem", third_put_throttled), pytest.raises(DependencyUnavailableError):
        store.add_revision(
            TENANT,
            item.knowledge_item_id,
            content="x" * 4_500,
            title=None,
            source=None,
            publish=True,
            expected_version=1,
        )

    assert store.get_item(TENANT, item.knowledge_item_id) == item
    assert len(raw_items("PAGE#")) == 1


def test_create_base_retried_put_meeting_its_own_record_succeeds(
    store: DynamoDBKnowledgeStore, client: Any
) -> None:
    writer = new_client()

    def applied_but_answer_lost(body: dict[str, Any]) -> None:
        # The first attempt reached DynamoDB; what the store sees is the retry meeting that record.
        writer.put_item(TableName=TABLE_NAME, Item=body["Item"])
        return None

    with intercepted(client, "PutItem", applied_but_answer_lost):
        base = make_base(store, TENANT)

    assert store.get_base(TENANT, base.knowledge_base_id) == base
