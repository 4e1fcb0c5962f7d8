"""The server's dependencies, which pyproject.toml cannot state alone.

The server requires the client (``threadline-client``, the distribution in ``client/``), which no package
index has. Built from a clone (``pip install .``, ``pip install git+URL``, a Dockerfile's ``pip install
.``), the server requires the client as a direct reference to the ``client/`` directory of that very clone,
so pip builds and installs both, as two distributions: ``pip install ./client`` alone stays the client,
and both in one environment own their own files. Built where ``client/`` is absent (from an sdist), the
requirement is the plain name, for an index that has the client.

A wheel built from a clone names that clone's absolute path: it is for installing on this machine, not
for uploading. ``pip-compile`` of pyproject.toml lists the client by that path too; the locks leave it out
(``scripts/test.sh`` installs it editable)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "client"

with (HERE / "pyproject.toml").open("rb") as project:
    dependencies: list[str] = tomllib.load(project)["tool"]["threadline"]["dependencies"]

if (CLIENT / "pyproject.toml").is_file():
    client = f"threadline-client @ {CLIENT.as_uri()}"
else:
    client = "threadline-client"

setup(install_requires=[*dependencies, client])
