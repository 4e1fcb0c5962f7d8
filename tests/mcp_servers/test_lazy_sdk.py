"""The MCP SDK stays out of a server's start (threadline/mcp_servers/connection.py says why): a module that
imports ``mcp`` at its top again costs every ``serve``, worker and test process about 0.4 CPU-s."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.embedded  # no storage: one run is enough


def test_building_the_app_imports_no_mcp_sdk() -> None:
    probe = (
        "import sys\n"
        "from threadline.app import create_app\n"
        "from threadline.config import Settings\n"
        "create_app(Settings())\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_a_result_is_still_read_with_the_sdk_types() -> None:
    from mcp_types import CallToolResult

    from threadline.mcp_servers import connection

    blocks = {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "isError": False}
    result = connection.result_of(CallToolResult.model_validate(blocks))
    assert (result.result, result.is_error) == ("a\nb", False)
