"""Notification channels as plugins (entry points in `paneward.notifiers`): the example ntfy plugin
against a loopback HTTP server, a third-party plugin installed as a distribution on sys.path, and a
broken one, through `supervisor doctor` and a workflow pause."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from supervisor.journal import Journal
from supervisor.plugins import NOTIFIER_GROUP, load_notifier_plugins
from supervisor.policy import Policy
from supervisor.settings import Settings
from supervisor.workflow.controller import WorkflowController
from supervisor.workflow.spec import parse_spec
from tests.conftest import invoke_cli
from tests.helpers import retry_until
from tests.workflow.e2e_helpers import SPEC3


class NtfyServer:
    """A real loopback HTTP server that records what an ntfy server would receive."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.posts.append({"path": self.path, "headers": dict(self.headers.items()),
                                    "body": body.decode()})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/agents"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def ntfy() -> Iterator[NtfyServer]:
    s = NtfyServer()
    yield s
    s.server.shutdown()
    s.server.server_close()


def install_plugin(site: Path, name: str, module_source: str, target: str) -> None:
    """A distribution with a `paneward.notifiers` entry point, as `pip install` would lay it out."""
    (site / f"{name}.py").write_text(module_source)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{NOTIFIER_GROUP}]\n{name} = {target}\n")


CHAT_PLUGIN = '''
import json, os

class ChatNotifier:
    channel = "chat"

    def __init__(self, path):
        self.path = path

    def send(self, n):
        with open(self.path, "a") as fh:
            fh.write(json.dumps({"kind": n.kind, "title": n.title, "next": n.next_action}) + "\\n")
        return True

def make(settings):
    path = os.environ.get("CHAT_PLUGIN_FILE")
    return ChatNotifier(path) if path else None
'''


def test_ntfy_example_plugin_through_doctor(ntfy: NtfyServer, sv_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = invoke_cli("doctor", "--json")
    check = {c["name"]: c for c in json.loads(r.stdout)}["notifications"]
    assert check["status"] == "ok" and "plugins not configured: ntfy" in check["detail"]
    monkeypatch.setenv("SUPERVISOR_NTFY_URL", ntfy.url)
    monkeypatch.setenv("SUPERVISOR_NTFY_TOKEN", "tk_secret")
    r = invoke_cli("doctor", "--send-test")
    assert "channels: jsonl, ntfy" in r.stdout and "ok    send ntfy" in r.stdout, r.stdout
    [post] = ntfy.posts
    assert post["path"] == "/agents" and post["headers"]["Title"] == "paneward test notification"
    assert post["headers"]["Authorization"] == "Bearer tk_secret" and post["headers"]["Priority"] == "low"
    assert "checks that this channel reaches you" in post["body"]
    monkeypatch.setenv("SUPERVISOR_NTFY_URL", "http://127.0.0.1:9/nothing-listens")
    r = invoke_cli("doctor", "--send-test")
    assert r.returncode == 1 and "FAIL  send ntfy" in r.stdout


def test_third_party_and_broken_plugins(tmp_path: Path, sv_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_plugin(site, "paneward_chat", CHAT_PLUGIN, "paneward_chat:make")
    install_plugin(site, "paneward_broken", "raise ImportError('needs slack_sdk')\n", "paneward_broken:make")
    monkeypatch.syspath_prepend(str(site))
    out = tmp_path / "chat.jsonl"
    monkeypatch.setenv("CHAT_PLUGIN_FILE", str(out))
    channels, statuses = load_notifier_plugins(Settings(home=sv_home))
    assert [c.channel for c in channels] == ["chat"]
    assert {s.name: bool(s.problem) for s in statuses} == {"ntfy": False, "paneward_broken": True,
                                                          "paneward_chat": False}
    r = invoke_cli("doctor")
    assert r.returncode == 1
    line = next(ln for ln in r.stdout.splitlines() if "notifications" in ln)
    assert line.startswith("FAIL") and "plugin paneward_broken" in line and "needs slack_sdk" in line
    # a workflow pause reaches the plugin channel with the other channels, and is journaled per channel
    settings = Settings(home=sv_home).ensure()
    j = Journal(settings.journal_path("run_plug"), "run_plug")
    ctl = WorkflowController(parse_spec(SPEC3), j, None, Policy(), settings, "run_plug")
    try:
        ctl.on_output("<checkpoint>\ncheckpoint_seq: 1\nstatus: blocked\ncurrent_node: write\n"
                      "needs: [the deploy key]\n</checkpoint>")
        got = retry_until(lambda: out.exists() and [json.loads(x) for x in out.read_text().splitlines()], 20)
        assert got[0]["kind"] == "escalation" and "the deploy key" in got[0]["title"]
        assert "supervisor runs resume run_plug" in got[0]["next"]
        chans = {e.payload["channel"] for e in j.events() if e.kind == "notification"}
        assert chans == {"jsonl", "chat"}
    finally:
        ctl.close()
        j.close()
