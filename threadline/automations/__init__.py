"""Automations: runs started by a schedule (cron in a time zone) or by an ingested log record."""
