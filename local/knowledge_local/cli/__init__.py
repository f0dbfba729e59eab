"""The ``knowledge`` command (``main``) and what it stands on: the HTTP client of the knowledge API
(``client``), the files to ingest (``documents``) and their ingestion through the API
(``ingestion``); and the two token tools that write to a table directly: the dev token of a state
directory (``dev_token``) and the first admin token of a deployed stack (``admin_token``, run as
``python -m knowledge_local.admin_token``). Nothing here imports the emulator: ``dev_token.rotate_running``
reaches the local AWS endpoint with ``knowledge_local.account.aws_client``."""
