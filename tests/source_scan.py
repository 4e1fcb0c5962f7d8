"""The product's source, read for calls: the one walk the source tests (tenancy, clock) share."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "threadline"


def places_calling(matches: Callable[[ast.Call], bool]) -> set[tuple[str, str]]:
    """``(file relative to threadline/, dotted scope)`` of every call ``matches`` accepts, the scope being
    the functions and classes it sits in (``""`` at module level)."""
    found: set[tuple[str, str]] = set()

    def visit(node: ast.AST, path: str, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, path, [*scope, child.name])
                continue
            if isinstance(child, ast.Call) and matches(child):
                found.add((path, ".".join(scope)))
            visit(child, path, scope)

    for file in PACKAGE.rglob("*.py"):
        visit(ast.parse(file.read_text()), file.relative_to(PACKAGE).as_posix(), [])
    return found
