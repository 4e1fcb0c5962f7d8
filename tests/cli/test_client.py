"""Client commands against a real server process, as a user would run them."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from threadline_client import Threadline

from tests.conftest import Backend
from tests.support import ServerProcess, Tenant, running_server, threadline
from threadline.config import Settings


def test_threads_and_search_commands(backend: Backend, settings: Settings, tenant: Tenant) -> None:
    with running_server(backend.env(settings)) as server:
        env = {
            **backend.env(settings),
            "THREADLINE_API_KEY": tenant.created.secret_value,
            "THREADLINE_BASE_URL": f"{server.api_url}/v1",
        }
        created = json.loads(
            threadline(
                "threads",
                "create",
                "--title",
                "Checkout incident",
                "--metadata",
                "env=prod",
                "--message",
                "The deployment failed with a timeout",
                "--json",
                env=env,
            ).stdout
        )
        assert created["title"] == "Checkout incident" and created["messageCount"] == 1
        threadline("threads", "create", "--title", "Other", "--metadata", "env=staging", env=env)

        listed = json.loads(threadline("threads", "list", "--metadata", "env=prod", "--json", env=env).stdout)
        assert [t["id"] for t in listed] == [created["id"]]
        shown = json.loads(threadline("threads", "show", created["id"], "--json", env=env).stdout)
        assert [m["content"] for m in shown["messages"]] == ["The deployment failed with a timeout"]
        text = threadline("threads", "show", created["id"], env=env).stdout
        assert "Checkout incident" in text and "[user]" in text

        found = json.loads(threadline("search", "messages", "deploy", "--json", env=env).stdout)
        assert found["pagination"]["totalResults"] == 1 and "<mark>" in found["data"][0]["snippet"]
        threads = json.loads(threadline("search", "threads", "checkout", "--json", env=env).stdout)
        assert [t["id"] for t in threads["data"]] == [created["id"]]
        human = threadline("search", "messages", "timeout", env=env)
        assert "1 results" in human.stderr and created["id"] in human.stdout
        assert "with a timeout" in human.stdout and "<mark>" not in human.stdout  # piped: plain text
        by_metadata = threadline("search", "threads", "prod", env=env).stdout
        assert created["id"] in by_metadata and "    matched metadata: env=prod\n" in by_metadata
        made = threadline("keys", "create", "--name", "cli", env=env)
        assert made.stdout.splitlines()[1].startswith("sk_") and "only time" in made.stderr

        bad = threadline("search", "messages", "--", "-only", env=env, check=False)
        assert bad.returncode == 1 and "INVALID_QUERY" in bad.stderr
        malformed = threadline("threads", "create", "--metadata", "novalue", env=env, check=False)
        assert malformed.returncode == 2


def test_logs_tail_follows_new_records_live(backend: Backend, settings: Settings, tenant: Tenant) -> None:
    """The tail prints what was committed since --since, then what arrives while it runs, in order."""
    with running_server(backend.env(settings)) as server:
        env = {
            **backend.env(settings),
            "THREADLINE_API_KEY": tenant.created.secret_value,
            "THREADLINE_BASE_URL": f"{server.api_url}/v1",
        }
        intake = f"{server.intake_url}/v1/logs"
        before = {"message": "before", "level": "error", "attributes": {"region": "eu"}}
        sent = httpx.post(intake, json=before, headers=tenant.public)
        assert sent.status_code == 202
        since = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
        tail = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "threadline",
                "logs",
                "tail",
                "--since",
                since,
                "--level",
                "warn",
                "--json",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert tail.stdout is not None
            first = json.loads(tail.stdout.readline())
            assert first["message"] == "before" and first["type"] == "log_record"
            httpx.post(intake, json=[{"message": "ignored", "level": "info"}], headers=tenant.public)
            httpx.post(intake, json={"message": "after", "level": "fatal"}, headers=tenant.public)
            second = json.loads(tail.stdout.readline())
            assert second["message"] == "after" and second["id"] > first["id"]
        finally:
            tail.terminate()
            tail.wait(timeout=10)
        assert tail.stderr is not None and "waiting for records (Ctrl-C to stop)" in tail.stderr.read()

        verbose = subprocess.Popen(
            [sys.executable, "-m", "threadline", "logs", "tail", "--since", since, "--level", "error", "-v"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert verbose.stdout is not None
            assert verbose.stdout.readline().rstrip().endswith(f"error  {tenant.project_id}  before")
            assert verbose.stdout.readline() == '    region="eu"\n'  # piped: no colours
        finally:
            verbose.terminate()
            verbose.wait(timeout=10)


def test_sdk_tail_resumes_from_a_cursor(backend: Backend, settings: Settings, tenant: Tenant) -> None:
    with running_server(backend.env(settings)) as server:
        for message in ("a", "b", "c"):
            httpx.post(f"{server.intake_url}/v1/logs", json={"message": message}, headers=tenant.public)
        window = {
            "since": (datetime.now(UTC) - timedelta(minutes=1)).isoformat(),
            "until": (datetime.now(UTC) + timedelta(milliseconds=300)).isoformat(),
        }
        with Threadline(tenant.created.secret_value, f"{server.api_url}/v1") as client:
            everything = [event.to_dict() for event in client.logs.stream(**window)]
            assert [r["message"] for r in everything] == ["a", "b", "c"]
            rest = [event.to_dict() for event in client.logs.stream(cursor=everything[0]["cursor"], **window)]
            assert [r["message"] for r in rest] == ["b", "c"]


# A run that waits a minute before its first delta (the offline model's directives): to cancel or
# interrupt while it writes nothing.
QUIET = "#notools #delay=60000"


TRIAGE = {
    "type": "json_schema",
    "name": "triage",
    "schema": {
        "type": "object",
        "properties": {"severity": {"enum": ["low", "high"]}, "summary": {"type": "string"}},
        "required": ["severity", "summary"],
    },
}


def _serving(backend: Backend, settings: Settings) -> dict[str, str]:
    """The server's environment: it executes runs itself in both shapes (no `threadline worker`)."""
    return {**backend.env(settings), "THREADLINE_RUN_EXECUTION": "server"}


