"""Every change the emulator makes to moto's internals, each for the life of the process:
transactions rolled back by journal (``transactions``), queries reading one partition
(``partition_queries``), stream records dropped once read (``stream_retention``) and kept queues
told to the journal (``queue_journal``)."""
