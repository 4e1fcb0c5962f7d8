"""Projects: the scope of a public key and of the telemetry it sends."""
