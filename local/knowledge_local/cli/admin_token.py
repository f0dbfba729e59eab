"""The first token of a deployed stack, written straight to its table.

``POST /v1/tokens`` needs an admin token, so the first one comes from whoever holds AWS
credentials for the stack's table:

    python -m knowledge_local.admin_token --table <KnowledgeTableName> --tenant acme

prints a new token (shown once; only its SHA-256 is stored) for ``--subject`` (default ``admin``)
with ``knowledge:read``, ``knowledge:write``, ``knowledge:admin`` and every memory scope
(``memory:read``, ``memory:write``, ``memory:share``, ``memory:admin``) in ``--tenant``, plus
``platform:admin`` with ``--platform-admin``. Credentials, region and endpoint come from the usual
AWS settings (``AWS_PROFILE``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``...). Exit status 1, with one
line, when the table cannot be reached.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import timedelta

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from knowledge.adapters.dynamodb.knowledge_store import DynamoDBKnowledgeStore
from knowledge.contract.ingest_messages import is_tenant_id
from knowledge.contract.writes import LABEL_MAX_CHARS
from knowledge.domain.identifiers import identifier_problem
from knowledge.domain.models import Permission
from knowledge.observability import logger
from knowledge.services.tokens import TokenService
from knowledge_local.cli.arguments import UsageError, parse_duration

TENANT_SCOPES = (
    Permission.READ.value,
    Permission.WRITE.value,
    Permission.ADMIN.value,
    Permission.MEMORY_READ.value,
    Permission.MEMORY_WRITE.value,
    Permission.MEMORY_SHARE.value,
    Permission.MEMORY_ADMIN.value,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    arguments = parser.parse_args(argv)
    if not is_tenant_id(arguments.tenant):
        parser.error(
            "--tenant must be 1-128 characters without '#', whitespace, control, bidirectional or "
            "invisible characters"
        )
    subject_problem = identifier_problem(arguments.subject)
    if subject_problem is not None or not 1 <= len(arguments.subject) <= LABEL_MAX_CHARS:
        parser.error(f"--subject {subject_problem or f'must be 1-{LABEL_MAX_CHARS} characters'}")
    try:
        expires_in = timedelta(seconds=parse_duration(arguments.expires_in)) if arguments.expires_in else None
    except UsageError as error:
        parser.error(str(error))
    scopes = (
        [*TENANT_SCOPES, Permission.PLATFORM_ADMIN.value] if arguments.platform_admin else list(TENANT_SCOPES)
    )
    client = boto3.client(
        "dynamodb", region_name=arguments.region, config=Config(retries={"mode": "standard"})
    )
    level = logger.log_level
    logger.setLevel("WARNING")  # the store logs at INFO on stdout, where the token goes
    try:
        client.describe_table(TableName=arguments.table)
        token, _ = TokenService(DynamoDBKnowledgeStore(arguments.table, dynamodb_client=client)).issue(
            tenant_id=arguments.tenant, subject_id=arguments.subject, scopes=scopes, expires_in=expires_in
        )
    except (ClientError, BotoCoreError) as error:
        print(f"error: cannot write a token to table {arguments.table!r}: {error}", file=sys.stderr)
        return 1
    finally:
        logger.setLevel(level)
    print(token)
    print(
        f"Token for {arguments.subject} in tenant {arguments.tenant} with {', '.join(scopes)}: "
        "shown once, store it now.",
        file=sys.stderr,
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m knowledge_local.admin_token",
        description="Write a new admin token to a knowledge table (the first token of a deployment).",
    )
    parser.add_argument("--table", required=True, help="the stack's KnowledgeTableName output")
    parser.add_argument("--tenant", required=True, help="tenant the token acts in")
    parser.add_argument("--subject", default="admin", help="subject id of the token (admin)")
    parser.add_argument(
        "--platform-admin", action="store_true", help="also grant platform:admin (any tenant)"
    )
    parser.add_argument("--expires-in", help="lifetime: seconds, or 90m, 12h, 30d (default: never)")
    parser.add_argument("--region", help="AWS region of the table (default: the AWS settings')")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
