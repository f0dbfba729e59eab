"""``template.yaml`` read for the emulator: the HTTP API's routes, functions and authorizers
(``routes``), and the tables, queues and event sources (``resources``)."""
