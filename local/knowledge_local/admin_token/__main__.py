"""``python -m knowledge_local.admin_token --table ... --tenant ...``: ``knowledge_local.cli.admin_token``."""

from knowledge_local.cli.admin_token import main

raise SystemExit(main())
