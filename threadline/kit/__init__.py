"""Shared building blocks every domain uses: ids, errors, pagination, storage access, limits, signals."""
