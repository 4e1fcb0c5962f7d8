"""Organization settings: defaults for runs, telemetry retention, intake CORS, billing enforcement."""
