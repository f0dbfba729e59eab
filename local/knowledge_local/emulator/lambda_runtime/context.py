"""The Lambda context object of an invocation, as the Python runtime hands it to a handler: the
attributes handlers and Powertools read (function name, memory, request id, ARN, log names, the
time left before the function's ``Timeout``). Source: AWS Lambda developer guide, "Using the Lambda
context object to retrieve Python function information"."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from knowledge_local.account import ACCOUNT_ID, REGION


@dataclass
class LambdaContext:
    """The attributes of the Python runtime's context object that handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int
    timeout_seconds: float
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    identity: Any = None
    client_context: Any = None
    _deadline: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"local/[$LATEST]{self.aws_request_id.replace('-', '')}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))
