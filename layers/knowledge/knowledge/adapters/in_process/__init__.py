"""In-process adapters: the store and note store held in this process's memory (tests, one-process runs)."""
