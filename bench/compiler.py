"""Benchmark: the compiler on synthetic models of N aggregates, and the start of `loom run`.

1. `loom check` and `loom build` as the CLI, on a generated model of N aggregates (N = 10, 100,
   1,000, 3,000): wall time of the subprocess, median of 3, its CPU time (user + system, with the
   helper process a large build forks; less noisy than the wall time on a shared machine) and its
   peak RSS (`os.wait4`'s rusage of that one child). Each aggregate has 4 fields, an invariant, two
   guarded operations (one emits an event) and a repository; every ten aggregates share a
   transactional workflow, which makes each aggregate's public `add` a warning
   (`loom.operation-bypasses-workflow`), so the CLI renders one warning per aggregate, two source
   lines each. Two layouts of the same declarations: contexts of 40 aggregates, each over files of
   20, as a project split by its authors would be; and one context in one file, as a model grown
   in one place is (what a context's size costs: lookups per context, the quoting of one large
   file). The children's output is read while they run (a pipe left unread blocks the child once
   it is full: a large model's warnings are hundreds of KB).
2. Start: `loom run examples/banking/banking.loom` on a fresh SQLite file, from launch to its first
   200 (`GET /api/accounts`), with the build cache cold (no `.loom/build` beside the model) and warm,
   against a plain FastAPI + SQLAlchemy app that imports nothing of Loom, served by `uvicorn.run`
   the same way (bench/_start_ref.py), answering `GET /accounts` from a table
   it creates at startup; both with the same pool (15, no overflow). Figures: medians, and the
   ratio; and the idle RSS of each server once it answered its first 200 (VmRSS), and its ratio.
3. With `--baseline SRC` (another checkout's `src/`), instead of 1: each command alternately from
   that tree and from this one (which goes first alternates too), medians of `--repeat` wall and
   CPU times: a before / after comparison in the same minutes, under the same load.

Targets, for both layouts: check + build of 1,000 aggregates < 2 s, of 3,000 < 6 s (`loom build`
runs the check first, so its time is the check + build), growth from 1,000 to 3,000 at most 3.3
times; start ratio <= 1.3 warm, <= 1.5 cold, idle RSS <= 1.2 times the plain app's. The load
average is printed with the figures: the machine is shared.

    .venv/bin/python bench/compiler.py                        # everything
    .venv/bin/python bench/compiler.py --sizes 10 100 --starts 3
    .venv/bin/python bench/compiler.py --sizes --starts 5                # the start only
    .venv/bin/python bench/compiler.py --write-model 3000 /tmp/m3000   # the model only (profiling)
    .venv/bin/python bench/compiler.py --sizes 1000 3000 --layouts one-context --starts 0
    .venv/bin/python bench/compiler.py --sizes 1000 --repeat 5 --starts 0 --baseline ../main/src
                                                 # before / after instead: alternating, medians
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
BANKING = ROOT / "examples/banking/banking.loom"
PER_CONTEXT = 40
PER_FILE = 20
PER_WORKFLOW = 10
SIZES = (10, 100, 1000, 3000)
TARGETS = {1000: 2.0, 3000: 6.0}  # aggregates -> seconds for `loom build` (check + build)
GROWTH_TARGET = 3.3  # `loom build` of 3,000 aggregates against 1,000
# layout -> (aggregates per context, per file); None: all of them, one context in one file
LAYOUTS: dict[str, tuple[int, int] | None] = {
    "contexts": (PER_CONTEXT, PER_FILE),
    "one-context": None,
}
# issue 25 §2: to the first 200, warm and cold, and the idle memory, against the plain app
START_TARGETS = {"warm": 1.3, "cold": 1.5}
RSS_TARGET = 1.2
POOL_SIZE, POOL_OVERFLOW = 15, 0  # `loom run`'s at the start, as bench/_start_ref.py's


def _aggregate(i: int) -> str:
    return f"""
  event Item{i}Closed {{ item: Item{i} id, total: int }}

  aggregate Item{i} {{
    name: string
    quantity: int = 0
    price: decimal = 0
    open: bool = true

    invariant quantity >= 0 message "a quantity is never negative"

    operation add(n: int) when open {{
      precondition n > 0 message "add a positive quantity"
      quantity += n
    }}

    operation close() when open && quantity > 0 {{
      open := false
      emit Item{i}Closed {{ item: id, total: quantity }}
    }}
  }}
  repository Item{i}s for Item{i} {{ }}
