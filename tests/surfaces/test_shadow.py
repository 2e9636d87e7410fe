"""The shadow terminal (issue 23): output bytes played through pyte, remembering the rows where fresh text
was drawn over. Every way of hiding a command in one row is caught with what it hid; the way Ink and
ratatui redraw their frames is not (each frame comes as its own burst of output, as from a real agent)."""

from __future__ import annotations

import pytest

from supervisor.surfaces.shadow import ShadowTerminal

W, H = 40, 6
HEAD = "\x1b[H\x1b[2Jhead\r\n"


def played(*chunks: str, gap: float = 0.04) -> tuple[dict[int, str], list[str]]:
    """Play ``chunks`` (``gap`` seconds apart) and return the rows reported and the screen's rows."""
    t = ShadowTerminal(W, H)
    at = 100.0
    for c in chunks:
        t.add(c.encode(), at)
        at += gap
    with t._lock:
        t._play()
        rows = [t.screen.text(y) for y in range(H)]
    return t.overwritten_rows(rows, W, H), rows


@pytest.mark.parametrize(("how", "seq"), [
    ("cr", "   rm -rf ~/proj\r   npm test     "),
    ("el", "   rm -rf ~/proj\r\x1b[2K   npm test"),
    ("el1", "   rm -rf ~/proj\x1b[1K\r   npm test"),
    ("bs", "rm -rf ~/proj" + "\b" * 13 + "npm test     "),
    ("cub", "rm -rf ~/proj\x1b[13Dnpm test     "),
    ("cha", "rm -rf ~/proj\x1b[1Gnpm test     "),
    ("cuu", "rm -rf ~/proj\r\n\x1b[1A\rnpm test     "),
    ("cuu-el", "rm -rf ~/proj\r\n\x1b[1A\x1b[2Knpm test"),
])
def test_text_drawn_over_within_its_row_is_reported_with_what_it_hid(how: str, seq: str) -> None:
    rows, screen = played(HEAD + seq + "\r\nnext")
    assert screen[1].strip() == "npm test"
    assert list(rows) == [1] and "rm -rf ~/proj" in rows[1], (how, rows)


def test_text_swallowed_by_an_unterminated_osc_string() -> None:
    rows, screen = played(HEAD + "\x1b]0;rm -rf ~/proj && \x1b[0mnpm test\r\nnext")
    assert screen[1] == "npm test"  # as tmux shows it: the OSC ends at the next escape
    assert list(rows) == [1] and "rm -rf ~/proj" in rows[1]


def test_the_same_overwrite_split_over_two_quick_writes_is_caught() -> None:
    rows, _ = played(HEAD + "   rm -rf ~/proj", "\r   npm test     \r\nnext", gap=0.2)
    assert list(rows) == [1]


@pytest.mark.parametrize("chunks", [
    # Ink: the previous frame's rows erased from the bottom up, then the new frame written from the top
    ("\x1b[H\x1b[2Jrow1\r\nrow2\r\nrow3", "\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[Gnew1\r\nnew2\r\nnew3"),
    # ratatui: changed cells written after absolute moves
    ("\x1b[H\x1b[2Jstatus 1s\r\nbox", "\x1b[1;8H2s\x1b[2;1Hdialog"),
    # plain output
    (HEAD + "   npm test\r\nnext",),
])
def test_renderers_redrawing_their_frames_are_not_reported(chunks: tuple[str, ...]) -> None:
    rows, _ = played(*chunks)
    assert rows == {}


def test_an_old_line_drawn_over_later_is_not_fresh() -> None:
    """A row rewritten long after it was drawn (a status line updated once a second) is no overwrite."""
    rows, _ = played(HEAD + "   waiting", "\r   done   ", gap=1.5)
    assert rows == {}


def test_rows_scroll_with_their_marks() -> None:
    rows, screen = played(HEAD + "rm -rf ~/x\rnpm test  \r\n" + "\r\n".join(f"line {i}" for i in range(5)))
    at = screen.index("npm test")
    assert list(rows) == [at] and at == 0  # the screen scrolled by one row: the mark moved with its text


def test_a_row_the_capture_disagrees_with_is_not_reported() -> None:
    t = ShadowTerminal(W, H)
    t.add((HEAD + "rm -rf ~/x\rnpm test  ").encode(), 1.0)
    assert t.overwritten_rows(["head", "something else"], W, H) == {}


def test_a_backlog_too_long_is_played_from_its_newest_bytes() -> None:
    t = ShadowTerminal(W, H)
    for i in range(3000):
        t.add(f"noise {i}\r\n".encode(), 1.0 + i * 0.01)
    t.add((HEAD + "rm -rf ~/x\rnpm test  ").encode(), 100.0)
    with t._lock:
        assert t._pending_bytes <= ShadowTerminal.MAX_PENDING
        t._play()
        rows = [t.screen.text(y) for y in range(H)]
    assert rows[1].strip() == "npm test"
    assert list(t.overwritten_rows(rows, W, H)) == [1]
