"""`python -m loom.serving.with_parent PID COMMAND [ARG...]`: become COMMAND (same process, by `exec`),
set to receive SIGTERM when its parent dies, and exit at once if the parent (PID) is already
gone. `loom up` starts its services and its NATS server through it, so that a `loom up` killed
with SIGKILL, which cannot stop them itself, does not leave them running and holding their ports.

Linux only (`prctl(PR_SET_PDEATHSIG)`, kept across `exec`); elsewhere the command just runs. It
is not `Popen(preexec_fn=…)`: that is unsafe in a process with threads, as `loom up` is (one
thread forwards each child's output)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: python -m loom.serving.with_parent PID COMMAND [ARG...]", file=sys.stderr)
        return 2
    parent = int(argv[0])
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            print(
                f"loom.serving.with_parent: prctl failed: {os.strerror(ctypes.get_errno())}",
                file=sys.stderr,
            )
            return 1
        if os.getppid() != parent:  # it died before the line above: nobody would signal us
            return 1
    try:
        os.execvp(argv[1], argv[1:])
    except OSError as exc:
        print(f"loom.serving.with_parent: cannot run {argv[1]}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
