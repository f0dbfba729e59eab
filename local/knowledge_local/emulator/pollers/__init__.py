"""Lambda's event source mappings, locally: a DynamoDB stream (``stream_poller``) and SQS queues
(``queue_poller``) polled into functions, on a shared polling loop (``poller``), with Lambda's
event filtering (``event_filter``)."""
