"""``knowledge ingest`` and ``--base`` against the real write API over HTTP: the local gateway on
``template.yaml`` runs the real authorizer and handlers over moto DynamoDB (no stream poller, so
the commands run with ``--no-wait``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from knowledge.bootstrap import get_container, use_container
from knowledge_local.cli.client import KnowledgeClient
from knowledge_local.cli.dev_token import SCOPES as DEV_SCOPES
from knowledge_local.cli.main import main
from knowledge_local.emulator.api_gateway.gateway import Gateway
from knowledge_local.emulator.lambda_runtime.invoker import InvokerClosedError
from knowledge_local.emulator.template.routes import FunctionSpec
from tests.conftest import TABLE_NAME
from tests.support.inline_invoker import InlineInvoker
from tests.support.rest import new_world
from tests.support.template import TEMPLATE, create_table_kwargs


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[str, str]]:
    """``(api_url, token)`` of the write API, with a token holding every scope."""
    with mock_aws():
        boto3.client("dynamodb", region_name="us-east-1").create_table(
            **create_table_kwargs("KnowledgeTable", TABLE_NAME)
        )
        world = new_world()
        token = world.token(scopes=DEV_SCOPES).removeprefix("Bearer ")
        with Gateway(TEMPLATE, invoker=InlineInvoker()) as gateway:
            yield gateway.url, token
        use_container(None)


@pytest.fixture
def client(api: tuple[str, str]) -> Iterator[KnowledgeClient]:
    with KnowledgeClient(*api) as opened:
        yield opened


def knowledge(api: tuple[str, str], *arguments: str) -> int:
    """Run the ``knowledge`` command against ``api``; its exit status."""
    try:
        return main(["--api-url", api[0], "--token", api[1], *arguments])
    except SystemExit as exited:
        return int(exited.code or 0)


def _printed(out: str) -> tuple[list[str], Any]:
    """What the command printed on ``out``, apart from the in-process handlers' JSON log lines:
    its lines, and the JSON document among them (``None`` when there is none)."""
    lines = [line for line in out.splitlines() if not line.startswith('{"')]
    text = "\n".join(lines)
    return lines, json.loads(text[text.index("{") :]) if "{" in text else None


def _external_ids(client: KnowledgeClient, base_name: str) -> list[str]:
    [base] = client.bases_named(base_name)
    return sorted(str(item["external_id"]) for item in client.items(str(base["knowledge_base_id"])))


def test_cli_ingest_skips_files_it_cannot_send_and_ingests_the_rest(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nReadable text.\n")
    (folder / "latin.txt").write_bytes("café crème".encode("latin-1"))
    (folder / "blank.md").write_text("\n   \n")
    (tmp_path / "hostname").write_text("build-host-7\n")
    (folder / "link.md").symlink_to(tmp_path / "hostname")

    status = knowledge(api, "ingest", str(folder), "--base", "skipping", "--no-wait")

    output = capsys.readouterr()
    assert status == 0, output.err
    assert "1 created, 0 updated, 0 unchanged, 3 skipped" in output.out
    warnings = [line for line in output.err.splitlines() if line.startswith("warning: skipped ")]
    assert len(warnings) == 3
    assert any("blank.md: empty" in line for line in warnings)
    assert any("latin.txt: not UTF-8 text" in line for line in warnings)
    assert any("link.md: a symbolic link to" in line and "not followed" in line for line in warnings)
    assert _external_ids(client, "skipping") == ["good.md"]


def test_cli_ingest_with_nothing_to_ingest_fails_before_creating_the_base(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "blank.md").write_text(" \n")

    status = knowledge(api, "ingest", str(tmp_path), "--base", "never-created", "--no-wait")

    assert status == 1
    assert "Nothing to ingest" in capsys.readouterr().err
    assert client.bases_named("never-created") == []


def test_cli_ingest_keeps_items_of_deleted_files_unless_asked_to_archive_them(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("kept.md", "deleted.md", "emptied.md"):
        (tmp_path / name).write_text(f"# {name}\n\nSome text.\n")
    knowledge(api, "ingest", str(tmp_path), "--base", "archiving", "--no-wait")
    (tmp_path / "deleted.md").unlink()
    (tmp_path / "emptied.md").write_text("")
    capsys.readouterr()

    by_default = knowledge(api, "ingest", str(tmp_path), "--base", "archiving", "--no-wait")
    kept_by_default = _external_ids(client, "archiving")
    archiving = knowledge(
        api, "ingest", str(tmp_path), "--base", "archiving", "--no-wait", "--archive-missing"
    )

    output = capsys.readouterr().out
    assert (by_default, archiving) == (0, 0)
    assert kept_by_default == ["deleted.md", "emptied.md", "kept.md"]
    assert "0 created, 0 updated, 1 unchanged, 1 skipped, 1 archived" in output
    assert _external_ids(client, "archiving") == ["emptied.md", "kept.md"]


def test_cli_archive_missing_of_a_single_file_is_a_usage_error(
    api: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "one.md").write_text("# One\n")

    status = knowledge(api, "ingest", str(tmp_path / "one.md"), "--base", "single", "--archive-missing")

    assert status == 2
    assert "--archive-missing needs a folder" in capsys.readouterr().err


def test_cli_base_name_shared_by_several_bases_is_refused_with_their_ids(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = str(client.create_base("twins")["knowledge_base_id"])
    second = str(client.create_base("twins")["knowledge_base_id"])
    (tmp_path / "note.md").write_text("# Note\n\nFor the second twin.\n")

    searched = knowledge(api, "search", "note", "--base", "twins")
    search_error = capsys.readouterr().err
    ingested = knowledge(api, "ingest", str(tmp_path), "--base", "twins", "--no-wait")
    ingest_error = capsys.readouterr().err
    by_id = knowledge(api, "ingest", str(tmp_path), "--base", second, "--no-wait")
    by_id_output = capsys.readouterr().out
    searched_by_id = knowledge(api, "search", "note", "--base", first, "--json")

    for status, error in ((searched, search_error), (ingested, ingest_error)):
        assert status == 2
        assert f"2 knowledge bases are named 'twins': {first}, {second}" in error
        assert "pass one of these ids" in error
    assert by_id == 0
    assert f"twins ({second}): 1 created" in by_id_output
    assert searched_by_id == 0
    assert [str(item["external_id"]) for item in client.items(second)] == ["note.md"]
    assert list(client.items(first)) == []


def test_cli_ingest_into_an_unknown_base_id_creates_nothing(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "note.md").write_text("# Note\n")
    unknown = "kb_01M8MSTVN5K0B8VGNB8TZTQEM9"

    status = knowledge(api, "ingest", str(tmp_path), "--base", unknown, "--no-wait")

    assert status == 1
    assert "knowledge_resource_unavailable" in capsys.readouterr().err
    assert client.bases_named(unknown) == []


def test_cli_connection_options_after_the_command_search_the_api(
    api: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["search", "anything", "--json", "--api-url", api[0], "--token", api[1]])

    output = capsys.readouterr()
    assert status == 0, output.err
    assert _printed(output.out)[1]["type"] == "knowledge_search"


def test_cli_unknown_token_prints_a_hint_naming_the_current_dev_token_file(
    api: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KNOWLEDGE_STATE_DIR", str(tmp_path))
    stale = "kn_" + "A" * 43

    status = main(["search", "anything", "--api-url", api[0], "--token", stale])

    error_line, reason, hint = capsys.readouterr().err.splitlines()
    assert status == 1
    assert error_line == "error: authentication_required: The bearer token is not known to this service."
    assert reason == "  reason: unknown"
    assert hint == (
        "hint: this API does not know the token (mistyped, or issued by an earlier `make run`, whose "
        f"tokens are gone): the current dev token is in {tmp_path / 'dev-token'}"
    )
    assert stale not in error_line + hint


def test_cli_expired_token_hint_says_it_expired(
    api: tuple[str, str], client: KnowledgeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    issued = client.create_token(subject_id="short-lived", scopes=["knowledge:read"], expires_in=1)
    time.sleep(1.1)

    status = main(["search", "anything", "--api-url", api[0], "--token", issued["token"]])

    error = capsys.readouterr().err
    assert status == 1
    assert "error: authentication_required: The bearer token has expired.\n  reason: expired\n" in error
    assert "hint: the token has expired: issue a new one" in error
    assert "earlier `make run`" not in error


def test_cli_read_of_an_unknown_item_hints_that_ids_do_not_survive_a_restart(
    api: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    status = knowledge(api, "read", "ki_01M8MSTVN5K0B8VGNB8TZTQEM9")

    error_line, hint = capsys.readouterr().err.splitlines()
    assert status == 1
    assert error_line.startswith("error: knowledge_resource_unavailable: ")
    assert hint == (
        "hint: no such item here (an id from an in-memory run, KNOWLEDGE_PERSIST=false, or another state "
        "directory, or a base you cannot see); search again to get current ids"
    )


def test_cli_search_in_a_mistyped_base_suggests_the_close_names(
    api: tuple[str, str], client: KnowledgeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    client.create_base("fastapi")
    client.create_base("fastapi-v2")

    status = knowledge(api, "search", "cors", "--base", "fastpai")

    assert status == 1
    assert capsys.readouterr().err == (
        "error: knowledge_resource_unavailable: No knowledge base named 'fastpai'. "
        "Did you mean 'fastapi' or 'fastapi-v2'? `knowledge bases` lists them all.\n"
    )


def test_cli_bases_lists_every_base_as_a_table_or_json(
    api: tuple[str, str], client: KnowledgeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = client.create_base("listed-base")
    base_id = str(listed["knowledge_base_id"])

    table_status = knowledge(api, "bases")
    table = _printed(capsys.readouterr().out)[0]
    json_status = knowledge(api, "bases", "--json")
    answer = _printed(capsys.readouterr().out)[1]

    assert (table_status, json_status) == (0, 0)
    assert table[0].split() == ["id", "name", "scope", "status"]
    assert [base_id, "listed-base", "tenant", "active"] in [line.split() for line in table[1:]]
    assert listed in answer["knowledge_bases"]
    assert len(answer["knowledge_bases"]) == len(table) - 1


def test_cli_ingest_says_when_it_creates_the_base_and_names_close_ones(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client.create_base("handbook")
    (tmp_path / "note.md").write_text("# Note\n\nText.\n")

    first = knowledge(api, "ingest", str(tmp_path), "--base", "handbok", "--no-wait")
    first_error = capsys.readouterr().err
    again = knowledge(api, "ingest", str(tmp_path), "--base", "handbok", "--no-wait")
    again_error = capsys.readouterr().err

    [created] = client.bases_named("handbok")
    assert (first, again) == (0, 0)
    assert first_error == (
        f"created knowledge base handbok ({created['knowledge_base_id']}) "
        "(existing bases with a close name: handbook)\n"
    )
    assert "created knowledge base" not in again_error


class _StoppingInvoker(InlineInvoker):
    """Invokes in process until the first request about items: from then on the runtime is
    stopping, as when Ctrl-C reaches ``make run`` during an ingest."""

    def invoke(self, function: FunctionSpec, event: dict[str, Any]) -> Any:
        if "/items" in str(event.get("routeKey", "")):
            raise InvokerClosedError(f"{function.logical_id}: the invoker is closed")
        return super().invoke(function, event)


def test_cli_ingest_while_the_runtime_stops_says_so_not_that_a_function_failed(
    api: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "note.md").write_text("# Note\n\nText.\n")
    with Gateway(TEMPLATE, invoker=_StoppingInvoker()) as stopping:
        status = knowledge((stopping.url, api[1]), "ingest", str(tmp_path), "--base", "stopping", "--no-wait")

    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith(("error", "hint"))]
    assert status == 1
    assert errors == [
        "error: service_unavailable: The local runtime is stopping; retry once it runs again.",
        "hint: the local runtime is stopping: start it again (`make run`) and repeat the command; "
        "files already ingested count as unchanged",
    ]


def _sources(client: KnowledgeClient, base_name: str) -> dict[str, Any]:
    [base] = client.bases_named(base_name)
    items = client.items(str(base["knowledge_base_id"]))
    return {
        str(item["external_id"]): (client.latest_revision(str(item["knowledge_item_id"])) or {})["source"]
        for item in items
    }


def test_cli_ingest_source_uri_is_the_path_under_the_folder_not_the_local_path(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "http2.md").write_text("# HTTP/2\n\nStreams and frames.\n")

    status = knowledge(api, "ingest", str(tmp_path), "--base", "relative-links", "--no-wait")

    assert status == 0, capsys.readouterr().err
    assert _sources(client, "relative-links") == {
        "guides/http2.md": {"uri": "guides/http2.md", "title": "HTTP/2"}
    }


def test_cli_ingest_source_base_url_makes_links(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "http2.md").write_text("# HTTP/2\n\nStreams and frames.\n")

    status = knowledge(
        api,
        "ingest",
        str(tmp_path),
        "--base",
        "site-links",
        "--no-wait",
        "--source-base-url",
        "https://www.python-httpx.org/docs/",
    )

    assert status == 0, capsys.readouterr().err
    assert _sources(client, "site-links")["http2.md"]["uri"] == "https://www.python-httpx.org/docs/http2.md"


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///home/me/docs", "docs.example.com"])
def test_cli_ingest_unsafe_source_base_url_is_a_usage_error(
    api: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    status = knowledge(api, "ingest", str(tmp_path), "--base", "b", "--source-base-url", url)

    assert status == 2
    assert "argument --source-base-url: " in capsys.readouterr().err


def _index(client: KnowledgeClient, base_name: str, *external_ids: str) -> None:
    """Index the items of ``external_ids`` now, as the stream's indexer would (this gateway has no
    stream poller)."""
    [base] = client.bases_named(base_name)
    for item in client.items(str(base["knowledge_base_id"])):
        if item["external_id"] in external_ids:
            get_container().indexing.sync_item(
                "acme", str(item["knowledge_item_id"]), last_known_version=int(item["version"])
            )


def test_cli_ingest_waits_for_the_index_and_says_what_is_left_when_it_stalls(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("indexed.md", "waiting.md", "also-waiting.md"):
        (tmp_path / name).write_text(f"# {name}\n\nSome text.\n")
    knowledge(api, "ingest", str(tmp_path), "--base", "stalling", "--no-wait")
    _index(client, "stalling", "indexed.md")
    capsys.readouterr()

    stalled = knowledge(api, "ingest", str(tmp_path), "--base", "stalling", "--stall-timeout", "1")
    stalled_error = capsys.readouterr().err
    _index(client, "stalling", "waiting.md", "also-waiting.md")
    waited = knowledge(api, "ingest", str(tmp_path), "--base", "stalling", "--stall-timeout", "1")
    waited_output = capsys.readouterr()

    errors = [line for line in stalled_error.splitlines() if line.startswith(("error", "hint"))]
    assert stalled == 1
    assert errors == [
        "error: 2 of 3 item(s) not searchable yet (none became searchable in the last 1 s): also-waiting.md, "
        "waiting.md. They are stored and published, and the indexer goes on with them: search finds each "
        "once it is indexed",
        f"hint: check later with `knowledge ingest {tmp_path} --base stalling` (it sends nothing unchanged "
        "and waits for the rest); on a busy machine, wait longer with --stall-timeout",
    ]
    assert waited == 0, waited_output.err
    assert "0 created, 0 updated, 3 unchanged, 0 skipped, all indexed" in waited_output.out


def test_cli_item_list_tells_which_items_the_index_holds(
    api: tuple[str, str], client: KnowledgeClient, tmp_path: Path
) -> None:
    for name in ("indexed.md", "waiting.md"):
        (tmp_path / name).write_text(f"# {name}\n\nSome text.\n")
    knowledge(api, "ingest", str(tmp_path), "--base", "listing-marks", "--no-wait")
    _index(client, "listing-marks", "indexed.md")

    [base] = client.bases_named("listing-marks")
    marks = {
        str(item["external_id"]): item["indexed_revision_id"] == item["current_revision_id"]
        for item in client.items(str(base["knowledge_base_id"]))
    }

    assert marks == {"indexed.md": True, "waiting.md": False}
