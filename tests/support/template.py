"""Read ``template.yaml`` so tests build their tables from the infrastructure's own definitions."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """A YAML loader that keeps CloudFormation short-form tags (``!Ref``, ``!Sub``...) as plain data."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {suffix: value}


_CfnLoader.add_multi_constructor("!", _tag)


@cache
def load_template() -> dict[str, Any]:
    with TEMPLATE.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=_CfnLoader)


def resource(logical_id: str) -> dict[str, Any]:
    return load_template()["Resources"][logical_id]


_TABLE_KEYS = (
    "AttributeDefinitions",
    "KeySchema",
    "GlobalSecondaryIndexes",
    "BillingMode",
    "StreamSpecification",
)


def create_table_kwargs(logical_id: str, table_name: str) -> dict[str, Any]:
    """``CreateTable`` arguments taken from the template's ``AWS::DynamoDB::Table`` properties."""
    props = resource(logical_id)["Properties"]
    kwargs: dict[str, Any] = {key: props[key] for key in _TABLE_KEYS if key in props}
    if "StreamSpecification" in kwargs:
        kwargs["StreamSpecification"] = {"StreamEnabled": True, **kwargs["StreamSpecification"]}
    kwargs["TableName"] = table_name
    return kwargs
