"""Reading a change archive as the attacker could have written it: whatever the sandbox (or a
process the agent left behind) put in the collect script's output, only checked data comes out."""

from __future__ import annotations

import io
import tarfile

import pytest

from sandbox.boundary import ChangeLimits, ChangesRefused, read_changes
from sandbox.boundary.changes import link_refusal, path_refusal


def member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", **extra) -> tuple:
    return name, kind, data, extra


def archive(
    members: list[tuple], listed: list[str], deleted: list[str] = (), outer_extra: list = ()
) -> io.BytesIO:
    """An outer archive as the engine returns it for the output directory."""
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w") as tar:
        for name, kind, data, extra in members:
            info = tarfile.TarInfo(name)
            info.type, info.size = kind, len(data) if kind == tarfile.REGTYPE else 0
            for key, value in extra.items():
                setattr(info, key, value)
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    present = [p for p in listed if p not in deleted and not p.endswith("/")]
    parts = {
        "listed": b"".join(p.encode() + b"\0" for p in listed),
        "present": b"".join(p.encode() + b"\0" for p in present),
        "deleted": b"".join(p.encode() + b"\0" for p in deleted),
        "files.tar": inner.getvalue(),
    }
    outer = io.BytesIO()
    with tarfile.open(fileobj=outer, mode="w") as tar:
        for name, data in [*parts.items(), *outer_extra]:
            info = tarfile.TarInfo(f"wrench-out/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    outer.seek(0)
    return outer


def test_plain_changes_come_out_as_they_are():
    changes = read_changes(
        archive(
            [
                member("a.txt", data=b"a"),
                member("bin/run", data=b"#!", mode=0o755),
                member("l", tarfile.SYMTYPE, linkname="a.txt"),
                member("hard", tarfile.LNKTYPE, linkname="a.txt"),
            ],
            ["a.txt", "bin/run", "l", "hard", "gone.txt"],
            deleted=["gone.txt"],
        ),
        ChangeLimits(),
    )
    assert [(c.path, c.content, c.link, c.executable) for c in changes.changes] == [
        ("a.txt", b"a", False, False),
        ("bin/run", b"#!", False, True),
        ("gone.txt", None, False, False),
        ("hard", b"a", False, False),
        ("l", b"a.txt", True, False),
    ]
    assert changes.refused == ()


@pytest.mark.parametrize(
    "name, why",
    [
        ("../escape", "not a plain relative path"),
        ("/etc/cron.d/x", "not a plain relative path"),
        ("a/./b", "not a plain relative path"),
        ("a//b", "not a plain relative path"),
        (".git/hooks/pre-commit", "inside a .git directory"),
        ("sub/.GIT/config", "inside a .git directory"),
        ("sub/.git. /config", "inside a .git directory"),
    ],
)
def test_paths_outside_the_tree_or_in_a_git_directory_are_refused(name, why):
    changes = read_changes(archive([member(name, data=b"x")], [name]), ChangeLimits())
    assert changes.changes == () and why in dict(changes.refused)[name]


@pytest.mark.parametrize(
    "target, why",
    [
        ("/etc/passwd", "absolute path"),
        ("../../etc/passwd", "outside the repository"),
        ("x/../../../y", "outside the repository"),
        ("", "without a usable target"),
    ],
)
def test_links_that_leave_the_tree_are_refused(target, why):
    found = archive([member("d/link", tarfile.SYMTYPE, linkname=target)], ["d/link"])
    changes = read_changes(found, ChangeLimits())
    assert changes.changes == () and why in dict(changes.refused)["d/link"]


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_devices_and_pipes_are_refused(kind):
    changes = read_changes(archive([member("dev", kind)], ["dev"]), ChangeLimits())
    assert dict(changes.refused) == {
        "dev": "a device file or a pipe, which a repository cannot hold"
    }


def test_what_the_sandbox_did_not_list_or_archived_twice_is_refused():
    changes = read_changes(
        archive(
            [member("listed", data=b"1"), member("extra", data=b"2"), member("listed", data=b"3")],
            ["listed"],
        ),
        ChangeLimits(),
    )
    assert changes.changes == ()
    assert dict(changes.refused) == {
        "extra": "not among the changed paths the sandbox listed",
        "listed": "it appears twice in the sandbox's archive",
    }


def test_a_listed_file_missing_from_the_archive_is_reported_not_deleted():
    changes = read_changes(archive([], ["kept.txt"]), ChangeLimits())
    assert changes.changes == ()
    assert dict(changes.refused) == {"kept.txt": "it could not be read in the sandbox"}


def test_limits_refuse_the_whole_change_set():
    big = [member(f"f{i}", data=b"x" * 600) for i in range(2)]
    with pytest.raises(ChangesRefused, match="larger than"):
        read_changes(archive(big, ["f0", "f1"]), ChangeLimits(max_bytes=1000))
    one = read_changes(archive(big[:1], ["f0"]), ChangeLimits(max_file_bytes=500))
    assert "larger than" in dict(one.refused)["f0"]
    with pytest.raises(ChangesRefused, match="more than 1 paths"):
        read_changes(archive(big, ["f0", "f1"]), ChangeLimits(max_paths=1))


@pytest.mark.parametrize(
    "broken",
    [
        io.BytesIO(b"not a tar at all" * 100),
        io.BytesIO(b""),
    ],
)
def test_an_archive_that_is_not_one_is_refused(broken):
    with pytest.raises(ChangesRefused):
        read_changes(broken, ChangeLimits())


def test_the_output_parts_must_be_plain_files():
    outer = io.BytesIO()
    with tarfile.open(fileobj=outer, mode="w") as tar:
        info = tarfile.TarInfo("wrench-out/listed")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(info)
    outer.seek(0)
    with pytest.raises(ChangesRefused, match="not a plain file"):
        read_changes(outer, ChangeLimits())


def test_inconsistent_lists_are_refused():
    found = archive([], ["a", "b"], deleted=["a"])
    found = io.BytesIO(found.getvalue().replace(b"b\0", b"c\0", 1))
    with pytest.raises(ChangesRefused):
        read_changes(found, ChangeLimits())


def test_the_path_rules_directly():
    assert path_refusal("src/app.py") is None and path_refusal("a\nb") is None
    assert path_refusal("x" * 5000) and path_refusal("a\0b")
    assert link_refusal("a/b/c", "../x") is None and link_refusal("a/b", "../../x")
