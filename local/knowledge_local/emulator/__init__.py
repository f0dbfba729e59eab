"""The SAM/AWS emulator of the local runtime: what AWS does around the functions of ``template.yaml``.

- ``aws_server``: moto in server mode (DynamoDB, DynamoDB Streams, SQS) on one port, every
  DynamoDB request serialized; ``provisioning``: the template's tables and queues created there;
- ``durable_state``, ``journal``, ``snapshot``: that endpoint's tables and kept queues on disk
  (``KNOWLEDGE_PERSIST``);
- ``template``: the template read (HTTP routes, functions, tables, queues, event sources);
- ``api_gateway``: API Gateway's HTTP API (payload 2.0 events, Lambda authorizers and their cache,
  the throttle of failed authentications, the HTTP/1.1 server);
- ``lambda_runtime``: Lambda's invocations in execution environments of their own (processes), and
  the runtime's search indexes and embedder served to them;
- ``pollers``: Lambda's event source mappings (DynamoDB stream and SQS queue pollers, filters);
- ``moto_patches``: every change made to moto's internals, for the moto version the lock pins.

Nothing here imports the ``knowledge`` command (``knowledge_local.cli``) or the runtime that
composes the emulator (``knowledge_local.stack``, ``runtime``, ``config``).
"""
