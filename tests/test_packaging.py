"""The two distributions build as wheels that work outside the source tree: the server's (with its CLI)
requiring the client from the clone it was built from, and the client's alone.

Installing every third-party dependency into a fresh environment costs a minute or more (and an index);
the fresh environments here borrow them from the running one instead (a ``.pth`` naming its
site-packages, whose own ``.pth`` files, and with them the editable installs of this tree, are not
processed), so what is tested is what the wheels themselves hold. The full ``pip install .`` from a clone
is in docs/operations.md; it is slow, and needs an index for the third-party packages."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str | Path, cwd: Path = Path("/")) -> str:
    """``args`` run outside the source tree (from it, ``python -c`` would import the tree's packages)."""
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )
    assert result.returncode == 0, f"{' '.join(map(str, args))}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _fresh_environment(where: Path) -> Path:
    """A virtualenv without pip whose third-party packages are the running environment's."""
    _run(sys.executable, "-m", "venv", "--without-pip", where)
    python = where / "bin" / "python"
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    borrowed = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "borrowed.pth").write_text("\n".join(sorted(borrowed)) + "\n")
    return python


def _install(python: Path, *wheels: Path) -> None:
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--quiet",
        "--no-deps",
        "--no-index",
        *wheels,
    )


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    wheelhouse = tmp_path_factory.mktemp("wheels")
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        wheelhouse,
        ROOT / "client",
        ROOT,
    )
    built = {path.name.split("-")[0]: path for path in wheelhouse.glob("*.whl")}
    assert set(built) == {"threadline", "threadline_client"}, built
    return built


def test_the_server_wheel_requires_the_client_from_its_clone(wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(wheels["threadline"]) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [
        line.removeprefix("Requires-Dist: ")
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    assert f"threadline-client @ {(ROOT / 'client').as_uri()}" in requires
    assert "fastapi>=0.160" in requires
    assert not any(name.startswith("threadline_client/") for name in names)  # one owner per file
    assert "threadline/storage/migrations/env.py" in names
    assert any(name.startswith("threadline/dashboard/templates/") for name in names)


def test_both_wheels_in_a_fresh_environment_give_the_cli_and_the_client(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    python = _fresh_environment(tmp_path / "both")
    _install(python, wheels["threadline_client"], wheels["threadline"])
    assert "Usage: threadline" in _run(tmp_path / "both" / "bin" / "threadline", "--help")
    where = _run(
        python,
        "-c",
        "import threadline, threadline_client; print(threadline.__file__, threadline_client.__file__)",
    )
    assert where.count(str(tmp_path / "both")) == 2, where
    _run(python, "-c", "import threadline.app, threadline.storage.migrate")  # the server imports whole


def test_the_client_wheel_alone(wheels: dict[str, Path], tmp_path: Path) -> None:
    python = _fresh_environment(tmp_path / "client")
    _install(python, wheels["threadline_client"])
    where = _run(python, "-c", "import threadline_client; print(threadline_client.__file__)")
    assert str(tmp_path / "client") in where
    alone = subprocess.run(
        [python, "-c", "import threadline"], capture_output=True, text=True, check=False, cwd="/"
    )
    assert alone.returncode != 0 and "No module named 'threadline'" in alone.stderr
