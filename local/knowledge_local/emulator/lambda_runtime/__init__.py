"""Lambda's invocations, locally: pools of execution environments, one process each (``invoker``),
what runs inside one (``worker``, ``execution_environment``), the search indexes and embedder the
runtime serves to them (``shared_services``), and the process tree's memory and CPU time
(``processes``)."""
