"""Sample objects as the server sends them, and a client whose transport answers from a script (recording
what it was asked), for the client's tests that need no server."""

from __future__ import annotations

import httpx
from threadline_client import Threadline


def client_answering(*responses: httpx.Response | Exception) -> tuple[Threadline, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    http = httpx.Client(transport=httpx.MockTransport(handle))
    return Threadline("sk_test", "http://api.test/v1", http_client=http, max_retries=2), seen


KEY = {
    "id": "key_1",
    "name": "ci",
    "type": "secret",
    "prefix": "sk_live_",
    "last4": "abcd",
    "projectId": None,
    "rateLimitPerMinute": None,
    "createdAt": "2026-11-25T00:00:00Z",
    "lastUsedAt": None,
    "revokedAt": None,
}
ORG = {
    "id": "org_1",
    "name": "Acme",
    "rateLimit": {"requestsPerMinute": 600},
    "createdAt": "2026-11-25T00:00:00Z",
}
ME = {"organization": ORG, "key": KEY}
RUN = {
    "id": "run_1",
    "threadId": "thr_1",
    "status": "queued",
    "model": "offline/echo",
    "instructions": None,
    "automationId": None,
    "metadata": {},
    "error": None,
    "usage": {"inputTokens": 0, "outputTokens": 0},
    "createdAt": "2026-11-25T00:00:00Z",
    "startedAt": None,
    "endedAt": None,
    "tools": None,
    "actionTimeoutSeconds": 600,
    "responseFormat": None,
    "requiredAction": None,
    "agentId": None,
    "agentVersion": None,
}
ARTIFACT = {
    "id": "art_1",
    "runId": "run_1",
    "threadId": "thr_1",
    "name": "a.md",
    "mimeType": "text/markdown",
    "size": 1,
    "content": "x",
    "createdAt": "2026-11-25T00:00:00Z",
}


AUTOMATION = {
    "id": "aut_1",
    "name": "Daily",
    "enabled": True,
    "trigger": {"type": "schedule", "cron": "@daily", "timezone": "UTC"},
    "action": {
        "prompt": "Summarise",
        "threadId": "thr_1",
        "model": None,
        "agentId": None,
        "agentVersion": None,
        "responseFormat": None,
    },
    "lastTriggeredAt": None,
    "nextRunAt": "2026-11-26T00:00:00Z",
    "lastError": None,
    "createdAt": "2026-11-25T00:00:00Z",
    "updatedAt": "2026-11-25T00:00:00Z",
}
