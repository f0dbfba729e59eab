"""The local runtime and the ``knowledge`` command: everything that is not shipped to Lambda.

Two rooms and the runtime that composes them: ``emulator`` (the SAM/AWS emulator: moto's endpoint,
API Gateway, Lambda's environments and event sources) and ``cli`` (the ``knowledge`` command, its
HTTP client, ingestion and the token tools); at the top, ``runtime`` (``make run``), ``stack`` (the
emulator, the index and the seed put together), ``config`` (the runtime's settings), ``state`` (the
state directory's files, read by the runtime and the command alike) and ``opensearch_node``. The
emulator imports neither the command nor the top. The command imports the top's ``state`` and, for
``knowledge token rotate`` alone (``cli.dev_token``, which writes to the local table), the
emulator's ``provisioning.aws_client``.
"""
