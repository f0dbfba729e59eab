"""``python -m knowledge_local.admin_token``: the documented command for the first token of a
deployed stack (docs/deployment.md); the code is ``knowledge_local.cli.admin_token``."""
