"""Secrets printed in a live pane never reach storage: 35 credential formats, printed by a
program in a real tmux pane 60 columns wide (so long tokens wrap over rows), re-wrapped by the
program itself with indentation and box borders (as agents do), and private-key bodies whose
``BEGIN`` line has scrolled away, all supervised by the real runner. Afterwards no 12-character
piece of any secret is in the journal, any warehouse table, the warehouse file's bytes, the
notifications file, an export or a report; the non-secret markers printed beside them are
(so the checks look where the screens went)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from supervisor.cli import main
from supervisor.warehouse import open_warehouse, sync
from tests.helpers import retry_until
from tests.live_helpers import LiveHarness, events
from tests.reliability.secret_formats import Sample, key_body, leaks, samples

WIDTH, HEIGHT = 60, 30


def _boxed(s: Sample, width: int = 36) -> list[str]:
    """The line re-wrapped by the program itself: indented continuation rows inside a box."""
    parts = [s.line[i:i + width] for i in range(0, len(s.line), width)]
    return [f"  │ {p:<{width}} │" for p in parts]


def _groups() -> list[list[str]]:
    smp = samples()
    groups = [[s.line for s in smp[i:i + 7]] for i in range(0, len(smp), 7)]  # the pane wraps these
    boxed = [row for s in smp[::3] for row in _boxed(s)]
    groups += [boxed[i:i + 24] for i in range(0, len(boxed), 24)]
    begin, end, body = key_body()
    groups.append([begin, *body, end])  # 42 rows in a 30-row pane: BEGIN scrolls off
    _b, _e, body2 = key_body(seed=16, lines=20, width=70)
    groups.append(["(openssh key, header above the screen)", *body2, "-----END OPENSSH PRIVATE KEY-----"])
    return groups


def _script(tmp: Path, groups: list[list[str]]) -> Path:
    lines = ["set -e"]
    for k, rows in enumerate(groups):
        data = tmp / f"group{k}.txt"
        data.write_text("\n".join(rows) + f"\nGROUP {k} DONE\n")
        flag = tmp / f"flag{k}"
        lines += ["clear", f"cat {shlex.quote(str(data))}",
                  f"while [ ! -e {shlex.quote(str(flag))} ]; do sleep 0.05; done"]
    lines += ["clear", "echo ALL DONE", "exec sleep 600"]
    path = tmp / "printer.sh"
    path.write_text("\n".join(lines) + "\n")
    return path


def _screens(runner: object) -> str:
    return "\n".join(e.payload.get("screen", {}).get("text", "") for e in events(runner, "observation"))  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_secrets_in_a_live_pane_never_reach_storage(tmux_socket: str, sv_home: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    groups = _groups()
    script = _script(tmp_path, groups)
    h = LiveHarness(tmux_socket, sv_home)
    pane = h.surface.new_session("printer", ["bash", str(script)], width=WIDTH, height=HEIGHT, cwd=str(tmp_path))
    try:
        (runner,) = h.supervise(pane)
        for k in range(len(groups)):
            retry_until(lambda k=k: f"GROUP {k} DONE" in _screens(runner), 60,
                        message=f"an observation of group {k}")
            (tmp_path / f"flag{k}").touch()
        retry_until(lambda: "ALL DONE" in _screens(runner), 60, message="the last screen")
    finally:
        h.stop()
    sync(h.settings)

    secrets = [(s.name, s.secret) for s in samples()]
    secrets += [("key_body", row) for row in key_body()[2]] + [("openssh_body", row)
                                                               for row in key_body(seed=16, lines=20, width=70)[2]]
    assert len(samples()) >= 30

    places: dict[str, str] = {}
    for path in sorted(h.settings.journals_dir.glob("*.jsonl")):
        places[f"journal {path.name}"] = path.read_bytes().decode("utf-8", "replace")
    with open_warehouse(h.settings.warehouse, read_only=True) as wh:
        cols = wh.sql("SELECT table_name, column_name FROM information_schema.columns "
                      "WHERE table_schema = 'main' AND data_type IN ('VARCHAR', 'JSON')")
        for table, column in cols.iter_rows():
            values = wh.sql(f'SELECT CAST("{column}" AS VARCHAR) AS v FROM "{table}" WHERE "{column}" IS NOT NULL')
            places[f"warehouse {table}.{column}"] = "\n".join(values["v"].to_list())
    for f in h.settings.warehouse.parent.glob(h.settings.warehouse.name + "*"):
        places[f"file {f.name}"] = f.read_bytes().decode("latin-1")
    if h.settings.notifications_path.exists():
        places["notifications"] = h.settings.notifications_path.read_text()

    monkeypatch.setenv("SUPERVISOR_HOME", str(sv_home))
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    for argv in (["runs", "export", runner.run_id], ["runs", "show", runner.run_id, "--json"],
                 ["runs", "postmortem", runner.run_id, "-o", "reports"], ["report", "friction", "--out", "reports"],
                 ["runs", "summarize", runner.run_id]):
        result = cli.invoke(main, argv, catch_exceptions=False)
        assert result.exit_code == 0, (argv, result.output)
        places[" ".join(argv)] = result.output
    for report in (tmp_path / "reports").glob("*.md"):
        places[f"report {report.name}"] = report.read_text()

    found = {place: [(name, leaks(text, secret)[:1]) for name, secret in secrets if leaks(text, secret)]
             for place, text in places.items()}
    assert {p: f for p, f in found.items() if f} == {}
    # The checks look where the screens went: the markers printed beside the secrets are there.
    journal = "\n".join(v for k, v in places.items() if k.startswith("journal"))
    screens_table = places["warehouse screens.text"]
    raw = "\n".join(v for k, v in places.items() if k.startswith("file "))
    for k in range(len(groups)):
        assert f"GROUP {k} DONE" in journal and f"GROUP {k} DONE" in screens_table
    assert "GROUP 0 DONE" in raw  # the file's bytes hold screen text as such (the byte check is not vacuous)
    kinds = {json.loads(f'"{m}"') for m in __import__("re").findall(r"\[REDACTED:([a-z0-9_]+)\]", journal)}
    assert len(kinds) >= 25, sorted(kinds)
