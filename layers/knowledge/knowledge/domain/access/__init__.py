"""Access: bearer tokens, their reach, visibility and rate quotas (DESIGN §5, §6, §10)."""
