"""Webhooks: endpoints an organization registers, and the signed deliveries of its runs' events."""
