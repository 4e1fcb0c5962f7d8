"""``threadline automations``."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Annotated, Any

import typer

from threadline.cli.client.common import RESPONSE_FORMAT_HELP, fetch, response_format_option, with_api_key
from threadline.cli.client.runs import run_line
from threadline.cli.output import emit_json, fail

if TYPE_CHECKING:
    from threadline_client import Threadline
    from threadline_client.types import Automation

automations = typer.Typer(
    no_args_is_help=True, help="Automations: runs on a schedule or on logs (through the API)."
)

_LOG_OPTIONS = ("--project-id", "--level", "--contains", "--cooldown-seconds")


def _trigger_text(trigger: dict[str, Any]) -> str:
    if trigger["type"] == "schedule":
        return f"cron {trigger['cron']!r} {trigger['timezone']}"
    parts = [f"on log >= {trigger['level']}"]
    if trigger["projectId"] is not None:
        parts.append(f"in {trigger['projectId']}")
    if trigger["contains"] is not None:
        parts.append(f"containing {trigger['contains']!r}")
    parts.append(f"cooldown {trigger['cooldownSeconds']}s")
    return " ".join(parts)


def _automation_line(automation: dict[str, Any]) -> str:
    state = "enabled" if automation["enabled"] else "disabled"
    return f"{automation['id']}  {state:<8}  {_trigger_text(automation['trigger'])}  {automation['name']}"


def _log_fields(
    project_id: str | None, level: str | None, contains: str | None, cooldown_seconds: int | None
) -> dict[str, Any]:
    """The log-trigger options given (an empty --project-id or --contains: null, i.e. any)."""
    given = {
        "projectId": project_id,
        "level": level,
        "contains": contains,
        "cooldownSeconds": cooldown_seconds,
    }
    return {
        name: (value or None) if name in ("projectId", "contains") else value
        for name, value in given.items()
        if value is not None
    }


def _trigger(
    current: dict[str, Any] | None,
    cron: str | None,
    timezone: str | None,
    on_log: bool,
    log_fields: dict[str, Any],
) -> dict[str, Any] | None:
    """The whole trigger to send (PATCH replaces it), None to keep ``current``; exits 2 on a mix of types.
    --cron or --on-log picks the type; without them the options change the current trigger's own fields.
    A new type starts from its defaults; the current type keeps the fields no option names."""
    if cron is not None and on_log:
        fail("--cron (a schedule) and --on-log (a log trigger) exclude each other", code=2)
    kind = "schedule" if cron is not None else "log" if on_log else current["type"] if current else None
    if kind is None:
        fail("a trigger is required: --cron (a schedule) or --on-log (a log trigger)", code=2)
    if kind == "schedule" and log_fields:
        fail(f"{', '.join(_LOG_OPTIONS)} go with a log trigger (--on-log)", code=2)
    if kind == "log" and timezone is not None:
        fail("--timezone goes with a schedule (--cron)", code=2)
    schedule_fields = {
        name: value for name, value in (("cron", cron), ("timezone", timezone)) if value is not None
    }
    changed = schedule_fields if kind == "schedule" else log_fields
    if current is not None and current["type"] == kind:
        return {**current, **changed} if changed else None
    return {"type": kind, **changed}


def _action(
    prompt: str | None, thread_id: str | None, model: str | None, response_format: str | None
) -> dict[str, Any]:
    """The action options given (an empty --thread-id, --model or --response-format: null)."""
    answer_format = response_format_option(response_format) if response_format else response_format
    given = {"prompt": prompt, "threadId": thread_id, "model": model, "responseFormat": answer_format}
    return {
        name: (value or None) if name != "prompt" else value
        for name, value in given.items()
        if value is not None
    }


def list_automations(
    limit: Annotated[int, typer.Option(help="How many, newest first.", min=1)] = 20,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The organization's newest automations."""
    data = fetch(lambda c: list(itertools.islice(c.automations.list(limit=min(limit, 100)), limit)))
    if json_output:
        emit_json(data)
        return
    for automation in data:
        typer.echo(_automation_line(automation))


