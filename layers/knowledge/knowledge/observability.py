"""Powertools Logger, Tracer and Metrics shared by every function.

The service name comes from ``POWERTOOLS_SERVICE_NAME``; the metrics namespace is fixed.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
tracer = Tracer()
metrics = Metrics(namespace="KnowledgeService")
