"""Pure domain logic: models, ids, keys, visibility, chunking, fusion, excerpts. No I/O here."""
