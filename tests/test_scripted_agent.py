"""The one scripted agent (evals.agent): key parsing (pure) and real keystrokes through tmux, in
each of its ways of drawing (redraw, append, slow dismiss, quoted prompts), with stray keys
counted."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from evals.agent import inputs, stray_count, stray_keys
from evals.agent.terminal import parse_keys
from supervisor.surfaces.tmux import TmuxSurface
from tests.helpers import retry_until
from tests.live_helpers import REPO, agent_command, answers, read_record, write_script


def test_parse_keys() -> None:
    assert parse_keys(b"1") == ["1"]
    assert parse_keys(b"\x1b[B\r") == ["Down", "Enter"]
    assert parse_keys(b"\x1b") == ["Escape"]
    assert parse_keys("y❯".encode()) == ["y", "❯"]
    assert parse_keys(b"\x7f\t\x03") == ["BSpace", "Tab", "C-c"]
    assert parse_keys(b"\x1b[200~a\rb\x1b[201~\r") == ["PasteStart", "a", "Enter", "b", "PasteEnd", "Enter"]


def _screen(surface: TmuxSurface, pane: str) -> str:
    return surface.capture(pane).plain


def test_menu_prompt_records_keys_and_choice(surface: TmuxSurface, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"prompt": {"id": "p1", "kind": "bash", "command": "npm test", "on_decline": [{"say": "Declined."}]}},
        {"exit": {"code": 0}},
    ])
    rec = tmp_path / "rec.jsonl"
    pane = surface.new_session("a", agent_command(script, rec), width=100, height=30, cwd=str(REPO)).pane_id
    # wait for the whole frame (its last line), not just the question: a capture can land mid-draw
    text = retry_until(lambda: (t := _screen(surface, pane)) and "Esc to cancel" in t and t, 20,
                       message="the prompt")
    assert "❯ 1. Yes" in text and "Esc to cancel · Tab to amend" in text and "npm test" in text
    surface.send_keys(pane, ["Down", "Down"])
    retry_until(lambda: "❯ 3. No" in _screen(surface, pane), 10, message="the highlight to move")
    surface.send_keys(pane, ["Enter"])
    retry_until(lambda: "p1" in answers(rec), 10, message="the answer")
    a = answers(rec)["p1"]
    assert a["choice"] == 2 and a["approved"] is False and a["keys"] == ["Down", "Down", "Enter"]
    retry_until(lambda: any(r["event"] == "end" for r in read_record(rec)), 10, message="the end")
    assert any(r["event"] == "say" and r["text"] == "Declined." for r in read_record(rec))


def test_yes_no_prompt_takes_a_letter_then_enter(surface: TmuxSurface, tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"prompt": {"id": "yn", "kind": "yes_no", "question": "Run shell command?", "command": "make"}},
        {"exit": {"code": 0}},
    ], style="aider")
    rec = tmp_path / "rec.jsonl"
    pane = surface.new_session("b", agent_command(script, rec), width=100, height=30, cwd=str(REPO)).pane_id
    retry_until(lambda: "(Y)es/(N)o/(D)on't ask again [Yes]:" in _screen(surface, pane), 20, message="the prompt")
    surface.send_keys(pane, ["x", "Enter"])  # not an answer: asked again
    retry_until(lambda: "Please answer with one of" in _screen(surface, pane), 10, message="the re-ask")
    surface.send_keys(pane, ["n", "Enter"])
    retry_until(lambda: "yn" in answers(rec), 10, message="the answer")
    assert answers(rec)["yn"]["approved"] is False


@pytest.mark.slow
def test_exit_code_and_record_of_unexpected_keys(surface: TmuxSurface, tmp_path: Path, tmux_socket: str) -> None:
    # the key must land while the spinner runs: give it room on a loaded machine (the test does
    # not wait for the spinner's end, it waits for the exit, which follows at once)
    script = write_script(tmp_path, [{"spinner": {"seconds": 4.0}}, {"exit": {"code": 5}}])
    rec = tmp_path / "rec.jsonl"
    pane = surface.new_session("c", agent_command(script, rec), width=100, height=30, cwd=str(REPO)).pane_id
    retry_until(lambda: "esc to interrupt" in _screen(surface, pane), 20, message="the spinner")
    surface.send_keys(pane, ["z"])
    info = retry_until(lambda: (i := surface.pane_info(pane)) and i.dead and i.dead_status is not None and i, 20,
                       message="the agent to exit")
    assert info.dead_status == 5
    assert any(r["event"] == "keys" and r["keys"] == ["z"] and r["during"] == "spinner" for r in read_record(rec))
    assert stray_count(rec) == 1 and stray_keys(rec)[0]["why"] == "no prompt live"


def test_random_mode_records_draw_and_answer_times(surface: TmuxSurface, tmp_path: Path) -> None:
    import sys

    rec = tmp_path / "rec.jsonl"
    cmd = [sys.executable, "-m", "evals.agent", "--random", "2", "--gap", "0.1", "0.2", "--record", str(rec)]
    pane = surface.new_session("d", cmd, width=100, height=30, cwd=str(REPO)).pane_id
    for n in range(2):
        retry_until(lambda n=n: any(r["event"] == "drawn" and r["id"] == f"r{n}" for r in read_record(rec)), 20,
                    message=f"prompt r{n}")
        # "drawn" is recorded once the frame is written, which may be before tmux shows it: choose
        # the keys from a screen that shows a prompt, never from the previous frame
        screen = retry_until(lambda: (t := _screen(surface, pane)) and ("(y)" in t or "1. Yes" in t) and t, 20,
                             message=f"prompt r{n} on screen")
        keys = ["y"] if "(y)" in screen else ["1"]
        surface.send_keys(pane, keys)
        retry_until(lambda n=n: f"r{n}" in answers(rec), 10, message=f"answer r{n}")
    got = answers(rec)
    assert all(got[k]["answered_at"] >= 0 for k in got)
    subprocess.run(["tmux", "-L", surface.socket or "", "kill-server"], check=False)


def _start(surface: TmuxSurface, tmp_path: Path, steps: list, name: str, **top: object) -> tuple[str, Path]:
    script = write_script(tmp_path, steps, name=name, **top)
    rec = tmp_path / f"{name}.jsonl"
    pane = surface.new_session(name, agent_command(script, rec), width=100, height=30, cwd=str(REPO)).pane_id
    return pane, rec


def test_slow_dismiss_redraws_the_answered_prompt_and_counts_a_second_answer_as_stray(
        surface: TmuxSurface, tmp_path: Path) -> None:
    pane, rec = _start(surface, tmp_path, [
        {"prompt": {"id": "t", "kind": "trust", "dismiss": {"redraws": 2, "every_s": 0.4}}},
        {"idle": {"id": "box", "seconds": 1.5}},
        {"exit": {"code": 0}},
    ], "slow")
    retry_until(lambda: "Enter to confirm" in _screen(surface, pane), 20, message="the trust dialog")
    surface.send_keys(pane, ["1"])
    retry_until(lambda: "t" in answers(rec), 10, message="the answer")
    # the dialog is still drawn (redrawn) after the answer: a supervisor that answers again...
    retry_until(lambda: any(r["event"] == "redrawn" for r in read_record(rec)), 10, message="a redraw")
    assert "1. Yes, I trust this folder" in _screen(surface, pane)
    surface.send_keys(pane, ["1"])
    retry_until(lambda: any(r["event"] == "end" for r in read_record(rec)), 20, message="the end")
    # ...sends a stray key: it was no longer a live prompt
    assert stray_count(rec) == 1 and stray_keys(rec)[0]["during"] == "t:dismissing"
    assert answers(rec)["t"]["keys"] == ["1"]


def test_append_mode_keeps_the_answered_prompt_on_screen_with_output_below(
        surface: TmuxSurface, tmp_path: Path) -> None:
    pane, rec = _start(surface, tmp_path, [
        {"say": "Installing dependencies."},
        {"prompt": {"id": "yn", "kind": "yes_no", "question": "Run shell command?", "command": "make"}},
        {"say": "Ran make: 12 targets built."},
        {"prompt": {"id": "p", "kind": "bash", "command": "npm test"}},
        {"say": "Tests passed."},
        {"idle": {"id": "box", "seconds": 2}},
        {"exit": {"code": 0}},
    ], "append", mode="append", style="aider")
    retry_until(lambda: "(Y)es/(N)o/(D)on't ask again [Yes]:" in _screen(surface, pane), 20, message="the question")
    surface.send_keys(pane, ["y", "Enter"])
    text = retry_until(lambda: (t := _screen(surface, pane)) and "1. Yes" in t and t, 20, message="the second prompt")
    lines = text.splitlines()
    asked = next(i for i, ln in enumerate(lines) if "Run shell command?" in ln)
    below = next(i for i, ln in enumerate(lines) if "Ran make" in ln)
    assert lines[asked].endswith("[Yes]: y") and below > asked  # answered, still there, output below it
    surface.send_keys(pane, ["1"])
    retry_until(lambda: "Tests passed." in _screen(surface, pane), 20, message="the output after the menu")
    text = _screen(surface, pane)
    assert "Do you want to proceed?" in text and text.index("Do you want to proceed?") < text.index("Tests passed.")
    surface.send_keys(pane, ["y"])  # nothing is live now: stray
    retry_until(lambda: any(r["event"] == "end" for r in read_record(rec)), 20, message="the end")
    assert {k: v["approved"] for k, v in answers(rec).items()} == {"yn": True, "p": True}
    assert stray_count(rec) == 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["menu", "yes_no", "press_enter", "trust"])
def test_quoted_prompts_are_output_and_any_key_is_stray(surface: TmuxSurface, tmp_path: Path, kind: str) -> None:
    pane, rec = _start(surface, tmp_path, [
        {"quote": {"kind": kind, "then": "spinner", "seconds": 3}},
        {"exit": {"code": 0}},
    ], f"quote-{kind.replace('_', '')}")
    retry_until(lambda: any(r["event"] == "quote" for r in read_record(rec)), 20, message="the quoted prompt")
    retry_until(lambda: "esc to interrupt" in _screen(surface, pane), 20, message="the spinner below it")
    surface.send_keys(pane, ["1"])
    surface.send_keys(pane, ["Enter"])
    retry_until(lambda: any(r["event"] == "end" for r in read_record(rec)), 20, message="the end")
    assert stray_count(rec) == 2 and not answers(rec)


@pytest.mark.slow
def test_input_box_takes_pasted_lines_and_flags_answer_keys(surface: TmuxSurface, tmp_path: Path) -> None:
    pane, rec = _start(surface, tmp_path, [
        {"idle": {"id": "task"}},
        {"idle": {"id": "more", "seconds": 3}},
        {"exit": {"code": 0}},
    ], "box", paste_enter_gap_s=0.3)
    retry_until(lambda: "? for shortcuts" in _screen(surface, pane), 20, message="the input box")
    surface.send_keys(pane, ["1", "Enter"])  # a misplaced answer: stray, not a task
    surface.paste_buffer(pane, "fix the bug\nthen add a test")
    surface.send_keys(pane, ["Enter"])  # too soon after the paste: a newline (like Codex)
    retry_until(lambda: "then add a test" in _screen(surface, pane), 10, message="the pasted text")
    import time

    time.sleep(0.4)  # the agent's own paste/Enter gap, not a wait for an outcome
    surface.send_keys(pane, ["Enter"])
    retry_until(lambda: inputs(rec), 10, message="the submitted task")
    assert inputs(rec) == ["fix the bug\nthen add a test\n"]
    surface.send_keys(pane, ["-l", "half typed"])
    retry_until(lambda: any(r["event"] == "end" for r in read_record(rec)), 20, message="the end")
    why = [s["why"] for s in stray_keys(rec)]
    assert why == ["an answer key submitted into the input box", "left unsubmitted in the input box"], why


@pytest.mark.slow
def test_steps_with_until_last_until_their_file_appears(surface: TmuxSurface, tmp_path: Path) -> None:
    """A spinner, a hung spinner and a blocker with ``until`` stay on screen however long it takes
    (a test opens them once its supervisor has seen them); ``seconds`` is then only a ceiling."""
    gates = {name: tmp_path / name for name in ("work", "hang", "blocker")}
    script = write_script(tmp_path, [
        {"spinner": {"until": str(gates["work"]), "verb": "Reading files"}},
        {"spinner": {"until": str(gates["hang"]), "animate": False, "verb": "Compiling"}},
        {"blocker": {"kind": "auth", "until": str(gates["blocker"])}},
        {"say": "Back to work."},
        {"exit": {"code": 0}},
    ])
    rec = tmp_path / "rec.jsonl"
    pane = surface.new_session("u", agent_command(script, rec), width=100, height=30, cwd=str(REPO)).pane_id
    for name, shown in (("work", "Reading files"), ("hang", "Compiling"), ("blocker", "Please run /login")):
        retry_until(lambda shown=shown: shown in _screen(surface, pane), 20, message=shown)
        if name == "work":  # a spinner that goes on animating
            seen = _screen(surface, pane)
            retry_until(lambda seen=seen: _screen(surface, pane) != seen, 10, message="the spinner to animate")
        time.sleep(1.2)  # longer than a step without ``until`` lasts: nothing but the file may end it
        assert shown in _screen(surface, pane)
        assert not any(r["event"] == "say" for r in read_record(rec))
        gates[name].touch()
    retry_until(lambda: any(r["event"] == "end" for r in read_record(rec)), 20, message="the end")
    assert any(r["event"] == "say" and r["text"] == "Back to work." for r in read_record(rec))
    assert stray_keys(rec) == [] and [r["until"] for r in read_record(rec) if r["event"] == "spinner"] == [
        str(gates["work"]), str(gates["hang"])]
