"""Credits: an append-only ledger per organization (operator grants, one debit per run that used tokens)."""
