"""The embedded engine: in-process search indexes over tantivy (BM25) and numpy (exact kNN), for local
runs and tests. ``engine`` holds what both corpora share; ``passages`` is the ``SearchIndex`` of
knowledge, ``notes`` the ``NoteIndex`` of memory."""
