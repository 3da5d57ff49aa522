"""`loom up` takes the `loom run` options that are the same for every deployable (`--extern`, the
token options, the limits, the pool, `--migrate`) and gives each deployable the same values; a bad
one is refused once, in one `error:` line with exit 2, before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from loom.cli.output import Color, colour_variables
from loom.cli.up import Unit
from loom.runtime.values.log_text import wants_colour
from loom.serving.settings import ServiceSettings
from tests.cli.test_up import _wait_for, loom_up
from tests.liveserver import free_ports

# two deployables, each with an extern operation: one --extern module implements both
DELIVERY = """
context Kitchen {
  aggregate Ticket with crudish {
    dish: string
    stamped: string = ""
    public extern operation stamp(by: string)
  }
  repository Tickets for Ticket { }
}

context Courier {
  aggregate Run with crudish {
    address: string
    stamped: string = ""
    public extern operation stamp(by: string)
  }
  repository Runs for Run { }
}
"""
SPLIT = """
deployable Kitchens { contexts: Kitchen }
deployable Couriers { contexts: Courier }
"""
EXTERNS = """
class TicketExterns:
    def stamp(self, ticket, by: str) -> None:
        ticket.stamped = f"kitchen:{by}"


class RunExterns:
    def stamp(self, run, by: str) -> None:
        run.stamped = f"courier:{by}"
"""


def _model(tmp_path: Path) -> Path:
    source = tmp_path / "src" / "delivery.loom"
    source.parent.mkdir()
    source.write_text(DELIVERY)
    (tmp_path / "delivery_externs.py").write_text(EXTERNS)  # beside the model loom up copies
    return source


def test_one_extern_module_serves_every_deployable(tmp_path: Path) -> None:
    port = free_ports(4)
    up = loom_up(tmp_path, port, _model(tmp_path), SPLIT, "--extern", "delivery_externs")
    with up as (proc, log):
        _wait_for(log, proc, "Ctrl-C stops them all.")
        kitchens, couriers = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"
        stamped = {}
        for base, plural, fields in (
            (kitchens, "tickets", {"dish": "soup"}),
            (couriers, "runs", {"address": "Main St 1"}),
        ):
            r = httpx.post(f"{base}/api/{plural}", json=fields)
            assert r.status_code == 201, r.text
            url = f"{base}/api/{plural}/{r.json()['id']}"
            r = httpx.post(f"{url}/stamp", json={"by": "ann"})
            assert r.status_code in (200, 204), r.text
            stamped[plural] = httpx.get(url).json()["stamped"]
        print(f"stamped through the one extern module: {stamped}")
        assert stamped == {"tickets": "kitchen:ann", "runs": "courier:ann"}
        proc.terminate()
        assert proc.wait(timeout=60) == 0, log.read_text()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--extern", "no_such_module_xyz"],
            "error: cannot import the extern module 'no_such_module_xyz'",
        ),
        (["--max-body-bytes", "-1"], "error: LOOM_MAX_BODY_BYTES must be"),
        (["--pool-size", "0"], "error: LOOM_POOL_SIZE must be a whole number >= 1, not '0'"),
        (["--redelivery-wait", "0"], "error: LOOM_REDELIVERY_WAIT must be a number of seconds"),
        (["--flow-peer-timeout", "0"], "error: LOOM_FLOW_PEER_TIMEOUT must be a number of sec"),
        (["--log-format", "xml"], "error: LOOM_LOG_FORMAT must be json or text, not 'xml'"),
        (["--jwt-secret", "short"], "error: "),
        (["--jwt-secret", "s" * 32, "--jwt-public-key", "k.pem"], "error: give --jwt-secret"),
    ],
)
def test_a_bad_value_is_refused_before_anything_starts(
    tmp_path: Path, args: list[str], says: str
) -> None:
    model = tmp_path / "delivery.loom"
    model.write_text(DELIVERY + SPLIT)
    (tmp_path / "delivery_externs.py").write_text(EXTERNS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
    command = [sys.executable, "-m", "loom.cli", "up", str(model), "--port", str(free_ports(4))]
    done = subprocess.run(
        [*command, "--extern", "delivery_externs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    lines = done.stderr.strip().splitlines()
    print(f"{' '.join(args)[:60]} -> exit {done.returncode}: {lines}")
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith(says), done.stderr
    assert "Traceback" not in done.stderr
    assert not done.stdout.strip() and not list(tmp_path.glob("*.db"))  # nothing started


def test_the_options_go_to_each_deployable_by_environment_its_port_and_database_by_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # every option, --migrate too, is a variable each child `loom run` inherits (a secret given
    # to `loom up` does not show in `ps`); no child's command line carries them
    for name in [n for n in os.environ if n.startswith("LOOM_")]:
        monkeypatch.delenv(name)
    settings = ServiceSettings(migrate=True, jwt_secret="s" * 32, redelivery_wait=4.0)
    assert settings.variables() == {
        "LOOM_JWT_SECRET": "s" * 32,
        "LOOM_REDELIVERY_WAIT": "4",
        "LOOM_MIGRATE": "true",
    }
    files = [Path("shop.loom")]
    for unit in (Unit("Orders", ("Orders",), 8000, "sqlite://"), Unit(None, ("A",), 8001, "")):
        command = unit.command(files, [], [unit])
        assert "--migrate" not in command and "s" * 32 not in command, command
        # where `loom up` says each unit runs, whatever LOOM_PORT / LOOM_DATABASE_URL it inherits
        assert command[command.index("--port") + 1] == str(unit.port), command
        assert command[command.index("--database-url") + 1] == unit.database_url, command


def test_loom_up_tells_its_children_to_colour_when_it_writes_to_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # each child writes to a pipe; what `loom up` writes to decides (`--color`, NO_COLOR), and
    # the child's text log lines read it back (`loom.runtime.values.log_text.wants_colour`)
    monkeypatch.delenv("NO_COLOR", raising=False)
    leader, follower = os.openpty()
    with open(leader, "rb"), open(follower, "w") as terminal, open(tmp_path / "f", "w") as file:
        assert colour_variables(Color.auto, terminal) == {"FORCE_COLOR": "1", "NO_COLOR": ""}
        assert colour_variables(Color.auto, file) == {}
        assert colour_variables(Color.never, terminal) == {"NO_COLOR": "1"}
        assert colour_variables(Color.always, file) == {"FORCE_COLOR": "1", "NO_COLOR": ""}
        monkeypatch.setenv("NO_COLOR", "1")
        assert colour_variables(Color.auto, terminal) == {}
        for color, out, coloured in [
            (Color.auto, file, False),
            (Color.always, file, True),
            (Color.never, terminal, False),
        ]:
            with monkeypatch.context() as child:
                for name, value in colour_variables(color, out).items():
                    child.setenv(name, value)
                assert wants_colour(file) is coloured, color  # the child's pipe
