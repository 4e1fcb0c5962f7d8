"""Where a repository that spans organizations is made (``XAcrossOrganizations``), read from the source.

A tenant's request reads and writes through ``XRepository(conn, organization_id)``, scoped when it is made;
the cross-organization repositories serve the processes that work for every tenant (the executor, the
scheduler, the authenticator, a login by email). Each place that makes one is listed here with its reason,
so a new one fails until someone says why it is not a tenant's request writing past its scope.
"""

from __future__ import annotations

import ast

from tests.source_scan import places_calling

ALLOWED: dict[tuple[str, str], str] = {
    ("automations/scheduler.py", "Scheduler.tick"): "the due schedules of every organization",
    ("automations/service.py", "fire_schedule"): "the scheduler's firing, by the id it found due",
    ("automations/service.py", "fire_log"): "a log trigger's firing, by the id its owed row names",
    ("automations/service.py", "firing_failed"): "the scheduler's record of a firing that could not start",
    ("automations/triggers.py", "LogTriggers.reload"): "every organization's log triggers, held in memory",
    ("automations/triggers.py", "LogTriggers.sweep"): "owed firings of every organization",
    ("keys/auth.py", "KeyAuthenticator._fetch"): "a key found by its hash: the organization is not known yet",
    (
        "keys/auth.py",
        "KeyAuthenticator.flush_usage",
    ): "every used key's lastUsedAt, in one batch",
    ("runs/executor.py", "RunExecutor._renew"): "the leases this process holds, whoever's runs they are",
    ("runs/executor.py", "RunExecutor.reap"): "runs of every organization whose lease lapsed",
    (
        "metrics_endpoint.py",
        "MetricsEndpoint._count",
    ): "the operator's /metrics: active runs of every organization",
    ("runs/recorder.py", "RunRecorder._landed"): "the executing run's own row, by its id, after an outage",
    ("runs/actions.py", "suspend_run"): "the executing run's own row, by its id, as it starts to wait",
    (
        "runs/actions.py",
        "expire",
    ): "the executor's sweep of waiting runs past their expiresAt, every organization's",
    ("runs/recorder.py", "RunRecorder._commit"): "the executing run's events, guarded by its lease",
    ("runs/service.py", "claim"): "the next queued run of any organization",
    ("runs/service.py", "end_run"): "the executor's or the reaper's end of a run they hold by id",
    ("runs/service.py", "_end"): (
        "every end of a run, whose row the caller locked first (a request through RunRepository); "
        "the writes are keyed by that run's id and its thread's"
    ),
    ("runs/service.py", "create_run"): (
        "the thread's active run, recomputed by the thread's id after the request's scoped read locked it"
    ),
    ("webhooks/dispatcher.py", "WebhookDispatcher.round"): "due webhook attempts of every organization",
    ("webhooks/dispatcher.py", "WebhookDispatcher._record"): "the result of an attempt this process claimed",
    ("webhooks/fanout.py", "fan_out"): (
        "the runs' outbox of every organization; each fact is fanned out through its own organization's "
        "WebhookRepository"
    ),
    ("users/service.py", "create_user"): "an email is unique across organizations (a login names no tenant)",
    ("users/service.py", "set_password"): "the operator's command, by email",
    ("users/service.py", "verify_login"): "a sign-in, by email: the organization is not known yet",
}


def _makes_cross_organization_repository(call: ast.Call) -> bool:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name.endswith("AcrossOrganizations")


def _places() -> set[tuple[str, str]]:
    return places_calling(_makes_cross_organization_repository)


def test_cross_organization_repositories_are_made_only_where_listed() -> None:
    places = _places()
    unlisted = places - ALLOWED.keys()
    assert not unlisted, f"a cross-organization repository made where no reason is listed: {sorted(unlisted)}"
    assert not ALLOWED.keys() - places, "listed but gone: remove it from ALLOWED"


def test_tenant_requests_write_automations_and_lock_runs_in_scope() -> None:
    """The paths the 2026-11 review found writing past their scope (a PATCH's save, a cancel's lock)."""
    places = _places()
    for function in ("update_automation", "trigger_now"):
        assert ("automations/service.py", function) not in places
    for function in ("cancel_run", "delete_thread_with_runs"):
        assert ("runs/service.py", function) not in places
    assert ("runs/actions.py", "_write") not in places  # answers to a waiting run, written in its scope
