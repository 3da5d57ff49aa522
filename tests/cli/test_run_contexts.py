"""`loom run --contexts / --deployable / --broker`: a service of some of the model's contexts, its
own database beside the model, its own build in the cache, and a clear refusal of a mistake."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from loom.build.cache import cached_build_for
from loom.build.sources import read_model
from loom.serving.connections import parse_brokers, refuse_unmatched, set_brokers
from loom.serving.held import Held, OptionError, held_for
from tests.liveserver import free_port, running

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples/shop/shop.loom"
MUTUAL_IDS = ROOT / "tests/e2e/models/mutual_ids.loom"


def loom(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loom.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def _shop(tmp_path: Path) -> Path:
    return Path(shutil.copy(SHOP, tmp_path / "shop.loom"))


def test_run_contexts_serves_only_them_on_their_own_database(tmp_path: Path) -> None:
    # two contexts that share ids and no event: each runs apart with no broker
    model = Path(shutil.copy(MUTUAL_IDS, tmp_path / "pair.loom"))
    owner = ""
    with running(str(model), "--contexts", "Alpha", port=free_port()) as base:
        paths = set(httpx.get(f"{base}/openapi.json").json()["paths"])
        assert "/api/xylos" in paths and not any("yarns" in p for p in paths), sorted(paths)
        r = httpx.post(f"{base}/api/xylos", json={"name": "x"})
        assert r.status_code == 201, r.text
        owner = r.json()["id"]
    assert (tmp_path / "alpha.db").exists() and not (tmp_path / "pair.db").exists()
    with running(str(model), "--contexts", "Beta, Alpha", port=free_port()) as base:
        r = httpx.post(f"{base}/api/yarns", json={"name": "wool", "owner": owner})
        assert r.status_code == 201, r.text
        # its own database: the xylo written by Alpha's service alone is not here
        assert httpx.get(f"{base}/api/xylos/{owner}").status_code == 404
    assert (tmp_path / "alpha-beta.db").exists()


def test_the_build_cache_keys_the_held_contexts(tmp_path: Path) -> None:
    model = _shop(tmp_path)
    sources = read_model([model])
    assert sources is not None
    whole = cached_build_for([model], sources, Held().key())
    orders = cached_build_for([model], sources, Held(("Orders",)).key())
    # the order contexts are named in does not matter; the set does
    both = cached_build_for([model], sources, held_for("Payment,Inventory", None).key())
    assert both == cached_build_for([model], sources, held_for("Inventory,Payment", None).key())
    deployable = cached_build_for([model], sources, Held(deployable="Orders").key())
    assert len({whole.digest, orders.digest, both.digest, deployable.digest}) == 4
    assert whole.digest == cached_build_for([model], sources).digest  # as before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--contexts", "Orders,Paymnt"],
            "no context `Paymnt` (did you mean `Payment`? its contexts: Orders, Inventory, Payment)",
        ),
        (["--contexts", "Orders,,Payment"], "separated by commas"),
        (["--contexts", "Orders", "--deployable", "Orders"], "--contexts or --deployable"),
        (["--deployable", "Ordrs"], "no deployable `Ordrs`"),
        (["--broker", "Bus=localhost"], "expected URL or NAME=URL"),
        (["--broker", "B-s=nats://h:1"], "NAME in NAME=URL"),
        (["--broker", "nats://a:1", "--broker", "nats://b:1"], "default broker (a bare URL) twice"),
        (
            ["--broker", "Nope=nats://127.0.0.1:4222"],
            "error: --broker: the model has no channel source `Nope` (it declares no channel",
        ),
        (
            ["--contexts", "Orders", "--api", "Paymnt=http://127.0.0.1:9"],
            (
                "error: --api: the model has no context `Paymnt` (did you mean `Payment`? its "
                "contexts: Orders, Inventory, Payment)"
            ),
        ),
    ],
)
def test_run_refuses_a_wrong_held_set_or_broker(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = loom("run", str(_shop(tmp_path)), *args, "--port", str(free_port()))
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_broker_spellings_set_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    # each variable set_brokers writes is set here first, so that the test's end restores it
    for variable in ("LOOM_BROKER", "LOOM_BROKER_BUS", "LOOM_BROKER_Bus"):
        monkeypatch.setenv(variable, "nats://old:1")
    monkeypatch.delenv("LOOM_BROKER_BUS")
    set_brokers(["nats://127.0.0.1:4222", "Bus=redis://127.0.0.1:6379/0"])
    assert os.environ["LOOM_BROKER"] == "nats://127.0.0.1:4222"
    assert os.environ["LOOM_BROKER_BUS"] == "redis://127.0.0.1:6379/0"
    assert "LOOM_BROKER_Bus" not in os.environ  # the command line wins over the environment
    # a URL whose query holds `=` is a URL, not NAME=URL
    assert parse_brokers(["nats://h:1/?a=b"]) == {"": "nats://h:1/?a=b"}
    with pytest.raises(OptionError, match="channel source bus twice"):
        parse_brokers(["Bus=nats://a:1", "bus=nats://b:1"])


def test_run_refuses_a_broker_url_with_a_bad_port_at_start_naming_the_setting(
    tmp_path: Path,
) -> None:
    # Orders' events cross to the others: the service needs its broker, and refuses this one
    done = loom(
        "run", str(_shop(tmp_path)), "--contexts", "Orders", "--broker",
        "nats://127.0.0.1:99999", "--port", str(free_port()),
    )  # fmt: skip
    assert done.returncode != 0, done.stdout + done.stderr
    refusal = [line for line in done.stderr.splitlines() if "does not start" in line]
    assert len(refusal) == 1 and "LOOM_BROKER: broker URL" in refusal[0], done.stderr
    assert "port '99999'" in refusal[0]
    assert "Traceback" not in done.stderr and "AssertionError" not in done.stderr, done.stderr


def test_broker_and_api_names_are_matched_to_the_whole_model_in_any_capitals() -> None:
    contexts, sources = ["Orders", "Payment"], ["Bus", "Streams"]
    # what `loom up` gives every deployable: the others' contexts, each nats source
    refuse_unmatched(
        ["nats://h:1", "BUS=nats://h:1", "streams=redis://h:1/0"],
        ["Payment=http://h:1", "ORDERS=http://h:2"],
        contexts,
        sources,
    )
    with pytest.raises(OptionError, match=r"no channel source `Buss` \(did you mean `Bus`\?"):
        refuse_unmatched(["Buss=nats://h:1"], [], contexts, sources)
    with pytest.raises(OptionError, match="its contexts: Orders, Payment"):
        refuse_unmatched([], ["Nope=http://x"], contexts, sources)