def show_automation(
    automation_id: Annotated[str, typer.Argument(help="Automation id (aut_…).")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """An automation: its trigger, its action and its last firing."""
    data = fetch(lambda c: c.automations.get(automation_id))
    if json_output:
        emit_json(data)
        return
    action = data["action"]
    typer.echo(_automation_line(data))
    answer_format = action.get("responseFormat") or {"type": "text"}
    typer.echo(
        f"thread {action['threadId'] or '(a new one per firing)'}  model {action['model'] or '(default)'}"
        f"  answer {answer_format.get('name') or answer_format['type']}"
    )
    typer.echo(f"last triggered {data['lastTriggeredAt'] or 'never'}  next run {data['nextRunAt'] or '-'}")
    if data["lastError"] is not None:
        typer.echo(f"last error {data['lastError']['code']}: {data['lastError']['message']}")
    typer.echo(f"prompt: {action['prompt']}")


_Cron = Annotated[
    str | None,
    typer.Option(help="Schedule: five cron fields (minute hour day month weekday) or @hourly, @daily, …"),
]
_Timezone = Annotated[str | None, typer.Option(help="Schedule: the IANA time zone of --cron (default UTC).")]
_OnLog = Annotated[bool, typer.Option("--on-log", help="Fire when an ingested log record matches.")]
_ProjectId = Annotated[str | None, typer.Option(help="Log trigger: only this project's records.")]
_Level = Annotated[
    str | None, typer.Option(help="Log trigger: records at this level or above (default error).")
]
_Contains = Annotated[
    str | None, typer.Option(help="Log trigger: only messages containing this text (case-insensitive).")
]
_Cooldown = Annotated[
    int | None,
    typer.Option(help="Log trigger: fire at most once per this many seconds (default 300).", min=0),
]
_ThreadId = Annotated[str | None, typer.Option(help="Run on this thread (default: a new thread per firing).")]
_Model = Annotated[str | None, typer.Option(help="provider/model (default: the organization's).")]
_ResponseFormat = Annotated[str | None, typer.Option(help=RESPONSE_FORMAT_HELP + " '': text (on update).")]


def create_automation(
    name: Annotated[str, typer.Option(help="A descriptive label (up to 200 characters).")],
    prompt: Annotated[str, typer.Option(help="The run's input (a log trigger appends the record).")],
    cron: _Cron = None,
    timezone: _Timezone = None,
    on_log: _OnLog = False,
    project_id: _ProjectId = None,
    level: _Level = None,
    contains: _Contains = None,
    cooldown_seconds: _Cooldown = None,
    thread_id: _ThreadId = None,
    model: _Model = None,
    response_format: _ResponseFormat = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Create it disabled.")] = False,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create an automation: --cron (with --timezone) for a schedule, or --on-log (with --project-id,
    --level, --contains, --cooldown-seconds) for a log trigger."""
    from threadline_client import NOT_GIVEN

    trigger = _trigger(
        None, cron, timezone, on_log, _log_fields(project_id, level, contains, cooldown_seconds)
    )
    assert trigger is not None  # a new trigger is never "keep the current one"
    action = _action(prompt, thread_id, model, response_format)
    data = fetch(
        lambda c: c.automations.create(
            name=name, trigger=trigger, action=action, enabled=False if disabled else NOT_GIVEN
        )
    )
    emit_json(data) if json_output else typer.echo(_automation_line(data))


def update_automation(
    automation_id: Annotated[str, typer.Argument(help="Automation id (aut_…).")],
    name: Annotated[str | None, typer.Option(help="A new label.")] = None,
    enabled: Annotated[bool | None, typer.Option("--enable/--disable", help="Turn it on or off.")] = None,
    cron: _Cron = None,
    timezone: _Timezone = None,
    on_log: _OnLog = False,
    project_id: Annotated[
        str | None, typer.Option(help="Log trigger: only this project's ('': any).")
    ] = None,
    level: _Level = None,
    contains: Annotated[str | None, typer.Option(help="Log trigger: text in the message ('': any).")] = None,
    cooldown_seconds: _Cooldown = None,
    prompt: Annotated[str | None, typer.Option(help="The run's input.")] = None,
    thread_id: Annotated[
        str | None, typer.Option(help="Run on this thread ('': a new thread per firing).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="provider/model ('': the organization's).")] = None,
    response_format: _ResponseFormat = None,
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Change what the options give and keep the rest: the trigger's and the action's other fields stay as
    they are (the current automation is read first). --cron or --on-log switches the trigger's type."""
    log_fields = _log_fields(project_id, level, contains, cooldown_seconds)
    action_fields = _action(prompt, thread_id, model, response_format)

    def work(client: Threadline) -> Automation:
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
        if enabled is not None:
            changes["enabled"] = enabled
        if cron is not None or timezone is not None or on_log or log_fields or action_fields:
            current = client.automations.get(automation_id).to_dict()
            trigger = _trigger(current["trigger"], cron, timezone, on_log, log_fields)
            if trigger is not None:
                changes["trigger"] = trigger
            if action_fields:
                changes["action"] = {**current["action"], **action_fields}
        if not changes:
            fail("nothing to change: give at least one option", code=2)
        return client.automations.update(automation_id, **changes)

    data = fetch(work)
    emit_json(data) if json_output else typer.echo(_automation_line(data))


def delete_automation(
    automation_id: Annotated[str, typer.Argument(help="Automation id (aut_…).")],
    json_output: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Delete an automation (the runs it started stay)."""
    data = fetch(lambda c: c.automations.delete(automation_id))
    emit_json(data) if json_output else typer.echo(_automation_line(data))


def trigger_automation(
    automation_id: Annotated[str, typer.Argument(help="Automation id (aut_…).")],
    json_output: Annotated[bool, typer.Option("--json", help="The run as JSON.")] = False,
) -> None:
    """Fire an automation now (enabled or not, cooldown or not) and print the run it started
    (threadline runs stream RUN_ID follows it)."""
    run = fetch(lambda c: c.automations.trigger(automation_id))
    emit_json(run) if json_output else typer.echo(run_line(run))


def register_automations(app: typer.Typer) -> None:
    automations.command("list")(with_api_key(list_automations))
    automations.command("show")(with_api_key(show_automation))
    automations.command("create")(with_api_key(create_automation))
    automations.command("update")(with_api_key(update_automation))
    automations.command("delete")(with_api_key(delete_automation))
    automations.command("trigger")(with_api_key(trigger_automation))
    app.add_typer(automations, name="automations")
