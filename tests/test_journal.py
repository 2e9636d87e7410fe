"""The journal: durable, ordered, redacted, and tolerant of a torn last line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from supervisor.journal import Journal, ReadReport, iter_events, open_run_journal
from supervisor.models import Decision


def test_events_are_numbered_and_readable(tmp_path: Path) -> None:
    j = open_run_journal(tmp_path, "run_T1")
    a = j.append("run_started", {"command": ["claude"]})
    b = j.append("decision", Decision(kind="wait", reason="busy"))
    j.close()
    events = list(iter_events(tmp_path / "run_T1.jsonl"))
    assert [e.seq for e in events] == [1, 2]
    assert [e.event_id for e in events] == [a.event_id, b.event_id]
    assert a.event_id < b.event_id  # time-ordered ids
    assert events[1].payload["kind"] == "wait"
    assert all(e.run_id == "run_T1" and e.schema_version == 1 for e in events)


def test_seq_continues_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with Journal(path, "run_R") as j:
        j.append("note", {"n": 1})
        j.append("note", {"n": 2})
    with Journal(path, "run_R") as j:
        ev = j.append("note", {"n": 3})
    assert ev.seq == 3


def test_payload_secrets_are_redacted_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    secret = "sk-ant-api03-" + "Q" * 40
    with Journal(path, "run_S") as j:
        j.append("observation", {"screen": {"text": f"export ANTHROPIC_API_KEY={secret}"}})
    raw = path.read_text()
    assert "Q" * 40 not in raw
    assert "[REDACTED:" in raw


def test_torn_tail_is_reported_skipped_and_cut_on_reopen(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with Journal(path, "run_T") as j:
        j.append("note", {"n": 1})
        j.append("note", {"n": 2})
    with open(path, "ab") as fh:  # a crash mid-write leaves half a line
        fh.write(b'{"event_id":"01ZZ","run_id":"run_T","seq":3,"kind":"no')
    report = ReadReport(path)
    events = list(iter_events(path, report))
    assert [e.seq for e in events] == [1, 2]
    assert report.torn_tail
    with Journal(path, "run_T") as j:
        assert j.last_report is not None and j.last_report.torn_tail
        ev = j.append("note", {"n": 3})
    assert ev.seq == 3
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["run_id"] == "run_T" for line in lines)


def test_bad_line_in_the_middle_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with Journal(path, "run_B") as j:
        j.append("note", {"n": 1})
    with open(path, "ab") as fh:
        fh.write(b"this is not json\n")
    with Journal(path, "run_B") as j:
        j.append("note", {"n": 2})
    report = ReadReport(path)
    events = list(iter_events(path, report))
    assert [e.payload["n"] for e in events] == [1, 2]
    assert report.bad_lines == [2]


def test_run_policies_are_journaled_verbatim(tmp_path: Path) -> None:
    """A policy's regexes can look like secrets to the redactor (``password:\\s*``); the policies map
    of run_started keeps them exactly, so the content still hashes to its id (replay needs it)."""
    from supervisor.policy import Policy, baseline_policy

    base = baseline_policy()
    j = Journal(tmp_path / "r.jsonl", "r", fsync=False)
    j.append("run_started", {"policies": {base.policy_id: base.canonical()}, "note": "password: hunter2hunter2"})
    ev = j.events()[0]
    assert Policy.model_validate(ev.payload["policies"][base.policy_id]).policy_id == base.policy_id
    assert "hunter2hunter2" not in ev.payload["note"], "everything else is still redacted"


def test_a_full_disk_leaves_whole_lines_only_and_writing_resumes(tmp_path: Path) -> None:
    """On a real 256 KB tmpfs: lines that do not fit are never half-written (a short write into the
    last page is cut back), the error says why, and once space is freed the numbering goes on."""
    import errno

    from supervisor.errors import JournalWriteError
    from tests.helpers import tmpfs

    with tmpfs(tmp_path / "mnt", "256k") as mnt:
        j = Journal(mnt / "r.jsonl", "run_F")
        j.append("note", {"n": 0})
        filler = mnt / "filler"
        with open(filler, "wb", buffering=0) as fh:
            for size in (4096, 1):
                while True:
                    try:
                        fh.write(b"\0" * size)
                    except OSError as exc:
                        assert exc.errno == errno.ENOSPC
                        break
        failures = 0
        for n in range(1, 40):  # lines of 3 KB: some fit the last page's slack, then none do
            try:
                j.append("note", {"n": n, "text": "x" * 3000})
            except JournalWriteError as exc:
                failures += 1
                assert "No space left on device" in exc.one_line() and "free space" in exc.one_line()
            data = (mnt / "r.jsonl").read_bytes()
            assert data.endswith(b"\n"), f"a partial line after append {n}: {data[-80:]!r}"
        assert failures > 0
        kept = [e.seq for e in iter_events(mnt / "r.jsonl")]
        assert kept == list(range(1, len(kept) + 1))  # a failed line took no number
        filler.unlink()
        ev = j.append("note", {"n": "after"})
        assert ev.seq == len(kept) + 1
        j.close()
        report = ReadReport(mnt / "r.jsonl")
        assert [e.seq for e in iter_events(mnt / "r.jsonl", report)] == list(range(1, ev.seq + 1))
        assert not report.torn_tail and not report.bad_lines


def test_lines_written_together_are_made_durable_by_one_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within one look at the screen the runner writes several events and fsyncs once, before it acts:
    each line is in the file (whole) at once; ``sync`` (or the next synced append, or closing) fsyncs."""
    import os as os_mod

    calls: list[int] = []
    real = os_mod.fsync
    monkeypatch.setattr(os_mod, "fsync", lambda fd: calls.append(fd) or real(fd))
    j = Journal(tmp_path / "run.jsonl", "run_x")
    for i in range(3):
        j.append("note", {"i": i}, sync=False)
    assert calls == [] and [e.payload["i"] for e in iter_events(tmp_path / "run.jsonl")] == [0, 1, 2]
    j.sync()
    j.sync()  # nothing new: no second fsync
    assert len(calls) == 1
    j.append("note", {"i": 3}, sync=False)
    j.append("action", {"i": 4})  # a synced append makes the earlier line durable too
    assert len(calls) == 2
    j.append("note", {"i": 5}, sync=False)
    j.close()
    assert len(calls) == 3 and [e.payload["i"] for e in iter_events(tmp_path / "run.jsonl")] == [0, 1, 2, 3, 4, 5]
