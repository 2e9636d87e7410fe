"""Secrets never stored, whatever the format and wherever they show: a fuzz over every credential
format of ``secret_formats`` (fresh values each example) placed on a screen row, inside colour
codes, wrapped by a narrow pane, in the pane title, in a task, as the command a dialog asks to run,
and in the command line the run started. Each example is journaled as the runner journals (the
screen made by ``make_screen`` from the raw output, classified, decided), ingested into a real
DuckDB warehouse, and read back through the CLI; no 12-character piece of any secret may be in the
journal, any warehouse table, the warehouse file's bytes, the log, or the CLI's output."""

from __future__ import annotations

import logging

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from supervisor.classify import classify
from supervisor.cli import main
from supervisor.decide import decide
from supervisor.ids import new_id
from supervisor.journal import Journal
from supervisor.models import RunState
from supervisor.policy import baseline_policy
from supervisor.screen import make_screen
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse, sync
from tests.helpers import CLAUDE_BOX_DIALOG
from tests.reliability.secret_formats import Sample, leaks, samples

PLACES = ("row", "colour", "wrapped", "title", "task", "dialog_command", "run_command")



def _colour(line: str) -> str:
    """The line with SGR colour codes around it and between every few characters."""
    parts = [line[i:i + 5] for i in range(0, len(line), 5)]
    return "\x1b[1;32m" + "\x1b[0m\x1b[33m".join(parts) + "\x1b[0m"


def _journal(settings: Settings, placed: list[tuple[Sample, str]]) -> str:
    policy = baseline_policy()
    run_id = new_id("run_")
    j = Journal(settings.journal_path(run_id), run_id, fsync=False)
    command = ["claude"] + [s.line for s, where in placed if where == "run_command"]
    j.append("run_started", {"policy_id": policy.policy_id, "policies": {policy.policy_id: policy.canonical()},
                             "agent": "claude", "command": command, "pane_id": "%1",
                             "task": next((s.line for s, w in placed if w == "task"), None)})
    for s, where in placed:
        if where == "task":
            j.append("task", {"task_id": new_id("task_"), "text": s.line, "status": "queued", "source": "runs task"})
    screens: list[tuple[str, int, str]] = []
    rows = [s.line for s, w in placed if w == "row"] + [_colour(s.line) for s, w in placed if w == "colour"]
    if rows:
        screens.append(("\n".join(rows), 200, ""))
    wrapped = [s.line[i:i + 23] for s, w in placed if w == "wrapped" for i in range(0, len(s.line), 23)]
    if wrapped:  # rows as a 23-column pane wraps them
        screens.append(("\n".join(wrapped), 23, ""))
    for s, w in placed:
        if w == "title":
            screens.append(("working...", 100, s.line))
        if w == "dialog_command":
            screens.append((CLAUDE_BOX_DIALOG.format(cmd=s.line), 100, ""))
    rs = RunState(run_id=run_id, now=1000.0, started_at=990.0, last_output_at=999.0, saw_work=True)
    for raw, width, title in screens:
        screen = make_screen(raw, width=width, height=60, title=title)
        obs = classify(screen, policy)
        obs.observation_id = oid = new_id("obs_")
        d = decide(obs, rs, policy)
        d.trigger_id = oid
        j.append("observation", {"observation": obs.model_dump(mode="json"), "now": 1000.0,
                                 "screen": {"screen_hash": screen.screen_hash, "text": screen.text, "width": width,
                                            "height": 60, "title": title, "current_command": "claude",
                                            "dead": False}}, event_id=oid)
        j.append("decision", {"decision": d.model_dump(mode="json"), "now": 1000.0})
    j.append("run_ended", {"outcome": "finished"})
    j.close()
    return run_id


@pytest.mark.slow
@pytest.mark.timeout(900)
@settings(max_examples=15, deadline=None, derandomize=True, database=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10_000), st.lists(st.sampled_from(PLACES), min_size=60, max_size=60))
def test_fuzz_no_secret_is_stored_or_printed_anywhere(tmp_path_factory: pytest.TempPathFactory,
                                                      caplog: pytest.LogCaptureFixture, seed: int,
                                                      places: list[str]) -> None:
    home = tmp_path_factory.mktemp("home")
    settings_ = Settings(home=home).ensure()
    smp = samples(seed)
    placed = [(s, places[i % len(places)]) for i, s in enumerate(smp)]
    caplog.set_level(logging.DEBUG)
    run_id = _journal(settings_, placed)
    sync(settings_)

    found: dict[str, str] = {}
    for path in settings_.journals_dir.glob("*.jsonl"):
        found[f"journal {path.name}"] = path.read_bytes().decode("utf-8", "replace")
    with open_warehouse(settings_.warehouse, read_only=True) as wh:
        cols = wh.sql("SELECT table_name, column_name FROM information_schema.columns "
                      "WHERE table_schema = 'main' AND data_type IN ('VARCHAR', 'JSON')")
        for table, column in cols.iter_rows():
            values = wh.sql(f'SELECT CAST("{column}" AS VARCHAR) AS v FROM "{table}" WHERE "{column}" IS NOT NULL')
            found[f"warehouse {table}.{column}"] = "\n".join(values["v"].to_list())
    for f in settings_.warehouse.parent.glob(settings_.warehouse.name + "*"):
        found[f"file {f.name}"] = f.read_bytes().decode("latin-1")
    cli = CliRunner()
    for argv in (["runs", "show", run_id, "--json"], ["runs", "export", run_id], ["runs", "summarize", run_id],
                 ["status", "--all", "--json"]):
        result = cli.invoke(main, ["--home", str(home), *argv], catch_exceptions=False)
        assert result.exit_code == 0, (argv, result.output)
        found[" ".join(argv)] = result.output
    found["log"] = "\n".join(r.getMessage() for r in caplog.records)

    leaked = {where: [(s.name, p, leaks(text, s.secret)[:1]) for s, p in placed if leaks(text, s.secret)]
              for where, text in found.items()}
    assert {w: x for w, x in leaked.items() if x} == {}
    journal = "\n".join(v for k, v in found.items() if k.startswith("journal"))
    assert "[REDACTED:" in journal  # the checks look where the text went
    if "dialog_command" in places[:len(smp)]:
        assert "Bash command" in journal
