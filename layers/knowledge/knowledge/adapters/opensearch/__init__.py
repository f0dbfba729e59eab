"""The OpenSearch engine: ``engine`` (client, error translation, vector checks, the ``_msearch`` of
both legs) and ``queries`` (index bodies and query DSL) serve both corpora; ``passages`` is the
``SearchIndex`` of knowledge, ``notes`` the ``NoteIndex`` of memory."""
