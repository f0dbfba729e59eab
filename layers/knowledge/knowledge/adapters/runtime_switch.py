"""The runtime switch (DESIGN §5): an SSM parameter read through Powertools Parameters with a short
cache, falling back to ``KNOWLEDGE_RUNTIME_ENABLED`` when no parameter is configured or SSM fails."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.parameters import SSMProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from knowledge.observability import logger

if TYPE_CHECKING:
    from knowledge.settings import Settings

_TRUE = frozenset({"true", "on", "enabled", "1", "yes"})
_FALSE = frozenset({"false", "off", "disabled", "0", "no"})


class StaticRuntimeSwitch:
    """A switch fixed at construction (local runs, tests)."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled

    def is_enabled(self) -> bool:
        return self._enabled


class ParameterRuntimeSwitch:
    """Reads ``true``/``false`` (also on/off, enabled/disabled, 1/0) from an SSM String parameter.

    Values are cached for ``max_age`` seconds by Powertools. An unreadable or unrecognized value
    logs a warning and answers ``fallback``, so a typo in the parameter never takes the service down
    silently nor opens it silently: the fallback is the deployment's configured default.
    """

    def __init__(self, parameter_name: str, *, max_age: int, fallback: bool, ssm_client: Any = None) -> None:
        self._name = parameter_name
        self._max_age = max_age
        self._fallback = fallback
        self._provider = SSMProvider(boto3_client=ssm_client) if ssm_client is not None else SSMProvider()

    def is_enabled(self) -> bool:
        try:
            raw = self._provider.get(self._name, max_age=self._max_age)
        except GetParameterError:
            logger.warning("runtime switch parameter unreadable", extra={"parameter": self._name})
            return self._fallback
        value = str(raw).strip().lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        logger.warning("runtime switch parameter has an unrecognized value", extra={"parameter": self._name})
        return self._fallback


def build(settings: Settings) -> StaticRuntimeSwitch | ParameterRuntimeSwitch:
    """The SSM parameter ``RUNTIME_SWITCH_PARAMETER`` (read at most every
    ``RUNTIME_SWITCH_MAX_AGE_SECONDS``, ``KNOWLEDGE_RUNTIME_ENABLED`` when it cannot be read), or
    ``KNOWLEDGE_RUNTIME_ENABLED`` itself when no parameter is named."""
    if settings.runtime_switch_parameter:
        return ParameterRuntimeSwitch(
            settings.runtime_switch_parameter,
            max_age=settings.runtime_switch_max_age_seconds,
            fallback=settings.knowledge_runtime_enabled,
        )
    return StaticRuntimeSwitch(settings.knowledge_runtime_enabled)
