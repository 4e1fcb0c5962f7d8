"""API keys: creation, hashing, revocation, and the authentication every request goes through."""
