"""What the Lambda runtime does around a function's invocations that Powertools relies on, for the
local execution environments (``worker``):

- **Metrics end with each invocation.** ``log_metrics`` publishes and clears the metrics at the end
  of an invocation; locally metrics are disabled (``POWERTOOLS_METRICS_DISABLED``), so they are
  cleared after every invocation (``invocation()``): nothing accumulates and no metadata
  (``error_code``...) outlives its invocation.
- **Disabled metrics are silent.** Powertools applies ``POWERTOOLS_METRICS_DISABLED`` only in
  ``flush_metrics``, while ``single_metric`` (the ``ColdStart`` metric of
  ``log_metrics(capture_cold_start_metric=True)``) and ``add_metric``'s automatic flush at 100
  metrics print their EMF documents regardless; ``install()`` makes those two modules' ``print``
  drop its output while metrics are disabled.

Everything else Powertools keeps between invocations (log keys, the event resolver's current event)
belongs to the one function of the process and to one invocation at a time, as on Lambda.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from aws_lambda_powertools.metrics import base as metrics_base
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf import cloudwatch as emf_provider


def install() -> None:
    """Silence disabled metrics (see the module docs); calling it again changes nothing. Imports
    the service's Powertools objects, which read the environment, so it runs in the environment's
    init, after its variables are set."""
    for module in (metrics_base, emf_provider):
        vars(module)["print"] = _print_unless_metrics_disabled
    import knowledge.observability  # noqa: F401 - part of init, not of the first invocation


@contextmanager
def invocation() -> Iterator[None]:
    """Run one invocation; clear the metrics it left when it ends."""
    from knowledge.observability import metrics

    try:
        yield
    finally:
        metrics.clear_metrics()


def _print_unless_metrics_disabled(*values: Any, **options: Any) -> None:
    """``print``, unless ``POWERTOOLS_METRICS_DISABLED`` (or ``POWERTOOLS_DEV``) disables metrics."""
    if not is_metrics_disabled():
        print(*values, **options)
