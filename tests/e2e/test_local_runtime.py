"""What ``make run`` sets up, checked from outside: its files, its AWS endpoint, the seeded base
searched and read over REST."""

from __future__ import annotations

import json
import stat
import time

import httpx2

from tests.e2e.conftest import SEED_DOCUMENTS
from tests.e2e.runtime_process import RuntimeProcess, search_knowledge, titles


def test_runtime_endpoints_file_names_the_running_services(runtime: RuntimeProcess) -> None:
    endpoints = runtime.endpoints

    assert endpoints["api_url"] == runtime.api_url
    assert endpoints["aws_endpoint_url"] == f"http://127.0.0.1:{runtime.aws_port}"
    assert set(endpoints) == {
        "api_url",
        "aws_endpoint_url",
        "table_name",
        "ingest_queue_url",
        "ingest_dlq_url",
        "opensearch_url",
        "documents_bucket",
    }
    assert endpoints["opensearch_url"] is None  # the embedded index
    assert (
        runtime.aws("s3").head_bucket(Bucket=endpoints["documents_bucket"])["ResponseMetadata"][
            "HTTPStatusCode"
        ]
        == 200
    )


def test_runtime_table_is_built_from_the_template_with_its_stream(runtime: RuntimeProcess) -> None:
    dynamodb = runtime.aws("dynamodb")

    table = dynamodb.describe_table(TableName=runtime.endpoints["table_name"])["Table"]

    assert table["TableStatus"] == "ACTIVE"
    assert [key["AttributeName"] for key in table["KeySchema"]] == ["PK", "SK"]
    assert [index["IndexName"] for index in table["GlobalSecondaryIndexes"]] == ["GSI1"]
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}


def test_runtime_ingest_queue_redrives_to_its_dead_letter_queue(runtime: RuntimeProcess) -> None:
    sqs = runtime.aws("sqs")
    endpoints = runtime.endpoints

    queue = sqs.get_queue_attributes(QueueUrl=endpoints["ingest_queue_url"], AttributeNames=["All"])
    dead_letters = sqs.get_queue_attributes(QueueUrl=endpoints["ingest_dlq_url"], AttributeNames=["QueueArn"])

    policy = json.loads(queue["Attributes"]["RedrivePolicy"])
    assert policy["deadLetterTargetArn"] == dead_letters["Attributes"]["QueueArn"]
    assert int(policy["maxReceiveCount"]) >= 1


def test_runtime_dev_token_is_private_and_holds_every_scope(
    runtime: RuntimeProcess, api: httpx2.Client
) -> None:
    mode = stat.S_IMODE((runtime.state_dir / "dev-token").stat().st_mode)

    response = api.post(
        "/v1/tokens",
        json={"tenant_id": "other-tenant", "subject_id": "probe", "scopes": ["platform:admin"]},
    )

    assert mode == 0o600
    assert response.status_code == 201, response.text
    assert response.json()["token"]


def test_runtime_seed_documents_are_items_addressed_by_relative_path(api: httpx2.Client) -> None:
    bases = api.get("/v1/knowledge-bases").json()["knowledge_bases"]
    seeded = next(base for base in bases if base["name"] == "project-docs")

    items = api.get(f"/v1/knowledge-bases/{seeded['knowledge_base_id']}/items").json()["items"]

    assert sorted(item["external_id"] for item in items) == sorted(SEED_DOCUMENTS)
    assert {item["status"] for item in items} == {"published"}


def test_rest_search_ranks_the_matching_seed_document_first(api: httpx2.Client) -> None:
    answer = search_knowledge(api, query="how do I roll back a release", max_results=3)

    assert answer["type"] == "knowledge_search"
    assert titles(answer)[0] == "Deployment runbook"
    finals = [result["scores"]["final"] for result in answer["results"]]
    assert finals == sorted(finals, reverse=True)
    assert answer["results"][0]["source"]["uri"].endswith("runbooks/deploy.md")


def test_rest_semantic_search_finds_a_document_without_shared_words(api: httpx2.Client) -> None:
    answer = search_knowledge(api, query="making coffee", mode="semantic", max_results=1)

    assert titles(answer) == ["Espresso extraction"]


def test_rest_addressed_read_returns_the_seeded_text(api: httpx2.Client) -> None:
    hit = search_knowledge(api, query="page the secondary", max_results=1)["results"][0]

    whole = search_knowledge(api, knowledge_item_id=hit["knowledge_item_id"], limit_chars=10_000)
    located = search_knowledge(
        api,
        knowledge_item_id=hit["knowledge_item_id"],
        knowledge_revision_id=hit["knowledge_revision_id"],
        offset=hit["locator"]["offset"],
        limit_chars=hit["locator"]["length"],
    )

    assert whole["type"] == "knowledge"
    assert whole["content"] == SEED_DOCUMENTS["oncall.md"]
    assert whole["content_truncated"] is False
    start = hit["locator"]["offset"]
    assert located["content"] == whole["content"][start : start + hit["locator"]["length"]]


def test_rest_request_without_token_answers_authentication_required(runtime: RuntimeProcess) -> None:
    response = httpx2.post(f"{runtime.api_url}/v1/tools/search_knowledge", json={"query": "rollback"})

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_required"


def test_runtime_flood_of_unknown_tokens_is_throttled_and_a_valid_token_still_answers(
    runtime: RuntimeProcess,
) -> None:
    flooding = httpx2.HTTPTransport(local_address="127.0.0.3")  # an address no other test uses
    search = {"query": "rollback"}
    with httpx2.Client(base_url=runtime.api_url, transport=flooding, timeout=60) as client:
        valid = {"Authorization": f"Bearer {runtime.token}"}
        before = client.post("/v1/tools/search_knowledge", json=search, headers=valid)
        flood = [
            client.post(
                "/v1/tools/search_knowledge",
                json=search,
                headers={"Authorization": f"Bearer kn_unknown{number}"},
            )
            for number in range(60)
        ]
        during = client.post("/v1/tools/search_knowledge", json=search, headers=valid)

    statuses = [response.status_code for response in flood]
    assert before.status_code == 200
    assert statuses[0] == 401  # the authorizer's own answer: an unknown token
    assert statuses.count(429) >= 10  # a burst of 10, then 10 a second get to the authorizer
    throttled = next(response for response in flood if response.status_code == 429)
    assert int(throttled.headers["retry-after"]) >= 1
    assert throttled.json()["error"]["details"]["quota"] == "failed_authentications_per_second"
    assert during.status_code == 200, during.text


def test_gateway_keep_alive_answers_are_not_held_back(runtime: RuntimeProcess) -> None:
    with httpx2.Client(base_url=runtime.api_url) as client:
        client.get("/v1/health")
        started = time.monotonic()
        for _ in range(30):
            client.get("/v1/health")
        elapsed = time.monotonic() - started

    # A response written in two segments waits ~40 ms for the client's delayed ACK under Nagle's
    # algorithm: 30 requests would take more than 1.2 s.
    assert elapsed < 0.9