def _client_env(
    backend: Backend, settings: Settings, tenant: Tenant, server: ServerProcess
) -> dict[str, str]:
    return {
        **backend.env(settings),
        "THREADLINE_API_KEY": tenant.created.secret_value,
        "THREADLINE_BASE_URL": f"{server.api_url}/v1",
    }


def test_runs_through_the_cli_and_the_sdk(
    backend: Backend, settings: Settings, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One server for both (each start costs seconds)."""
    monkeypatch.setattr("threadline_client._streams.backoff", lambda *_: 0.01)
    with running_server(_serving(backend, settings)) as server:
        env = _client_env(backend, settings, tenant, server)
        url = f"{server.api_url}/v1"
        with Threadline(tenant.created.secret_value, url) as client:
            check_runs_commands(env, client)
            check_sdk_run_stream_resumes_after_dropped_connections(client, tenant.created.secret_value, url)


class _Commands:
    """CLI processes started together (each is mostly interpreter start-up), awaited together."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> None:
        command = [sys.executable, "-m", "threadline", *args]
        self.started.append(
            subprocess.Popen(command, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )

    def results(self) -> list[subprocess.CompletedProcess[str]]:
        done = []
        for process in self.started:
            stdout, stderr = process.communicate(timeout=60)
            done.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
        self.started = []
        return done


def check_runs_commands(env: dict[str, str], client: Threadline) -> None:
    """`runs create --stream` renders a live run and exits by its status; `--json` is one event a line;
    `runs stream` replays a finished run exactly as it was shown live, or from a cursor; `show`, `cancel`
    and the multitask strategies. Each case on a thread of its own, so that they run side by side."""
    thread, other, failing, busy, cancelling, triage = (client.threads.create().id for _ in range(6))
    assert list(client.threads.stream(thread)) == []  # no run yet: [DONE] at once
    blocking = client.runs.create(busy, input=QUIET).to_dict()
    cancelled = client.runs.create(cancelling, input=QUIET).to_dict()

    commands = _Commands(env)
    commands.start("runs", "create", thread, "--input", "Why did the checkout deploy fail?", "--stream")
    commands.start("runs", "create", other, "--input", "#notools #chunks=3", "--stream", "--json")
    commands.start("runs", "create", failing, "--input", "#fail", "--stream")
    commands.start("runs", "create", busy, "--input", "again")
    commands.start("runs", "cancel", cancelled["id"])
    live, streamed, failed, refused, cancel = commands.results()

    assert live.returncode == 0, live.stderr
    lines = live.stdout.splitlines()
    assert lines[0] == '→ search_messages({"query": "checkout"})'
    assert re.match(r'← search_messages: \{"totalResults": \d+, ', lines[1])
    assert '→ query_logs({"level": "error", "limit": 5})' in lines
    assert "[artifact summary.md (text/markdown, " in live.stdout
    assert lines[-2].endswith('You asked: "Why did the checkout deploy fail?"')
    assert re.fullmatch(r"run completed \(in \d+ tokens / out \d+ tokens\)", lines[-1])
    run_id = live.stderr.split()[0]
    assert run_id.startswith("run_")
    reasoning = live.stderr.splitlines()[1:]
    assert reasoning and all(line.startswith("… ") for line in reasoning)

    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert streamed.returncode == 0 and streamed.stderr == ""
    assert [e["type"] for e in events][-3:] == ["text_chunk", "text_complete", "run_completed"]
    assert events[-1]["status"] == "completed" and events[-2]["text"] == "word1 word2 word3."
    assert [e["cursor"] for e in events] == [f"{events[0]['runId']}.{i}" for i in range(1, len(events) + 1)]

    assert failed.returncode == 1
    assert "error MODEL_ERROR: The scripted model was asked to fail (#fail)." in failed.stderr
    assert failed.stdout.splitlines()[-1].startswith("run failed (")

    assert refused.returncode == 1 and "RUN_ACTIVE" in refused.stderr
    assert cancel.returncode == 0 and cancel.stdout.startswith(f"{cancelled['id']}  cancelled")

    commands.start("runs", "stream", run_id)
    commands.start("runs", "stream", run_id, "--cursor", f"{run_id}.3", "--json")
    commands.start("runs", "show", run_id, "--json")
    commands.start("runs", "stream", cancelled["id"])
    commands.start(
        "runs", "create", busy, "--input", "#notools #chunks=2", "--strategy", "interrupt", "--stream"
    )
    commands.start(
        "runs", "create", triage, "--input", "#notools disk full", "--response-format", json.dumps(TRIAGE),
        "--stream", "--json",
    )  # fmt: skip
    replay, rest, show, ended, interrupting, structured = commands.results()

    assert (replay.returncode, replay.stdout, replay.stderr) == (0, live.stdout, "\n".join(reasoning) + "\n")
    assert json.loads(rest.stdout.splitlines()[0])["cursor"] == f"{run_id}.4"
    shown = json.loads(show.stdout)
    assert shown["run"]["status"] == "completed" and shown["run"]["threadId"] == thread
    assert [a["name"] for a in shown["artifacts"]] == ["summary.md"]
    assert ended.returncode == 1 and ended.stdout.splitlines()[-1].startswith("run cancelled (")
    assert interrupting.returncode == 0 and "word1 word2." in interrupting.stdout
    assert [r.status for r in client.runs.list(busy)] == ["completed", "cancelled"]
    assert client.runs.get(blocking["id"]).status == "cancelled"
    assert structured.returncode == 0, structured.stderr
    answer = json.loads(json.loads(structured.stdout.splitlines()[-2])["text"])
    assert answer == {"severity": "low", "summary": "disk full"}
    [listed] = client.runs.list(triage)
    assert listed.response_format == {**TRIAGE, "strict": True}


class _Cut(httpx.SyncByteStream):
    """A response body that breaks (like a dropped connection) after ``budget`` bytes."""

    def __init__(self, inner: httpx.SyncByteStream, budget: int) -> None:
        self.inner, self.budget = inner, budget

    def __iter__(self) -> Iterator[bytes]:
        sent = 0
        for chunk in self.inner:
            if sent + len(chunk) >= self.budget:
                yield chunk[: self.budget - sent]
                raise httpx.ReadError("connection dropped (test)")
            sent += len(chunk)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class _Dropping(httpx.HTTPTransport):
    """Every stream's connection breaks after a few hundred bytes, most often inside a frame."""

    def __init__(self) -> None:
        super().__init__()
        self.budgets = itertools.cycle([137, 611, 95, 880, 333, 1500])
        self.cursors: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path.endswith("/stream"):
            self.cursors.append(request.url.params.get("cursor"))
            assert isinstance(response.stream, httpx.SyncByteStream)
            response.stream = _Cut(response.stream, next(self.budgets))
        return response


def check_sdk_run_stream_resumes_after_dropped_connections(client: Threadline, key: str, url: str) -> None:
    """A live run read through connections that keep breaking, inside frames too, gives every event once,
    in order: the same events as a clean replay (and as the thread's stream)."""
    transport = _Dropping()
    with Threadline(key, url, http_client=httpx.Client(transport=transport)) as dropping:
        thread = client.threads.create().id
        run = client.runs.create(thread, input="#notools #chunks=20 #delay=5").to_dict()
        events = [event.to_dict() for event in dropping.runs.stream(run["id"])]
        replay = [event.to_dict() for event in client.runs.stream(run["id"])]
        assert events == replay
        assert [e["cursor"] for e in events] == [f"{run['id']}.{i}" for i in range(1, len(events) + 1)]
        assert events[-1]["type"] == "run_completed" and events[-1]["status"] == "completed"
        resumed = [cursor for cursor in transport.cursors if cursor is not None]
        assert len(resumed) > 5 and set(resumed) <= {e["cursor"] for e in events}
        assert [
            event.to_dict() for event in client.threads.stream(thread)
        ] == replay  # the thread's latest run


def test_terminal_output_is_styled_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadline.cli.client import terminal

    snippet = "…the <mark>checkout</mark> deploy in <mark>prod</mark>"
    assert terminal.highlighted(snippet) == "…the checkout deploy in prod"
    assert terminal.matched_metadata(snippet, {"env": "prod", "team": "payments"}) == ["env=prod"]
    assert terminal.level("warn") == "warn "
    monkeypatch.setattr(terminal, "on_terminal", lambda: True)
    shown = terminal.highlighted(snippet)
    assert "<mark>" not in shown and "\x1b[1m" in shown and "checkout" in shown
    assert terminal.matched_metadata(snippet, {"env": "Prod"})[0].startswith("env=\x1b[")
    assert terminal.level("error") != "error" and "error" in terminal.level("error")


def test_a_response_format_that_is_no_json_object_exits_2(tmp_path: Path) -> None:
    """Before any request: the API checks the format's schema itself."""
    env = {**os.environ, "THREADLINE_API_KEY": "sk_unused", "THREADLINE_BASE_URL": "http://127.0.0.1:9/v1"}
    for given, says in (
        ("{not json", "--response-format is not JSON"),
        ("[1]", "--response-format takes a JSON object"),
        (f"@{tmp_path / 'missing.json'}", "--response-format: cannot read"),
    ):
        refused = threadline("runs", "create", "thr_x", "--response-format", given, env=env, check=False)
        assert refused.returncode == 2 and says in refused.stderr, refused.stderr


def test_a_missing_key_names_the_variable_and_the_option(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    env["THREADLINE_DATA_DIR"] = str(tmp_path)
    refused = threadline("keys", "list", env=env, check=False)
    assert refused.returncode == 1
    assert "THREADLINE_API_KEY" in refused.stderr and "--api-key" in refused.stderr
    assert "api_key" not in refused.stderr.replace("--api-key", "")
    helped = threadline("search", "threads", "--help", env=env).stdout
    assert "QUERY" in helped and "{q}" not in helped and "--api-key" in helped
    assert "--json <bool>" not in " ".join(helped.split())
