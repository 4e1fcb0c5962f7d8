"""The threadline command. Operator commands act on the configured database; client commands act through
the API with THREADLINE_API_KEY and THREADLINE_BASE_URL, like any API client."""

from __future__ import annotations

import typer

from threadline.cli import backup, client, keys_mint, operator, users
from threadline.cli.help import plain_help

plain_help()
# No pretty exceptions: rich renders a traceback with syntax highlighting, which took 30 s for a database
# driver's error; an unexpected error prints Python's own traceback at once.
app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__, pretty_exceptions_enable=False)
operator.register(app)
backup.register(app)
users.register(app)
client.register(app)
# `keys create`, `list` and `revoke` go through the API; `mint` is the operator's, on the database.
keys_mint.register_keys(app)
# One group for both kinds: `balance` and `transactions` go through the API, `grant` is the operator's.
billing = typer.Typer(
    no_args_is_help=True, help="Credits: the balance and the ledger (through the API); grants (operator)."
)
client.register_billing(billing)
operator.register_billing(billing)
app.add_typer(billing, name="billing")


def main() -> None:
    app()
