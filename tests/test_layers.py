"""The layers contract covers every domain: import-linter checks only the packages a contract names, so a new
package of ``threadline/`` left out of ``domains-layered`` would be free to import anything. This fails
until it is placed (pyproject.toml, ``[tool.importlinter]``)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "threadline"
# Packages that are not domains: the kit below them, the entry points and the root's own parts above them.
NOT_DOMAINS = {"kit", "cli", "storage", "docs"}


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _layered() -> list[str]:
    names = []
    for line in _contracts()["domains-layered"]["layers"]:
        names += [name.strip() for name in line.replace(":", "|").split("|")]
    return names


def test_every_domain_package_is_in_the_layers() -> None:
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")} - NOT_DOMAINS
    layered = {name.removeprefix("threadline.") for name in _layered()}
    assert packages - layered == set(), "place each new domain on a line of domains-layered"
    assert layered - packages == set(), "domains-layered names a package that does not exist"


def test_the_layers_follow_the_design_order() -> None:
    """shared/DESIGN.md "Layers", bottom up: what a request is; organizations, projects, keys; threads,
    messages; agent; runs; search, telemetry; automations; dashboard."""
    order = [name.removeprefix("threadline.") for name in reversed(_layered())]
    design = [
        "access",
        "organizations",
        "projects",
        "keys",
        "threads",
        "messages",
        "agent",
        "runs",
        "search",
        "telemetry",
        "automations",
        "dashboard",
    ]
    assert [name for name in order if name in design] == design


def test_every_domain_is_below_the_root_and_above_the_kit() -> None:
    contracts = _contracts()
    layered = set(_layered())
    assert layered <= set(contracts["domains-below-root"]["source_modules"])
    assert layered <= set(contracts["kit-below-domains"]["forbidden_modules"])
    assert layered <= set(contracts["domains-acyclic"]["ancestors"])
