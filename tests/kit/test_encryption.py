"""Secrets at rest: AES-GCM under the configured keys, rotation, binding to the owner, the key file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from threadline.config import Settings
from threadline.kit.encryption import (
    KEY_FILE,
    KeyConfigError,
    SealError,
    SecretBox,
    configured_box,
    ensure_key_file,
    generate_key,
)


def test_seal_and_open() -> None:
    box = SecretBox.from_setting(generate_key())
    sealed = box.seal(b"Bearer hunter2", associated=b"mcp_1")
    assert "hunter2" not in sealed and sealed.startswith("v1.")
    assert box.open(sealed, associated=b"mcp_1") == b"Bearer hunter2"
    assert box.seal(b"Bearer hunter2", associated=b"mcp_1") != sealed  # a fresh nonce every time


def test_bound_to_its_owner_and_tamper_evident() -> None:
    box = SecretBox.from_setting(generate_key())
    sealed = box.seal(b"value", associated=b"mcp_1")
    with pytest.raises(SealError):
        box.open(sealed, associated=b"mcp_2")
    tampered = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    with pytest.raises(SealError):
        box.open(tampered, associated=b"mcp_1")


def test_rotation_first_key_seals_all_open() -> None:
    old, new = generate_key(), generate_key()
    sealed_old = SecretBox.from_setting(old).seal(b"old secret", associated=b"x")
    rotated = SecretBox.from_setting(f"{new}, {old}")
    assert rotated.open(sealed_old, associated=b"x") == b"old secret"
    sealed_new = rotated.seal(b"new secret", associated=b"x")
    assert SecretBox.from_setting(new).open(sealed_new, associated=b"x") == b"new secret"
    with pytest.raises(SealError, match="not configured"):
        SecretBox.from_setting(old).open(sealed_new, associated=b"x")


@pytest.mark.parametrize("setting", ["", "short", "not base64 !!", "c2hvcnQ"])
def test_bad_keys_are_refused(setting: str) -> None:
    with pytest.raises(KeyConfigError):
        SecretBox.from_setting(setting)


def test_a_malformed_setting_stops_start_up_without_echoing_it() -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(encryption_key=SecretStr("tooshort-but-secret"))
    (problem,) = refused.value.errors(include_url=False)
    assert problem["loc"] == ("encryption_key",) and "32 bytes" in problem["msg"]
    assert "tooshort-but-secret" not in problem["msg"]
    assert Settings(encryption_key=SecretStr(f" {generate_key()} , {generate_key()}")).encryption_key


def test_key_file_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    key = ensure_key_file(data_dir)
    path = data_dir / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_key_file(data_dir) == key
    assert [p.name for p in data_dir.iterdir()] == [KEY_FILE]
    SecretBox.from_setting(key)


def test_configured_box(tmp_path: Path) -> None:
    explicit = generate_key()
    box = configured_box(explicit, tmp_path, embedded=True)
    assert box is not None and not (tmp_path / KEY_FILE).exists()
    assert configured_box(None, tmp_path, embedded=False) is None
    embedded = configured_box(None, tmp_path, embedded=True)
    assert embedded is not None and (tmp_path / KEY_FILE).exists()
