"""Building sandbox images without a registry: debootstrap a Debian root, add the user, import it.

Run `python -m sandbox.image` (scripts/setup does) to make sure the production image exists
under SANDBOX_IMAGE. Images are tagged with a hash of their recipe, so a second run finds the
tag and does nothing; change the recipe (or BUILDER_VERSION) and the next run rebuilds.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import ImageNotFound
from docker.utils import parse_repository_tag

log = logging.getLogger(__name__)

BUILDER_VERSION = 1
"""Bump when the build steps below change, so that images built by older steps are rebuilt."""
HERE = Path(__file__).resolve().parent
LABEL = "wrench.sandbox.recipe"
"""Image label marking images this module built; its value is the recipe digest."""
BASE_IMAGE = "debian:bookworm-slim"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The engine provides /dev at run time; debootstrap's device nodes have no business in a layer.
_TAR_OPTIONS = ["--exclude=./dev/*", "."]


class ImageBuildError(Exception):
    """Building an image failed; the message holds the end of the builder's output."""


@dataclass(frozen=True)
class ImageRecipe:
    """What goes into a sandbox image. Everything here is part of the cache key."""

    repository: str
    """Image repository; the tag is derived from the digest."""
    packages: tuple[str, ...]
    """Debian packages on top of the minimal base system."""
    suite: str = "bookworm"
    """Debian release."""
    mirror: str = "http://deb.debian.org/debian"
    """Debian mirror debootstrap downloads from."""
    uid: int = 1000
    """Uid of the `sandbox` user that owns /workspace and /home/sandbox."""
    gid: int = 1000
    """Gid of the `sandbox` group."""
    dockerfile: Path | None = None
    """A Dockerfile building the same image, used instead when its base image is present."""

    @property
    def digest(self) -> str:
        """Hash of every input of the build."""
        inputs = {k: v for k, v in self.__dict__.items() if k not in ("repository", "dockerfile")}
        inputs["builder"] = BUILDER_VERSION
        if self.dockerfile:
            inputs["dockerfile"] = self.dockerfile.read_text()
        return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def tag(self) -> str:
        """The image reference whose existence means this recipe is already built."""
        return f"{self.repository}:r-{self.digest}"


def production_recipe() -> ImageRecipe:
    """The recipe of the production image: the packages of sandbox/packages.txt."""
    lines = (HERE / "packages.txt").read_text().splitlines()
    packages = tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    return ImageRecipe("wrench-sandbox", packages, dockerfile=HERE / "Dockerfile")


def ensure_image(client: docker.DockerClient, recipe: ImageRecipe, name: str | None = None) -> str:
    """The recipe's image reference, built first when missing; also tagged `name` if given.

    `name` is left alone when it already names an image this module did not build: an
    operator's own image under SANDBOX_IMAGE wins over ours.
    """
    if name and _exists(client, name) and LABEL not in client.images.get(name).labels:
        log.info("%s is not a Wrench-built image: leaving it as it is", name)
        return name
    with _build_lock(recipe):
        if not _exists(client, recipe.tag):
            build(client, recipe)
    if name and name != recipe.tag:
        repository, tag = parse_repository_tag(name)
        client.images.get(recipe.tag).tag(repository, tag or "latest")
    return recipe.tag


def build(client: docker.DockerClient, recipe: ImageRecipe) -> None:
    """Build the recipe's image: from its Dockerfile if the base image is here, else offline."""
    if recipe.dockerfile and _exists(client, BASE_IMAGE):
        log.info("building %s from %s", recipe.tag, recipe.dockerfile)
        client.images.build(
            path=str(recipe.dockerfile.parent),
            dockerfile=recipe.dockerfile.name,
            tag=recipe.tag,
            labels={LABEL: recipe.digest},
            network_mode="host",  # RUN apt-get needs the network, and no bridge may exist
            pull=False,
            rm=True,
        )
        return
    log.info("building %s with debootstrap: this takes a minute or more", recipe.tag)
    with tempfile.TemporaryDirectory(prefix="wrench-image-") as scratch:
        root = Path(scratch) / "root"
        _debootstrap(recipe, root)
        _add_user(recipe, root)
        _slim(root)
        archive = Path(scratch) / "root.tar"
        _run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(archive), *_TAR_OPTIONS])
        repository, tag = recipe.tag.split(":")
        client.api.import_image(
            src=str(archive), repository=repository, tag=tag, changes=_image_config(recipe)
        )


def _image_config(recipe: ImageRecipe) -> list[str]:
    return [
        f"LABEL {LABEL}={recipe.digest}",
        f"ENV PATH={PATH}",
        "ENV LANG=C.UTF-8",
        f"USER {recipe.uid}:{recipe.gid}",
        "WORKDIR /workspace",
        'CMD ["sleep", "infinity"]',
    ]


def _debootstrap(recipe: ImageRecipe, root: Path) -> None:
    include = ",".join(recipe.packages)
    command = ["debootstrap", "--variant=minbase", f"--include={include}", recipe.suite]
    _run([*command, str(root), recipe.mirror])


def _add_user(recipe: ImageRecipe, root: Path) -> None:
    """The `sandbox` user, written straight into the files: no binary of the image runs."""
    etc = root / "etc"
    with open(etc / "passwd", "a") as passwd:
        passwd.write(
            f"sandbox:x:{recipe.uid}:{recipe.gid}:Wrench sandbox:/home/sandbox:/bin/bash\n"
        )
    with open(etc / "group", "a") as group:
        group.write(f"sandbox:x:{recipe.gid}:\n")
    with open(etc / "shadow", "a") as shadow:
        shadow.write("sandbox:!:19000:0:99999:7:::\n")
    for directory in (root / "home" / "sandbox", root / "workspace"):
        directory.mkdir(mode=0o755, parents=True, exist_ok=True)
        shutil.chown(directory, recipe.uid, recipe.gid)


def _slim(root: Path) -> None:
    """Drop apt's downloads and lists: the sandbox user cannot install packages anyway."""
    for directory in (root / "var/cache/apt/archives", root / "var/lib/apt/lists"):
        for entry in directory.glob("*"):
            if entry.is_file():
                entry.unlink()


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise ImageBuildError(f"{command[0]} failed ({done.returncode}):\n{tail}")


def _exists(client: docker.DockerClient, reference: str) -> bool:
    try:
        client.images.get(reference)
    except ImageNotFound:
        return False
    return True


@contextmanager
def _build_lock(recipe: ImageRecipe) -> Iterator[None]:
    """One build per recipe at a time on this machine, across processes (parallel test runs)."""
    path = Path(tempfile.gettempdir()) / f"wrench-image-{recipe.digest}.lock"
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def main() -> None:
    """Make sure SANDBOX_IMAGE exists, building the production image when it does not."""
    from wrench.settings import load_settings

    logging.basicConfig(level=logging.INFO, format="sandbox.image: %(message)s")
    image = load_settings().SANDBOX_IMAGE
    ensure_image(docker.from_env(), production_recipe(), name=image)
    log.info("%s is ready", image)


if __name__ == "__main__":
    main()
