"""moto's dashboard tracking turned off: every model object moto creates (each item version,
stream record, shard iterator...) is kept in its class's ``instances_tracked`` list, for moto's
dashboard (``/moto-api/``), so nothing is ever freed. ``stop_tracking_instances`` makes those lists
keep nothing (the dashboard then lists no instances)."""

from __future__ import annotations

from typing import Any

from moto.core.model_instances import model_data


class _Untracked(list[Any]):
    """An ``instances_tracked`` that keeps nothing."""

    def append(self, instance: Any) -> None:
        pass


def stop_tracking_instances() -> None:
    """Make every moto model class of the served services (and any other imported so far) forget
    the instances it creates. moto's ``mock_aws`` resets the lists when it starts or stops, so this
    runs on every ``AwsServer.start()``."""
    import moto.dynamodb.models
    import moto.dynamodbstreams.models
    import moto.sqs.models  # noqa: F401 - registers the SQS models

    for models in model_data.values():
        for model in models.values():
            if not isinstance(vars(model).get("instances_tracked"), _Untracked):
                model.instances_tracked = _Untracked()  # type: ignore[attr-defined]
