"""The sandbox's settings: limits, hardening switches, output caps and the pool's bookkeeping."""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator

if TYPE_CHECKING:
    from wrench.settings import Settings


INSTANCE_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,39}$"
INSTANCE_FILE = "instance"


def deployment_instance(data_dir: Path) -> str:
    """This deployment's own label namespace: made up once and kept in `DATA_DIR/instance`, so
    that two deployments sharing an engine never take each other's sandboxes for their own."""
    path = data_dir / INSTANCE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "x") as made:  # the first process of a new deployment writes it
            made.write(f"w-{secrets.token_hex(4)}\n")
    except FileExistsError:
        pass
    instance = path.read_text().strip()
    if not re.fullmatch(INSTANCE_PATTERN, instance):
        raise ValueError(f"{path} does not hold a sandbox instance name: remove it to make one")
    return instance


class SandboxConfig(BaseModel):
    """How sandboxes are built and driven. The defaults are the safe ones."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    image: str = "wrench-sandbox:latest"
    """Docker image the container runs; it needs bash and a user-writable /workspace mount point."""
    memory: str = Field("2g", pattern=r"^[0-9]+[bkmg]?$")
    """Memory limit in Docker's notation (`512m`, `2g`); swap is capped to the same, so none."""
    cpus: float = Field(2.0, gt=0)
    """CPU time the container may use, in CPUs (1.5 means one and a half cores)."""
    pids_limit: int = Field(512, ge=16)
    """Most processes and threads alive at once in the container, so a fork bomb stalls there."""
    network: bool = False
    """Whether the container gets the engine's default bridge network; off means no interface."""
    runtime: str | None = None
    """OCI runtime, e.g. `runsc` for gVisor; None means the engine's default (runc)."""
    uid: int = Field(1000, gt=0)
    """User id commands run as; never 0. Files put into the workspace belong to this user."""
    gid: int = Field(1000, gt=0)
    """Group id commands run as."""
    tmp_size: str = Field("1g", pattern=r"^[0-9]+[bkmg]?$")
    """Size cap of each tmpfs (/tmp and the home directory); what they hold counts as memory."""
    command_timeout_s: float = Field(120.0, gt=0)
    """Timeout of a command when the caller gives none, in seconds."""
    output_head_bytes: int = Field(10_000, ge=0)
    """Bytes kept from the start of a command's output."""
    output_tail_bytes: int = Field(10_000, ge=0)
    """Bytes kept from the end of a command's output; what lies between is cut and counted."""
    instance: str = Field("wrench", pattern=INSTANCE_PATTERN)
    """Label namespace: the pool and the reaper only touch containers carrying this instance."""
    slot_root: Path = Field(Path("var/sandboxes"), validate_default=True)
    """Host directory where the pool keeps one small claim directory per sandbox (never mounted
    into it: the workspace lives in the container's own volume)."""
    pool_size: int = Field(2, ge=0)
    """Started idle containers kept ready per configuration; 0 means every sandbox starts cold."""
    pool_max_idle_s: float = Field(6 * 3600, gt=0)
    """Idle pool containers older than this are reaped, so image updates reach the pool."""

    @field_validator("slot_root")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        # Processes with other working directories must find the same slots.
        return value.expanduser().resolve()

    @classmethod
    def from_settings(cls, settings: Settings) -> SandboxConfig:
        """The sandbox configuration an operator asked for through the server settings."""
        return cls(
            image=settings.SANDBOX_IMAGE,
            memory=settings.SANDBOX_MEMORY,
            cpus=settings.SANDBOX_CPUS,
            pids_limit=settings.SANDBOX_PIDS,
            network=settings.SANDBOX_NETWORK,
            runtime=settings.SANDBOX_RUNTIME or None,
            instance=settings.SANDBOX_INSTANCE or deployment_instance(settings.DATA_DIR),
            slot_root=settings.DATA_DIR / "sandboxes",
            pool_size=settings.SANDBOX_POOL_SIZE,
        )
