"""`supervisor doctor` and `supervisor bridge ...` against a private tmux server and a real home."""

from __future__ import annotations

import json
from pathlib import Path

from supervisor.journal import Journal
from supervisor.surfaces.tmux import TmuxSurface
from tests.conftest import invoke_cli
from tests.helpers import retry_until


def _checks(r) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {c["name"]: c for c in json.loads(r.stdout)}


def test_doctor_before_and_after_a_tmux_server(tmux_socket: str, sv_home: Path) -> None:
    r = invoke_cli("doctor", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    c = _checks(r)
    assert c["tmux"]["status"] == "ok" and c["tmux"]["detail"].startswith("tmux ")
    assert c["tmux server"]["status"] == "warn" and "no tmux server" in c["tmux server"]["detail"]
    assert c["control mode"]["status"] == "warn"
    assert c["home"]["status"] == "ok" and c["policy"]["status"] == "ok" and c["warehouse"]["status"] == "ok"
    surface = TmuxSurface(tmux_socket)
    surface.new_session("one", ["sleep", "60"])
    c = _checks(invoke_cli("doctor", "--json"))
    assert c["tmux server"]["status"] == "ok" and "1 session(s)" in c["tmux server"]["detail"]
    assert c["control mode"]["status"] == "ok"
    # a run whose supervisor is gone is pointed out with the command that continues it
    with Journal(sv_home / "journals" / "run_lost1.jsonl", "run_lost1") as j:
        j.append("run_started", {"pane_id": "%0", "socket": tmux_socket})
    r = invoke_cli("doctor")
    assert r.returncode == 0
    assert "warn  runs" in r.stdout and "run_lost1" in r.stdout and "supervisor runs resume RUN_ID" in r.stdout
    r = invoke_cli("bridge", "doctor", "--json")
    assert _checks(r)["control mode"]["status"] == "ok"


def test_doctor_fails_on_an_unusable_home(tmp_path: Path, tmux_socket: str) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    r = invoke_cli("--home", str(not_a_folder / "home"), "doctor")
    assert r.returncode == 1
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("FAIL"))
    assert "home" in line and "writable folder" in line
    bad = tmp_path / "bad.duckdb"
    bad.write_text("not a database")
    r = invoke_cli("--home", str(tmp_path / "h"), "--warehouse", str(bad), "doctor", "--json")
    assert r.returncode == 1 and _checks(r)["warehouse"]["status"] == "fail"


def test_bridge_list_type_keys_read_id(tmux_socket: str, sv_home: Path) -> None:
    surface = TmuxSurface(tmux_socket)
    info = surface.new_session("work", ["bash", "--norc", "--noprofile"], width=100, height=20)
    rows = json.loads(invoke_cli("bridge", "list", "--json").stdout)
    assert [(p["pane_id"], p["session"]) for p in rows] == [(info.pane_id, "work")]
    assert invoke_cli("bridge", "type", info.pane_id, "echo bridged-$((6*7))").returncode == 0
    assert invoke_cli("bridge", "keys", "work:0.0", "Enter").returncode == 0
    out = retry_until(lambda: (r := invoke_cli("bridge", "read", info.pane_id)).stdout.count("bridged-42") and r.stdout,
                      10, message="the typed command's output")
    assert "echo bridged-$((6*7))" in out
    assert invoke_cli("bridge", "read", info.pane_id, "3").stdout.count("\n") <= 3
    assert invoke_cli("bridge", "id", env={"TMUX_PANE": info.pane_id}).stdout.strip() == info.pane_id
    r = invoke_cli("bridge", "id", env={"TMUX_PANE": ""})
    assert r.returncode == 1 and "not inside tmux" in r.stderr
    r = invoke_cli("bridge", "keys", "%99", "Enter")
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "not found" in r.stderr
