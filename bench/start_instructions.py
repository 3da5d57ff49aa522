"""Benchmark: the CPU instructions of `loom run`'s start to its first 200, against the plain app's.

bench/compiler.py times the start; its ratios move with the machine's load. The instructions a
start executes do not (within about 1 %): here `loom run examples/banking/banking.loom` (its build
reused, as bench/compiler.py's warm start) and the plain FastAPI + SQLAlchemy app of
bench/_start_ref.py each run once under valgrind (`--tool=cachegrind --cache-sim=no`, every
instruction of the process, its threads included), on a fresh SQLite file, from the interpreter's
start to their first 200 (bench/_first_200.py sends the one request and exits). Bytecode caches
on, as a user's install has them, and PYTHONHASHSEED fixed.

What it does not see: time spent waiting, in the kernel, or lost to cache misses. It is the tool
to choose a change with (docs/benchmarks.md, the start); the times confirm it.

    .venv/bin/python bench/start_instructions.py
    .venv/bin/python bench/start_instructions.py --baseline ../main/src     # also loom from there
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BANKING = HERE.parent / "examples/banking/banking.loom"
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
_ANSWER = re.compile(r"status (\d+) rss_kb (\d+) modules (\d+)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(src: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], valgrind: bool) -> tuple[int, str]:
    """One start of the child `args` (with its port added): its instructions (0 without
    valgrind) and what it printed of its answer."""
    prefix = ["valgrind", "--tool=cachegrind", "--cache-sim=no"] if valgrind else []
    prefix += ["--cachegrind-out-file=/dev/null"] if valgrind else []
    child = [sys.executable, str(HERE / "_first_200.py"), args[0], str(_free_port()), *args[1:]]
    done = subprocess.run(
        prefix + child, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    answer = _ANSWER.search(done.stdout)
    if done.returncode != 0 or answer is None or answer.group(1) != "200":
        raise SystemExit(f"{' '.join(child)} did not answer 200:\n{done.stdout}\n{done.stderr}")
    refs = _REFS.search(done.stderr)
    return (int(refs.group(1).replace(",", "")) if refs else 0), answer.group(0)


def measure(folder: Path, name: str, args: list[str], env: dict[str, str]) -> int:
    for db in folder.glob("*.db"):
        db.unlink()
    _run(args, folder, env, valgrind=False)  # writes the build and the bytecode caches
    for db in folder.glob("*.db"):
        db.unlink()
    refs, answer = _run(args, folder, env, valgrind=True)
    print(f"| {name} | {refs / 1e9:.3f} G | {answer} |", flush=True)
    return refs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, metavar="SRC", help="also loom from this src/")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="loom-bench-start-instructions-") as tmp:
        folder = Path(tmp)
        shutil.copy(BANKING, folder / "banking.loom")
        loom = ["loom", "banking.loom", "--database-url", f"sqlite+aiosqlite:///{folder}/bank.db"]
        print("| start to the first 200 | instructions | answer |\n|---|---:|---|")
        ref = measure(
            folder, "plain app", ["ref", f"sqlite+aiosqlite:///{folder}/ref.db"], _env(None)
        )
        runs = [("`loom run`, build reused", None)]
        if args.baseline is not None:
            runs.append((f"`loom run` from {args.baseline}, build reused", args.baseline.resolve()))
        for name, src in runs:
            refs = measure(folder, name, loom, _env(src))
            print(f"|   ratio to the plain app | {refs / ref:.3f} | |")


if __name__ == "__main__":
    main()
