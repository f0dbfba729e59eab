"""Wire contracts: the tools' arguments and answers, the write API's bodies, the queues' messages."""
