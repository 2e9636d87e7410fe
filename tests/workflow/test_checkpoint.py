"""Checkpoint parsing and exactly-once identity (duplicates, agent restarts, malformed blocks)."""

from __future__ import annotations

from supervisor.workflow.checkpoint import CheckpointTracker, find_blocks, parse_body


def block(seq: int, status: str = "step_done", node: str = "write", summary: str = "did it") -> str:
    return (f"<checkpoint>\nrun_id: run_1\ncheckpoint_seq: {seq}\nstatus: {status}\ncurrent_node: {node}\n"
            f"summary: {summary}\nevidence:\n  - wrote hello.py\n</checkpoint>")


def test_yaml_block() -> None:
    [raw] = find_blocks("noise\n" + block(1) + "\nmore")
    body, err = parse_body(raw)
    assert err is None and body is not None
    assert body.checkpoint_seq == 1 and body.status == "step_done" and body.current_node == "write"
    assert body.evidence == ["wrote hello.py"]


def test_key_value_block_with_indentation_and_box() -> None:
    raw = ("  │ checkpoint_seq: 2 │\n  │ status: Blocked │\n  │ summary: need the API key: it is missing │\n"
           "  │ needs: API key; a decision │")
    body, err = parse_body(raw)
    assert err is None, err
    assert body is not None and body.status == "blocked" and body.needs == ["API key", "a decision"]
    assert body.summary == "need the API key: it is missing"


def test_malformed_blocks_report_errors() -> None:
    for raw, needle in [("", "empty"), ("checkpoint_seq: 1\nstatus: dancing", "status"),
                        ("status: working", "checkpoint_seq"), ("just some words", "not YAML")]:
        body, err = parse_body(raw)
        assert body is None and err and needle in err, (raw, err)


def test_same_block_processed_once_even_rewrapped() -> None:
    t = CheckpointTracker()
    first = t.admit_all(find_blocks(block(1)))
    assert len(first) == 1 and first[0].epoch == 0 and not first[0].restart
    # the same block still on screen, re-indented by a redraw: not new
    assert t.admit_all(find_blocks(block(1).replace("\n", "\n    "))) == []
    assert t.admit_all(find_blocks(block(1) + "\n" + block(2, node="test"))) [0].body.checkpoint_seq == 2


def test_agent_restart_opens_new_epoch() -> None:
    t = CheckpointTracker()
    t.admit_all(find_blocks(block(1) + block(2, node="test")))
    # the agent restarted: seq back to 1 with new content, while the old blocks are still visible above
    screen = block(1) + block(2, node="test") + block(1, status="working", node="test", summary="restarted")
    new = t.admit_all(find_blocks(screen))
    assert len(new) == 1 and new[0].restart and new[0].epoch == 1
    nxt = t.admit_all(find_blocks(screen + block(2, node="test", summary="done after restart")))
    assert len(nxt) == 1 and nxt[0].epoch == 1 and not nxt[0].restart


def test_seq_gap_flagged_and_malformed_recorded_once() -> None:
    t = CheckpointTracker()
    t.admit_all(find_blocks(block(1)))
    [gap] = t.admit_all(find_blocks(block(4)))
    assert gap.seq_gap
    bad = "<checkpoint>status: ???</checkpoint>"
    [m] = t.admit_all(find_blocks(bad))
    assert m.malformed and m.parse_error
    assert t.admit_all(find_blocks(bad)) == []


def test_tracker_rebuilt_from_remembered_events() -> None:
    t = CheckpointTracker()
    evs = t.admit_all(find_blocks(block(1) + block(2)))
    t2 = CheckpointTracker()
    for e in evs:
        t2.remember(e)
    assert t2.admit_all(find_blocks(block(1) + block(2))) == []
    assert t2.last_seq == 2


def test_terminal_wrapped_block_still_parses() -> None:
    """A narrow pane wraps a long summary onto a line of its own (no YAML continuation indent)."""
    raw = ("\n  checkpoint_seq: 3\n  status: step_done\n  current_node: test\n"
           "  summary: ran the whole suite after fixing the flaky fixture and\n"
           "  everything passes now\n  evidence:\n  - pytest -q: 41 passed\n  needs: []\n"
           "  question_for_supervisor: null\n")
    body, err = parse_body(raw)
    assert err is None and body is not None
    assert body.summary == "ran the whole suite after fixing the flaky fixture and everything passes now"
    assert body.evidence == ["pytest -q: 41 passed"] and body.needs == [] and body.question_for_supervisor is None
    assert body.checkpoint_seq == 3


def test_any_text_parses_or_reports_never_raises() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    keys = st.sampled_from(["checkpoint_seq", "status", "current_node", "summary", "evidence", "needs", "x"])
    line = st.one_of(st.text(max_size=40), st.builds(lambda k, v: f"{k}: {v}", keys, st.text(max_size=20)))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(line, max_size=8))
    def check(lines: list[str]) -> None:
        t = CheckpointTracker()
        text = "<checkpoint>\n" + "\n".join(lines) + "\n</checkpoint>"
        for ev in t.admit_all(find_blocks(text)):
            assert (ev.body is None) == (ev.parse_error is not None)

    check()
