"""The sandbox configuration as an operator sets it through the server settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sandbox.config import SandboxConfig
from wrench.settings import Settings


def test_defaults_are_the_safe_ones() -> None:
    config = SandboxConfig()
    assert config.network is False
    assert config.runtime is None
    assert config.uid != 0 and config.gid != 0
    assert config.slot_root.is_absolute()


def test_every_field_is_documented() -> None:
    for name, field in SandboxConfig.model_fields.items():
        assert field.description, f"SandboxConfig.{name} has no docstring"


def test_built_from_the_operators_settings(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,
        SANDBOX_IMAGE="img:1",
        SANDBOX_POOL_SIZE=0,
        SANDBOX_NETWORK=True,
        SANDBOX_RUNTIME="",
        SANDBOX_MEMORY="512m",
        SANDBOX_CPUS=0.5,
        SANDBOX_PIDS=64,
        SANDBOX_INSTANCE="staging",
        DATA_DIR=tmp_path / "data",
    )
    config = SandboxConfig.from_settings(settings)
    assert (config.image, config.pool_size, config.network) == ("img:1", 0, True)
    assert (config.memory, config.cpus, config.pids_limit) == ("512m", 0.5, 64)
    assert config.runtime is None  # an empty SANDBOX_RUNTIME= means the engine's default
    assert (config.instance, config.slot_root) == ("staging", tmp_path / "data" / "sandboxes")
    assert SandboxConfig.from_settings(Settings(_env_file=None, SANDBOX_RUNTIME="runsc")).runtime


@pytest.mark.parametrize(
    "field", [{"uid": 0}, {"memory": "lots"}, {"instance": "Bad Name"}, {"pids_limit": 1}]
)
def test_unsafe_or_malformed_values_are_refused(field: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        SandboxConfig(**field)
