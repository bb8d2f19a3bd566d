"""The changes coming out, first step: a script run in the sandbox after the agent is done.

It lists the paths the work tree changed against the commit the job started from (tracked
paths that differ, and new files git does not ignore), splits them into present and deleted,
and archives the present ones, links as links, into OUT_DIR. It runs as the sandbox user in a
fresh process, never in the agent's shell, and its output is only ever read as data, once every
process in the sandbox has been stopped (see `sandbox.boundary.changes`). Whatever it or the
agent's leftovers write there can be wrong; it cannot be dangerous.
"""

from __future__ import annotations

from sandbox.base import WORKSPACE

OUT_DIR = ".git/wrench-out"
"""Where the script writes, relative to the workspace: `listed`, `present`, `deleted`
(NUL-separated paths), `files.tar` and `errors`."""
COLLECT_TIMEOUT_S = 300

# $1: the commit the work started from, or "" when there is none (a repository without
# commits). git runs with no user or system configuration and no fsmonitor, hooks or
# untracked cache: the agent may have written any of them. tar reads the list verbatim
# (a name starting with `-` is a name) and archives links as links.
COLLECT_SCRIPT = r"""
set -u
cd "$2" || exit 3
out=$3
rm -rf -- "$out" && mkdir -p -- "$out" || exit 4
exec 2>"$out/errors"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=/nonexistent GIT_OPTIONAL_LOCKS=0
g() {
  git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.untrackedCache=false \
      -c diff.ignoreSubmodules=all -c core.quotePath=false "$@"
}
if [ -n "$1" ]; then
  { g diff --name-only -z --no-renames "$1" -- && g ls-files -z --others --exclude-standard; } \
    >"$out/listed" || exit 5
else
  g ls-files -z --cached --others --exclude-standard >"$out/listed" || exit 5
fi
: >"$out/present"
: >"$out/deleted"
while IFS= read -r -d '' path; do
  if [ "${path%/}" != "$path" ]; then
    continue  # a nested repository, which git lists as a directory: never taken
  elif [ -e "$path" ] || [ -L "$path" ]; then
    printf '%s\0' "$path" >>"$out/present"
  else
    printf '%s\0' "$path" >>"$out/deleted"
  fi
done <"$out/listed"
tar --create --file="$out/files.tar" --null --verbatim-files-from --no-recursion \
    --ignore-failed-read --files-from="$out/present" || exit 6
"""

FAILURES = {
    3: "the workspace is gone",
    4: f"the sandbox could not write {OUT_DIR}",
    5: "git could not list the changes (the workspace's .git may be broken)",
    6: "tar could not archive the changes",
    124: f"listing and archiving the changes took longer than {COLLECT_TIMEOUT_S} s",
}
"""What the script's exit statuses mean, for the message that says why nothing came out."""


def collect_command(base: str | None, workspace: str = WORKSPACE) -> list[str]:
    """The argument list that runs the script over `workspace` against commit `base`."""
    out = f"{workspace}/{OUT_DIR}"
    timeout = ["timeout", str(COLLECT_TIMEOUT_S)]
    return [*timeout, "bash", "-c", COLLECT_SCRIPT, "wrench-collect", base or "", workspace, out]
