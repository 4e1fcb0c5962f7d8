"""Help screens that read like a Unix command's: ``orgs create NAME``, not ``orgs create {name}``, and no
``<bool>`` type column beside flags (a flag takes no value) nor ``<str>`` beside every argument, and
``--owner-email OWNER_EMAIL`` rather than ``--owner-email <str>``.

Typer 0.29 draws those itself, with no setting to turn them off, so its two drawing methods are
replaced once, before any help is drawn; tests/cli/test_help.py holds the screens to this."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typer.core import TyperArgument, TyperOption

_applied: list[bool] = []


def plain_help() -> None:
    if _applied:
        return
    _applied.append(True)
    option_type: Callable[[TyperOption, Any], str | None] = TyperOption.display_type_rich
    argument_type: Callable[[TyperArgument, Any], str | None] = TyperArgument.display_type_rich

    def argument_name(self: TyperArgument) -> str:
        """Click's convention: the argument's name in capitals (``ORG_ID``), or its metavar."""
        return self.metavar or (self.name or "").upper()

    def usage_name(self: TyperArgument) -> str:
        name = argument_name(self)
        if not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def option_type_unless_flag(self: TyperOption, ctx: Any) -> str | None:
        """Nothing for a flag; the option's name in capitals for text and paths (--owner-email
        OWNER_EMAIL); the type otherwise (ranges and choices say something)."""
        if self.is_flag:
            return None
        shown = option_type(self, ctx)
        return (self.name or "").upper() if shown in ("<str>", "<path>") else shown

    def argument_type_unless_text(self: TyperArgument, ctx: Any) -> str | None:
        shown = argument_type(self, ctx)
        return None if shown in ("<str>", "<path>") else shown

    setattr(TyperArgument, "display_name_raw", property(argument_name))  # noqa: B010
    setattr(TyperArgument, "_usage_display_name", usage_name)  # noqa: B010
    setattr(TyperArgument, "display_type_rich", argument_type_unless_text)  # noqa: B010
    setattr(TyperOption, "display_type_rich", option_type_unless_flag)  # noqa: B010
