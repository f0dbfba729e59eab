"""Powertools Routers, one module per surface; ``knowledge.api.openapi.ROUTERS`` lists them all."""
