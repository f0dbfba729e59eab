"""Rankings that hold, through the real handlers: pages are prefixes of one order, a keyword match
keeps its credit, one slot per passage, and the answer says what each leg had to match."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.bootstrap import use_container
from knowledge.domain.models import KnowledgeBase, Scope
from knowledge.settings import Settings
from tests.conftest import TABLE_NAME
from tests.support import multilingual
from tests.support.index import ADAPTERS
from tests.support.rest import SearchWorld, engine_world, new_world, result_items

MODES = ("hybrid", "lexical", "semantic", "rrf")


@pytest.fixture(params=ADAPTERS)
def world(request: pytest.FixtureRequest, table: Any) -> Iterator[SearchWorld]:
    """A world on each engine: the embedded index, and OpenSearch on the real node."""
    url = request.getfixturevalue("opensearch_url") if request.param == "opensearch" else None
    with engine_world(request.param, url) as built:
        yield built


@pytest.fixture
def fine_world(table: Any) -> Iterator[SearchWorld]:
    """A world chunking by 16 tokens: short items span several chunks, so candidates run deep."""
    built = new_world(settings=Settings(table_name=TABLE_NAME, chunk_tokens=16, chunk_overlap_tokens=4))
    yield built
    use_container(None)


@pytest.fixture
def base(world: SearchWorld) -> KnowledgeBase:
    return world.base()


def _page(world: SearchWorld, reader: str, query: str, mode: str, size: int) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = world.search(reader, query, mode=mode, max_results=size).body["results"]
    return results


def _identity(result: dict[str, Any]) -> tuple[Any, ...]:
    scores = result["scores"]
    return (
        result["knowledge_item_id"],
        result["excerpt"],
        tuple(result["duplicate_item_ids"]),
        scores["final"],
        scores["lexical_rank"],
        scores["semantic_rank"],
    )


# -- every page is a prefix of the 50-result page ------------------------------------------------

WORDS = ["grind", "espresso", "siphon", "press", "kettle", "filter", "the", "of", "bloom", "ratio"]
_tenants = itertools.count()


@st.composite
def corpora(draw: st.DrawFn) -> list[str]:
    """Item contents from a small vocabulary: shared words, repeated paragraphs (several chunks per
    item), exact copies of other items."""
    paragraph = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
    contents = draw(
        st.lists(
            st.lists(paragraph, min_size=1, max_size=3).map("\n\n".join).map(lambda text: text * 3),
            min_size=1,
            max_size=24,
        )
    )
    copies = draw(st.lists(st.sampled_from(contents), max_size=4))
    return contents + copies


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    contents=corpora(),
    query=st.lists(st.sampled_from([*WORDS, "absent", "?"]), min_size=1, max_size=4).map(" ".join),
    sizes=st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=2, unique=True),
)
def test_search_knowledge_every_page_is_a_prefix_of_the_50_result_page(
    fine_world: SearchWorld, contents: list[str], query: str, sizes: list[int]
) -> None:
    world = fine_world
    # Given a fresh tenant holding the corpus (one tenant per example: the table outlives examples)
    tenant = f"tenant-{next(_tenants)}"
    world.publish_many(world.base(tenant), [(f"Item {n % 7}", content) for n, content in enumerate(contents)])
    reader = world.token(tenant)

    for mode in MODES:
        # When the same query is asked for the 50-result page and for smaller pages
        full = [_identity(result) for result in _page(world, reader, query, mode, 50)]
        for size in sizes:
            page = [_identity(result) for result in _page(world, reader, query, mode, size)]

            # Then each smaller page is the head of the 50-result page, scores and duplicates included
            assert page == full[:size], (mode, size)


# -- regressions of reported examples -----------------------------------------------------------


COFFEE_METHODS = ["French press", "siphon", "AeroPress", "pour over", "moka pot", "cold brew", "Turkish"]


def _coffee_corpus(world: SearchWorld, base: KnowledgeBase, count: int) -> None:
    """``count`` items about brewing, most mentioning grind, size or espresso in varied proportions,
    some over several chunks."""
    documents = []
    for number in range(count):
        method = COFFEE_METHODS[number % len(COFFEE_METHODS)]
        words = ["grind"] * (number % 3) + ["size"] * (number % 4) + ["espresso"] * (number % 5 == 0)
        body = f"{method} notes {number}: " + " ".join(words) + " water temperature and brew time matter."
        documents.append((f"{method} guide {number}", "\n\n".join([body] * (1 + number % 3) * 8)))
    world.publish_many(base, documents)


def test_search_knowledge_order_does_not_depend_on_max_results(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    # A tenant of 110 items, many with several matching chunks: more candidates than any page needs
    _coffee_corpus(world, base, 110)
    reader = world.token()

    for mode in MODES:
        answers = {
            size: world.search(reader, "grind size espresso", mode=mode, max_results=size).body
            for size in (5, 13, 20, 50)
        }

        full = [result["knowledge_item_id"] for result in answers[50]["results"]]
        assert len(full) == 50
        for size, answer in answers.items():
            assert [result["knowledge_item_id"] for result in answer["results"]] == full[:size], (mode, size)
            assert answer["legs"] == answers[50]["legs"]


def test_search_knowledge_rare_keyword_match_keeps_lexical_credit(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    # Twelve documents; only two hold the invented word, one of them once.
    topics = [
        "harbour cranes",
        "orchard pests",
        "violin varnish",
        "glacier melt",
        "tax filing",
        "bread proofing",
        "satellite orbits",
        "chess openings",
        "bee keeping",
        "rail signals",
    ]
    for topic in topics:
        world.publish(base, topic.title(), f"Notes on {topic}: history, practice and common mistakes.")
    often, _ = world.publish(base, "Blanthor", "Blanthor blanthor: the blanthor method explained.")
    once, _ = world.publish(base, "Field notes", "Field notes on practice; a blanthor was seen once here.")
    reader = world.token()

    for alpha in (0.5, 0.8):
        results = world.search(reader, "blanthor", alpha=alpha).body["results"]

        assert [result["knowledge_item_id"] for result in results[:2]] == [
            often.knowledge_item_id,
            once.knowledge_item_id,
        ]
        assert results[1]["scores"]["lexical_rank"] == 2
        assert results[1]["scores"]["lexical_normalized"] > 0.0


# -- one slot per passage -------------------------------------------------------------------------


def test_search_knowledge_same_passage_in_two_items_takes_one_slot(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    passage = "Rotate the signing keys every ninety days and revoke the old ones at once."
    first, _ = world.publish(base, "Key rotation", passage)
    copy, _ = world.publish(base, "Security handbook", passage)
    other, _ = world.publish(base, "Signing", "Signing keys live in the vault; rotate them with the CLI.")
    reader = world.token()

    for mode in MODES:
        results = world.search(reader, "rotate signing keys", mode=mode).body["results"]

        ids = [result["knowledge_item_id"] for result in results]
        assert len(ids) == 2, mode
        assert other.knowledge_item_id in ids, mode
        (holder,) = (result for result in results if result["knowledge_item_id"] != other.knowledge_item_id)
        assert {holder["knowledge_item_id"], *holder["duplicate_item_ids"]} == {
            first.knowledge_item_id,
            copy.knowledge_item_id,
        }


def test_search_knowledge_duplicates_list_only_visible_current_items(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    passage = "Backups run nightly at two and are kept for thirty days."
    kept, _ = world.publish(base, "Backups", passage)
    archived, _ = world.publish(base, "Old backups", passage)
    world.store.archive_item(base.tenant_id, archived.knowledge_item_id, expected_version=archived.version)
    private = world.base(scope=Scope.PRIVATE, owner_id="someone-else", name="Private")
    world.publish(private, "Hidden backups", passage)

    (result,) = world.search(world.token(), "backups nightly").body["results"]

    assert result["knowledge_item_id"] == kept.knowledge_item_id
    assert result["duplicate_item_ids"] == []


def test_search_knowledge_duplicates_below_the_page_are_listed(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    passage = "Zephyr zephyr zephyr: the release train leaves every Tuesday."
    first, _ = world.publish(base, "Zephyr", passage)
    for number in range(6):
        world.publish(base, f"Zephyr note {number}", f"Zephyr zephyr note {number} about trains.")
    copy, _ = world.publish(base, "Other", passage)

    (top,) = world.search(world.token(), "zephyr", max_results=1).body["results"]
    full = world.search(world.token(), "zephyr", max_results=50).body["results"]

    assert {top["knowledge_item_id"], *top["duplicate_item_ids"]} == {
        first.knowledge_item_id,
        copy.knowledge_item_id,
    }
    assert full[0] == top
    assert copy.knowledge_item_id not in result_items_of(full)[1:]


def result_items_of(results: list[dict[str, Any]]) -> list[str]:
    return [result["knowledge_item_id"] for result in results]


# -- what each leg had to match -------------------------------------------------------------------


@pytest.mark.parametrize("query", ["the and of", "?!", "it is not to be", "— …"])
def test_search_knowledge_no_keywords_lexical_answers_terms_zero(
    world: SearchWorld, base: KnowledgeBase, query: str
) -> None:
    world.publish(base, "Runbook", "The deployment runbook and the rollback plan.")

    body = world.search(world.token(), query, mode="lexical").body

    assert body["results"] == []
    assert body["legs"] == {"lexical": {"terms": 0, "candidates": 0}, "semantic": None}


def test_search_knowledge_no_keywords_hybrid_says_only_the_semantic_leg_matched(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    world.publish(base, "Runbook", "The deployment runbook and the rollback plan.")

    body = world.search(world.token(), "the and of").body

    assert body["legs"]["lexical"] == {"terms": 0, "candidates": 0}
    assert body["legs"]["semantic"]["candidates"] == 1
    assert all(result["scores"]["lexical"] is None for result in body["results"])


def test_search_knowledge_semantic_mode_reports_no_lexical_leg(
    world: SearchWorld, base: KnowledgeBase
) -> None:
    world.publish(base, "Runbook", "The deployment runbook and the rollback plan.")

    legs = world.search(world.token(), "rollback", mode="semantic").body["legs"]

    assert legs == {"lexical": None, "semantic": {"candidates": 1}}


def test_search_knowledge_no_knowledge_reports_empty_legs(world: SearchWorld, base: KnowledgeBase) -> None:
    body = world.search(world.token(), "rollback plan").body

    assert body["results"] == []
    assert body["legs"] == {"lexical": {"terms": 2, "candidates": 0}, "semantic": {"candidates": 0}}


# -- keywords in every script ---------------------------------------------------------------------


@pytest.mark.parametrize("probe", multilingual.PROBES, ids=[probe.query for probe in multilingual.PROBES])
def test_search_knowledge_lexical_multilingual_sanity_set(
    world: SearchWorld, base: KnowledgeBase, probe: multilingual.Probe
) -> None:
    published = {
        passage.key: world.publish(base, passage.title, passage.text)[0] for passage in multilingual.PASSAGES
    }

    found = result_items(world.search(world.token(), probe.query, mode="lexical"))

    assert set(found) == {published[key].knowledge_item_id for key in probe.expected}
