"""Fuzzing the REST API from its own OpenAPI document (``GET /v1/openapi.json``, the same file as
``docs/openapi.json``) with schemathesis: valid and invalid parameters, bodies and headers for every
operation, sent in process to the real gateway, authorizer and handlers (``tests/support/fuzz_api``).

Whatever is sent, the answer is never a 5xx and every error is the service's envelope. ``make test``
runs a few cases per operation; ``make fuzz`` many more (``tests/support/fuzzing.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.openapi import from_wsgi

from tests.support.fuzz_api import FuzzApi, check_answer, fuzz_api, report
from tests.support.fuzzing import budget
from tests.support.template import ROOT


@pytest.fixture(scope="module")
def api(pytestconfig: pytest.Config) -> Iterator[FuzzApi]:
    with fuzz_api() as running:
        yield running
        report(pytestconfig, "REST fuzz", running)


schema = schemathesis.openapi.from_path(ROOT / "docs" / "openapi.json")
"""The document ``GET /v1/openapi.json`` serves (``test_api_fuzz_served_document_is_the_fuzzed_one``)."""


def test_api_fuzz_served_document_is_the_fuzzed_one(api: FuzzApi) -> None:
    served = from_wsgi("/v1/openapi.json", api.app)

    assert served.raw_schema == schema.raw_schema


@schema.parametrize()
@settings(
    max_examples=budget(6, 100),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_fuzz_any_request_answers_below_500_with_errors_in_envelope(case: Case, api: FuzzApi) -> None:
    # Half the generated ids (those of even length, so the choice is the case's own) are swapped
    # for ids that exist, so writes and reads also reach real bases, items and notes.
    for name, value in (case.path_parameters or {}).items():
        if name in api.ids and len(str(value)) % 2 == 0:
            case.path_parameters[name] = api.ids[name]
    response = case.call(app=api.app, headers={"Authorization": api.authorization})

    check_answer(
        response.status_code,
        {name: ", ".join(values) for name, values in response.headers.items()},
        response.content,
        what=f"{case.method} {case.formatted_path}",
    )
