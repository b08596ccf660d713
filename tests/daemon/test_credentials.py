from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol.credentials import CredentialsError, load_credentials, secret_values

SECRET = "sk-ant-api03-SECRETSECRETSECRET"


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_missing_file_is_no_keys(tmp_path):
    assert load_credentials(tmp_path / "credentials.json") == {}


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_private_file_is_read(tmp_path, mode):
    path = write(
        tmp_path / "credentials.json",
        f'{{"anthropic": "{SECRET}", "OPENAI_API_KEY": " sk-o \\n", "groq": ""}}',
        mode,
    )
    # values are stripped; empty ones count as not set
    assert load_credentials(path) == {"anthropic": SECRET, "OPENAI_API_KEY": "sk-o"}


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o644, 0o660, 0o666])
def test_file_open_to_group_or_others_is_refused_with_the_fix(tmp_path, mode):
    path = write(tmp_path / "credentials.json", f'{{"anthropic": "{SECRET}"}}', mode)
    with pytest.raises(CredentialsError) as e:
        load_credentials(path)
    assert str(e.value) == (
        f"{path} is readable or writable by other users (mode {mode:04o}); "
        f"it holds API keys: run chmod 600 {path}"
    )


@pytest.mark.parametrize("mode", [0o610, 0o601])
def test_execute_bits_alone_are_not_a_leak(tmp_path, mode):
    path = write(tmp_path / "credentials.json", '{"openai": "k"}', mode)
    assert load_credentials(path) == {"openai": "k"}


def test_malformed_file_names_file_and_line_but_not_the_content(tmp_path):
    path = write(
        tmp_path / "credentials.json",
        f'{{\n  "anthropic": "{SECRET}"\n  "openai": "sk-proj-OTHEROTHEROTHER"\n}}\n',
    )
    with pytest.raises(CredentialsError) as e:
        load_credentials(path)
    msg = str(e.value)
    assert msg == (
        f"{path}: line 3 column 3: not valid JSON (Expecting ',' delimiter); "
        'write {"PROVIDER": "KEY", ...}'
    )
    assert "SECRET" not in msg and "OTHER" not in msg


def test_unterminated_string_does_not_echo_the_key(tmp_path):
    path = write(tmp_path / "credentials.json", f'{{"anthropic": "{SECRET}}}')
    with pytest.raises(CredentialsError) as e:
        load_credentials(path)
    assert str(e.value).startswith(f"{path}: line 1 column 15: not valid JSON (")
    assert "SECRET" not in str(e.value)


def test_not_an_object_is_refused(tmp_path):
    path = write(tmp_path / "credentials.json", f'["{SECRET}"]')
    with pytest.raises(CredentialsError) as e:
        load_credentials(path)
    assert str(e.value) == (
        f'{path}: expected a JSON object {{"PROVIDER": "KEY", ...}}, got an array'
    )


def test_non_string_value_names_the_entry_not_the_value(tmp_path):
    path = write(tmp_path / "credentials.json", f'{{"openai": ["{SECRET}"]}}')
    with pytest.raises(CredentialsError) as e:
        load_credentials(path)
    assert str(e.value) == f"{path}: the value of 'openai' must be a string (the key), not an array"


def test_a_key_used_as_a_name_is_not_echoed(tmp_path):
    path = write(tmp_path / "credentials.json", f'{{"{SECRET}": 1}}')
    with pytest.raises(CredentialsError) as e:
        load_credentials(path)
    assert "SECRET" not in str(e.value)
    assert str(e.value) == (
        f"{path}: the value of '[REDACTED]' must be a string (the key), not a number"
    )


def test_empty_file_is_no_keys(tmp_path):
    assert load_credentials(write(tmp_path / "credentials.json", "  \n")) == {}


def test_binary_garbage_is_refused_without_content(tmp_path):
    path = tmp_path / "credentials.json"
    path.write_bytes(b'{"a": "\xff\xfe"}')
    os.chmod(path, 0o600)
    with pytest.raises(CredentialsError) as e:
        load_credentials(path)
    assert str(e.value) == f"{path}: a: not UTF-8 text (byte 7)"  # the field, never the bytes


def test_a_lone_surrogate_or_deep_nesting_is_a_clear_error(tmp_path):
    path = tmp_path / "credentials.json"
    path.write_text('{"anthropic": "sk-ant-\\ud800-rest"}')
    os.chmod(path, 0o600)
    with pytest.raises(CredentialsError) as e:
        load_credentials(path)
    assert str(e.value) == f"{path}: anthropic: a lone surrogate (\\ud800) is not Unicode text"
    path.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CredentialsError, match="nested too deeply"):
        load_credentials(path)


def test_a_folder_is_refused(tmp_path):
    folder = tmp_path / "credentials.json"
    folder.mkdir(mode=0o700)
    with pytest.raises(CredentialsError) as e:
        load_credentials(folder)
    assert str(e.value) == f"{folder}: not a regular file"


def test_secret_values_lists_every_configured_key_once():
    creds = {"anthropic": "A" * 20, "OPENAI_API_KEY": "B" * 20}
    env = {"ANTHROPIC_API_KEY": "A" * 20, "XAI_API_KEY": "C" * 20, "HOME": "/h", "GROQ_API_KEY": ""}
    got = secret_values(creds, env, ["ANTHROPIC_API_KEY", "XAI_API_KEY", "GROQ_API_KEY", "HOME2"])
    assert got == ["A" * 20, "B" * 20, "C" * 20]
