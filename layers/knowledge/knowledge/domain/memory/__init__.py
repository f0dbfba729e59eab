"""Agent memory: notes, their lifecycle and rights, pins, note retrieval and the context pack (DESIGN §9)."""
