"""Every protocol a consumer reads the services through, where it receives them untyped (FastAPI's
``Depends(get_services)``, ``app.state.runtime``), is one that ``runtime._provides`` names, so mypy checks
that ``Services`` satisfies it. A protocol missing there is checked by nothing, and a field it names that
``Services`` lacks fails at the first request instead (two dashboard pages' and the stream slot's were
missing until 2026-12)."""

from __future__ import annotations

import ast

from tests.source_scan import PACKAGE

# Protocols that reach the services another way, where mypy already sees ``Services`` passed to them.
CHECKED_WHERE_PASSED = {
    "MetricsServices": "worker.py and server.py call metrics_app(services) with the Services themselves",
}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _received_untyped(tree: ast.AST) -> set[str]:
    """Protocols in ``Annotated[P, Depends(get_services)]``, ``ServicesOf[P]`` and ``x: P = ….services``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id == "ServicesOf" and isinstance(node.slice, ast.Name):
                found.add(node.slice.id)
            elif node.value.id == "Annotated" and isinstance(node.slice, ast.Tuple):
                first, *rest = node.slice.elts
                if isinstance(first, ast.Name) and any("get_services" in _names(r) for r in rest):
                    found.add(first.id)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.annotation, ast.Name)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "services"
        ):
            found.add(node.annotation.id)
    return found - {"Any", "object"}


def _provided() -> set[str]:
    tree = ast.parse((PACKAGE / "runtime.py").read_text())
    [provides] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_provides"]
    assert provides.returns is not None
    return _names(provides.returns) - {"tuple"}


def test_every_protocol_received_untyped_is_checked_against_the_services() -> None:
    received = set().union(*(_received_untyped(ast.parse(f.read_text())) for f in PACKAGE.rglob("*.py")))
    assert {"AccessServices", "BillingServices", "StreamSlotServices"} <= received  # the scan sees them
    assert CHECKED_WHERE_PASSED.keys() <= received, "listed but gone: remove it from CHECKED_WHERE_PASSED"
    unchecked = received - _provided() - CHECKED_WHERE_PASSED.keys()
    assert not unchecked, f"add these to runtime._provides: {sorted(unchecked)}"
