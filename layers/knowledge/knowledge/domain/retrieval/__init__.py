"""Retrieval: analysis, chunking, hits, fusion, excerpts and the truth check (DESIGN §4)."""