"""


def _workflow(first: int, count: int) -> str:
    params = ", ".join(f"a{k}: Item{first + k} id" for k in range(count))
    loads = "".join(
        f"      let x{k} = Item{first + k}s.getById(a{k})\n      x{k}.add(n)\n"
        for k in range(count)
    )
    return f"""
  workflow restock{first} transactional {{
    create({params}, n: int) {{
{loads}    }}
  }}
"""


def synthetic_model(n: int, layout: str = "contexts") -> dict[str, str]:
    """N aggregates as model files, file name -> text, in one of the `LAYOUTS`."""
    per_context, per_file = LAYOUTS[layout] or (max(n, 1), max(n, 1))
    files: dict[str, str] = {}
    for start in range(0, n, per_file):
        ids = range(start, min(start + per_file, n))
        context = f"Area{start // per_context}"
        parts = [_aggregate(i) for i in ids]
        parts += [
            _workflow(i, min(PER_WORKFLOW, ids.stop - i)) for i in ids if i % PER_WORKFLOW == 0
        ]
        files[f"{context.lower()}_{start // per_file % (per_context // per_file)}.loom"] = (
            f"context {context} {{{''.join(parts)}}}\n"
        )
    return files


def write_model(n: int, folder: Path, layout: str = "contexts") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in synthetic_model(n, layout).items():
        (folder / name).write_text(text)
        paths.append(folder / name)
    return paths


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_mb: float
    cpu_seconds: float  # user + system of the child and what it waited for (its forked helper)
    warnings: int = 0  # as its summary line counts them


def _loom() -> list[str]:
    script = Path(sys.executable).parent / "loom"
    return [str(script)] if script.exists() else [sys.executable, "-m", "loom.cli"]


_WARNINGS = re.compile(rb"^(?:\d+ errors?, )?(\d+) warnings?$", re.MULTILINE)


@contextlib.contextmanager
def _drained(stream: IO[bytes]) -> Iterator[list[bytes]]:
    """Read `stream` in a thread while the child runs, into the list given; joined on leaving.

    Reading only once the child has exited deadlocks as soon as it writes more than the pipe holds
    (64 KB): a large model's warnings fill it, the child blocks on its write, and the bench
    waits for it forever."""
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(stream.readline, b"")))
    reader.start()
    try:
        yield chunks
    finally:
        reader.join()
        stream.close()


def run_cli(args: Sequence[str], cwd: Path, src: Path | None = None) -> Run:
    """One `loom …` subprocess: its wall time and its own peak RSS (not the bench's); with `src`,
    the loom of that source tree (its `src` folder first on the path) instead of the installed one."""
    env = None
    if src is not None:
        env = dict(os.environ, PYTHONPATH=str(src))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*_loom(), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    assert proc.stdout is not None
    with _drained(proc.stdout) as chunks:
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    output = b"".join(chunks)
    if proc.returncode != 0:
        raise SystemExit(f"loom {' '.join(args)} failed: {output.decode()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    counted = _WARNINGS.findall(output)
    warnings = int(counted[-1]) if counted else 0
    return Run(seconds, usage.ru_maxrss / 1024, cpu, warnings)  # ru_maxrss: KiB on Linux


def median_of(times: int, args: Sequence[str], cwd: Path) -> Run:
    runs = [run_cli(args, cwd) for _ in range(times)]
    return Run(
        statistics.median(r.seconds for r in runs),
        max(r.peak_rss_mb for r in runs),
        statistics.median(r.cpu_seconds for r in runs),
        runs[0].warnings,
    )


def _growth(builds: dict[int, Run]) -> str:
    if 1000 not in builds or 3000 not in builds:
        return ""
    wall, cpu = (
        getattr(builds[3000], a) / getattr(builds[1000], a) for a in ("seconds", "cpu_seconds")
    )
    verdict = "met" if wall <= GROWTH_TARGET else "NOT met"
    return (
        f"growth 1,000 -> 3,000: {wall:.2f}x wall, {cpu:.2f}x CPU (<= {GROWTH_TARGET}: {verdict})"
    )


def measure_compiler(sizes: Sequence[int], repeat: int, layouts: Sequence[str]) -> None:
    print(f"\n## loom check / loom build (median of {repeat}; peak RSS of the child)\n")
    print(
        "| layout | aggregates | files | lines | warnings | check s | check CPU s | check MB "
        "| build s | build CPU s | build MB | target |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    growth = []
    for layout in layouts:
        builds: dict[int, Run] = {}
        for n in sizes:
            with tempfile.TemporaryDirectory(prefix=f"loom-bench-{n}-") as tmp:
                folder = Path(tmp)
                files = [p.name for p in write_model(n, folder / "model", layout)]
                lines = sum(len((folder / "model" / f).read_text().splitlines()) for f in files)
                model = [f"model/{f}" for f in files]
                check = median_of(repeat, ["check", *model], folder)
                build = builds[n] = median_of(repeat, ["build", *model, "-o", "out"], folder)
            target = TARGETS.get(n)
            verdict = (
                ""
                if target is None
                else f"< {target:g} s: {'met' if build.seconds < target else 'NOT met'}"
            )
            print(
                f"| {layout} | {n:,} | {len(files)} | {lines:,} | {check.warnings:,} "
                f"| {check.seconds:.2f} | {check.cpu_seconds:.2f} | {check.peak_rss_mb:.0f} "
                f"| {build.seconds:.2f} | {build.cpu_seconds:.2f} | {build.peak_rss_mb:.0f} "
                f"| {verdict} |",
                flush=True,
            )
        if grown := _growth(builds):
            growth.append(f"{layout}: {grown}")
    for line in growth:
        print(f"\n{line}")


def compare_compiler(
    sizes: Sequence[int], repeat: int, baseline: Path, layouts: Sequence[str]
) -> None:
    """Before / after in the same run: each command, on the same model, alternately from the
    `baseline` source tree and from this one (which goes first alternates too); medians."""
    here = ROOT / "src"
    print(f"\n## against {baseline} (medians of {repeat}, alternating)\n")
    print(
        "| layout | aggregates | command | before s | before CPU s | after s | after CPU s "
        "| CPU ratio |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for layout, n in ((layout, n) for layout in layouts for n in sizes):
        with tempfile.TemporaryDirectory(prefix=f"loom-bench-{n}-") as tmp:
            folder = Path(tmp)
            model = [f"model/{p.name}" for p in write_model(n, folder / "model", layout)]
            for command, args in (("check", ["check", *model]), ("build", ["build", *model])):
                runs: dict[Path, list[Run]] = {baseline: [], here: []}
                for i in range(repeat):
                    for src in (baseline, here) if i % 2 == 0 else (here, baseline):
                        out = ["-o", f"out-{'after' if src == here else 'before'}-{i}"]
                        runs[src].append(
                            run_cli([*args, *out] if command == "build" else args, folder, src)
                        )
                before, after = (
                    (
                        statistics.median(r.seconds for r in runs[s]),
                        statistics.median(r.cpu_seconds for r in runs[s]),
                    )
                    for s in (baseline, here)
                )
                print(
                    f"| {layout} | {n:,} | {command} | {before[0]:.2f} | {before[1]:.2f} "
                    f"| {after[0]:.2f} | {after[1]:.2f} | {after[1] / before[1]:.2f} |",
                    flush=True,
                )


# ---- start time -----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _poll(url: str, proc: subprocess.Popen[bytes], start: float, timeout: float) -> float | None:
    """Seconds from `start` to the first 200 from `url`, polling every 5 ms; None if the server
    exited or the time ran out first."""
    parts = urlsplit(url)
    while time.perf_counter() - start < timeout and proc.poll() is None:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=1)
        try:
            conn.request("GET", parts.path)
            if conn.getresponse().status == 200:
                return time.perf_counter() - start
        except OSError:
            pass  # not listening yet
        finally:
            conn.close()
        time.sleep(0.005)
    return None


@dataclass(frozen=True)
class Start:
    seconds: float  # launch to the first 200
    rss_mb: float  # the server's resident memory right after it, idle


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024  # kB
    raise SystemExit(f"no VmRSS for process {pid}")


def time_to_200(args: Sequence[str], cwd: Path, port: int, path: str) -> Start:
    """Launch the server `args`, time it to its first 200 on `path` and read its RSS then; its
    output goes to cwd/server.log, whose end is shown if it never answers."""
    log = cwd / "server.log"
    with log.open("wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(list(args), cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            seconds = _poll(f"http://127.0.0.1:{port}{path}", proc, start, 60)
            rss = _rss_mb(proc.pid) if seconds is not None else 0.0
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if seconds is None:
        raise SystemExit(
            f"{' '.join(args)} never answered 200 on {path}:\n{log.read_text()[-3000:]}"
        )
    return Start(seconds, rss)


def start_loom(folder: Path, cold: bool) -> Start:
    """`loom run` of the banking example copied into `folder`, on a fresh SQLite file, with the
    reference's pool."""
    model = folder / "banking.loom"
    if not model.exists():
        shutil.copy(BANKING, model)
    if cold:
        shutil.rmtree(folder / ".loom", ignore_errors=True)
    db = folder / "bank.db"
    db.unlink(missing_ok=True)
    port = _free_port()
    args = [*_loom(), "run", str(model), "--port", str(port)]
    args += ["--database-url", f"sqlite+aiosqlite:///{db}"]
    args += ["--pool-size", str(POOL_SIZE), "--pool-overflow", str(POOL_OVERFLOW)]
    return time_to_200(args, folder, port, "/api/accounts")


def start_reference(folder: Path) -> Start:
    """The plain app (bench/_start_ref.py), on a fresh SQLite file."""
    db = folder / "reference.db"
    db.unlink(missing_ok=True)
    port = _free_port()
    args = [sys.executable, str(Path(__file__).resolve().parent / "_start_ref.py"), str(port)]
    args.append(f"sqlite+aiosqlite:///{db}")
    return time_to_200(args, folder, port, "/accounts")


def measure_start(rounds: int) -> None:
    print(f"\n## start to the first 200 (median of {rounds}, rounds alternate)\n")
    times: dict[str, list[Start]] = {"cold": [], "warm": [], "reference": []}
    with tempfile.TemporaryDirectory(prefix="loom-bench-start-") as tmp:
        folder = Path(tmp)
        start_loom(folder, cold=True)  # the warm runs reuse this build
        start_reference(folder)
        for _ in range(rounds):
            times["warm"].append(start_loom(folder, cold=False))
            times["reference"].append(start_reference(folder))
            times["cold"].append(start_loom(folder, cold=True))

    def medians(kind: str) -> tuple[float, float]:
        return (
            statistics.median(r.seconds for r in times[kind]),
            statistics.median(r.rss_mb for r in times[kind]),
        )

    ref, ref_mb = medians("reference")
    print("| app | s | ratio to the reference | target | idle RSS MB | RSS ratio |")
    print("|---|---:|---:|---|---:|---:|")
    print(
        f"| plain FastAPI + SQLAlchemy app (no Loom), `uvicorn.run` | {ref:.2f} | 1.00 | "
        f"| {ref_mb:.1f} | 1.00 |"
    )
    for kind in ("warm", "cold"):
        t, mb = medians(kind)
        target = START_TARGETS[kind]
        verdict = f"<= {target:g}: {'met' if t / ref <= target else 'NOT met'}"
        verdict += f"; RSS <= {RSS_TARGET:g}: {'met' if mb / ref_mb <= RSS_TARGET else 'NOT met'}"
        print(
            f"| `loom run` banking, build cache {kind} | {t:.2f} | {t / ref:.2f} | {verdict} "
            f"| {mb:.1f} | {mb / ref_mb:.2f} |"
        )


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min) on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument(
        "--layouts", nargs="*", choices=list(LAYOUTS), default=list(LAYOUTS), help="model layouts"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per figure (the median is kept)"
    )
    parser.add_argument("--starts", type=int, default=5, help="start rounds (the median is kept)")
    parser.add_argument(
        "--write-model", nargs=2, metavar=("N", "FOLDER"), help="in the first of --layouts"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="SRC",
        help="instead, time each command against loom from this source tree (its src/ folder), "
        "alternating, medians of --repeat",
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE if set (every run compiles loom's modules again)",
    )
    args = parser.parse_args()
    if args.write_model:
        n, folder = int(args.write_model[0]), Path(args.write_model[1])
        for path in write_model(n, folder, args.layouts[0]):
            print(path)
        return
    if not args.no_bytecode_cache:
        # A user's Python keeps its bytecode (`__pycache__`); a sandbox may turn that off, and then
        # every run compiles loom's modules (editable, so not precompiled) again: some 0.2 s.
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    cache = "off" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    print(f"bytecode cache: {cache}; load average before: {load_average()}")
    if args.sizes and args.baseline:
        compare_compiler(args.sizes, args.repeat, args.baseline.resolve(), args.layouts)
    elif args.sizes:
        measure_compiler(args.sizes, args.repeat, args.layouts)
    if args.starts:
        measure_start(args.starts)
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
