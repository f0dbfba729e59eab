"""Powertools Routers, one module per surface; ``knowledge.api.openapi.routers()`` lists them all."""
