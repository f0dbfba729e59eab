"""Adapters: concrete implementations of the ports (DynamoDB, search indexes, embedders, queues).

Only ``knowledge.bootstrap`` imports them, and it calls the ``build(settings)`` of each to
construct it; services depend on ``knowledge.ports`` alone.
"""
