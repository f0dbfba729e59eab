"""Adapters: concrete implementations of the ports (DynamoDB, search indexes, embedders, queues).

Only ``knowledge.bootstrap`` imports them; services depend on ``knowledge.ports`` alone.
"""
