"""Killing a shell and what its timed-out command started: a bash script reading /proc.

The script uses builtins only (no `$(...)`, no external programs), so it needs no process
beyond its own and still works when a fork bomb has used up the container's pids limit. It
kills the shell and every process in its scope that started with or after the current
command (the shell writes the command's start time to a file), so background servers started
by earlier commands survive a later command's timeout. The scope is the whole pid namespace in
a container, where only the sandbox lives, or the shell's session on a host; descendants of
the shell always count. Ancestry alone would miss a fork bomb's orphans, which init adopts.
Processes are stopped before they are killed so they cannot fork replacements, and the scan
repeats until nothing is left.
"""

from __future__ import annotations

from typing import Literal

Scope = Literal["namespace", "session"]

# Arguments: the shell's pid, the file holding /proc/uptime as of the command's start (when it
# is unreadable, every process in scope goes), and the scope. /proc/<pid>/stat reads
# "pid (comm) state ppid pgrp session ..."; comm may hold spaces, so the fields are taken after
# the last ") ": index 0 is the state, 1 the ppid, 3 the session, 19 the start time in clock
# ticks since boot (USER_HZ is 100 on Linux): the clock of /proc/uptime, in centiseconds.
KILL_SCRIPT = r"""
root=$1 scope=$3 threshold=0
if read -r since _ 2>/dev/null <"$2" && [[ $since =~ ^[0-9]+\.[0-9][0-9]$ ]]; then
  # Both clocks truncate to whole ticks, so a later start never has a smaller count.
  threshold=$((10#${since/./}))
fi
for _round in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  unset kids started session
  declare -A kids=() started=() session=()
  set +f
  stats=(/proc/[0-9]*/stat)
  # No globbing while splitting stat lines: a comm such as "(*)" must stay text.
  set -f
  for stat in "${stats[@]}"; do
    read -r line 2>/dev/null <"$stat" || continue
    fields=(${line##*) })
    # Zombies are already dead; their parent (or init) reaps them.
    [[ ${fields[0]} == [ZX] ]] && continue
    pid=${stat#/proc/}
    pid=${pid%/stat}
    kids[${fields[1]}]+=" $pid"
    started[$pid]=${fields[19]}
    session[$pid]=${fields[3]}
  done
  declare -A victims=()
  [[ -n ${started[$root]} ]] && victims[$root]=1
  for pid in "${!started[@]}"; do
    ((pid == $$ || pid == 1 || started[$pid] < threshold)) && continue
    if [[ $scope == namespace || ${session[$pid]} == "${session[$root]:-none}" ]]; then
      victims[$pid]=1
    fi
  done
  queue=("$root")
  while ((${#queue[@]})); do
    parent=${queue[-1]}
    unset 'queue[-1]'
    for child in ${kids[$parent]}; do
      queue+=("$child")
      ((started[$child] >= threshold)) && victims[$child]=1
    done
  done
  ((${#victims[@]})) || exit 0
  kill -STOP "${!victims[@]}" 2>/dev/null
  kill -KILL "${!victims[@]}" 2>/dev/null
  unset victims
done
exit 1
"""


def kill_command(pid: int, since_file: str, scope: Scope) -> list[str]:
    """The argument list that runs KILL_SCRIPT on the shell `pid`."""
    return ["bash", "-c", KILL_SCRIPT, "wrench-kill", str(pid), since_file, scope]
