"""The local runtime and the ``knowledge`` command: everything that is not shipped to Lambda.

Two rooms and the runtime that composes them: ``emulator`` (the SAM/AWS emulator: moto's endpoint,
API Gateway, Lambda's environments and event sources) and ``cli`` (the ``knowledge`` command, its
HTTP client, ingestion and the token tools); at the top, ``runtime`` (``make run``), ``stack`` (the
emulator, the index and the seed put together), ``config`` (the runtime's settings), ``state`` (the
state directory's files, read by the runtime and the command alike), ``account`` (the local AWS
account and its client builder, used by the emulator and by ``knowledge token rotate``) and
``opensearch_node``. The emulator and the command never import each other; both stand on
``state`` and ``account``.
"""
