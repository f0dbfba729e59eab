"""The local runtime and the ``knowledge`` command: everything that is not shipped to Lambda."""
