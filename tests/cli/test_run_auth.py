"""`loom run --jwt-secret`: a live server verifies bearer tokens; without a key, requests are
anonymous; a secret too short to be safe stops the start with a sentence."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import jwt

from tests.liveserver import free_port, refused_start, running

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests/e2e/models/principal.loom"
SECRET = "a-cli-secret-that-is-long-enough-for-hs256"


def _copy(tmp_path: Path) -> Path:
    model = tmp_path / "desk.loom"
    model.write_text(MODEL.read_text())
    return model


def _bearer(secret: str, **claims: object) -> dict[str, str]:
    body = {"sub": "ann", "exp": int(time.time()) + 600, **claims}
    return {"Authorization": "Bearer " + jwt.encode(body, secret, algorithm="HS256")}


def test_run_with_a_jwt_secret(tmp_path: Path) -> None:
    model = _copy(tmp_path)
    with running(str(model), "--jwt-secret", SECRET, port=free_port()) as base:
        t = httpx.post(f"{base}/api/tickets", json={}).json()["id"]
        close = f"{base}/api/tickets/{t}/close"
        assert httpx.post(close, json={"by": "x"}).status_code == 403
        bad = httpx.post(close, json={"by": "x"}, headers=_bearer("x" * 40, roles=["admin"]))
        assert bad.status_code == 401 and bad.headers["www-authenticate"].startswith("Bearer")
        ok = httpx.post(close, json={"by": "x"}, headers=_bearer(SECRET, roles=["admin"]))
        assert ok.status_code == 204, ok.text
        # An anonymous caller, and a token without `sub`, match no id ("" included).
        assign = f"{base}/api/tickets/{t}/assign"
        assert httpx.post(assign, json={"to": ""}).status_code == 403
        nameless = {"exp": int(time.time()) + 600}
        headers = {"Authorization": "Bearer " + jwt.encode(nameless, SECRET, algorithm="HS256")}
        assert httpx.post(assign, json={"to": ""}, headers=headers).status_code == 403
        mine = httpx.post(assign, json={"to": "ann"}, headers=_bearer(SECRET))
        assert mine.status_code == 204, mine.text
        # A `roles` claim that is one string is refused, not read as a role.
        one = httpx.post(close, json={"by": "x"}, headers=_bearer(SECRET, roles="admin"))
        assert one.status_code == 401 and "list of strings" in one.json()["detail"], one.text


def test_run_refuses_a_short_secret(tmp_path: Path) -> None:
    stderr = refused_start(str(_copy(tmp_path)), "--jwt-secret", "short", drop_env="LOOM_JWT_")
    assert "at least 32" in stderr, stderr
