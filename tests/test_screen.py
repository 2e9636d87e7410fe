"""Screen normalization: escapes, cursor-forward spaces, CR/backspace, trimming, and raw
streams rendered through the terminal emulator."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from supervisor.screen import make_screen, needs_emulator, normalize, osc_title, render_stream


def test_sgr_colours_are_stripped() -> None:
    assert normalize("\x1b[1;31mError\x1b[0m: \x1b[38;5;246mbad\x1b[39m") == "Error: bad"


def test_cursor_forward_becomes_spaces() -> None:
    # Ink-based agents write runs of spaces as ESC[nC; naive stripping glues words together.
    assert normalize("Yes,\x1b[1CI\x1b[1Ctrust\x1b[3Cthis") == "Yes, I trust   this"
    assert normalize("a\x1b[Cb") == "a b"


def test_osc_title_is_removed_and_readable() -> None:
    raw = "\x1b]0;⠂ Claude Code\x07hello\x1b]2;second\x1b\\ world"
    assert normalize(raw) == "hello world"
    assert osc_title(raw) == "second"


def test_carriage_return_overwrites_from_column_zero() -> None:
    assert normalize("progress 10%\rprogress 100%") == "progress 100%"
    assert normalize("abcdef\rXY") == "XYcdef"
    assert normalize("line one\r\nline two\r\n") == "line one\nline two"


def test_backspace_moves_left_and_the_next_character_overwrites() -> None:
    assert normalize("yess\b \b") == "yes"
    assert normalize("abc\b") == "abc"  # as a terminal shows it: backspace does not erase
    assert normalize("abc\b\bX") == "aXc"


def test_trailing_blanks_and_blank_lines_are_trimmed_but_leading_rows_kept() -> None:
    assert normalize("\n  top   \nbottom \t \n\n   \n") == "\n  top\nbottom"


def test_control_characters_and_other_escapes_are_dropped() -> None:
    raw = "a\x00b\x07c\x1b(Bd\x1b7e\x1b8f\x1bPq#0;2\x1b\\g\x9b31mh"
    assert normalize(raw) == "abcdefgh"


def test_tabs_expand_to_eight_columns() -> None:
    assert normalize("a\tb") == "a       b"


def test_capture_pane_text_does_not_need_the_emulator() -> None:
    assert not needs_emulator("\x1b[31mred\x1b[0m and \x1b[2Cgap")
    assert needs_emulator("\x1b[2J\x1b[1;1Hhome")


def test_raw_stream_is_rendered_by_the_emulator() -> None:
    raw = "\x1b[2J\x1b[1;1Hfirst draft\x1b[1;1Hfinal\x1b[K\x1b[3;5Hthird row"
    assert render_stream(raw, width=40, height=5) == "final\n\n    third row"
    screen = make_screen(raw, width=40, height=5)
    assert screen.text.startswith("final")
    assert "first draft" not in screen.text


def test_make_screen_keeps_pane_facts() -> None:
    screen = make_screen("\x1b]0;✳ Fix tests\x07❯ ", width=120, height=40, current_command="claude", dead=True,
                         cursor_x=2, cursor_y=0, scrollback="older\x1b[0m line  ")
    assert (screen.width, screen.height, screen.dead, screen.current_command) == (120, 40, True, "claude")
    assert screen.title == "✳ Fix tests"
    assert screen.text == "❯"
    assert screen.scrollback == "older line"
    assert screen.cursor_x == 2
    assert screen.screen_hash == make_screen("❯", title="✳ Fix tests", dead=True).screen_hash


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab ❯\n\r\b\t\x1b[]();?0123456789mCHJK\x07\\\x9bP")), max_size=300))
def test_normalize_never_raises_and_leaves_no_escapes(raw: str) -> None:
    out = normalize(raw)
    assert "\x1b" not in out and "\r" not in out and "\b" not in out and "\x07" not in out
    assert all(line == line.rstrip() for line in out.split("\n"))
    assert not out.endswith("\n")
    make_screen(raw)  # the emulator path never raises either


def test_reverse_video_spans_are_kept_as_highlights() -> None:
    # opencode marks its selected option only in reverse video (capture-pane -e keeps it).
    raw = "  △ Permission required\n  \x1b[7m Allow once \x1b[27m   Allow always   \x1b[1;31mReject\x1b[0m\n"
    s = make_screen(raw)
    assert s.text.splitlines()[1] == "   Allow once    Allow always   Reject"
    assert s.highlights == ((1, 2, 14),)
    row, a, b = s.highlights[0]
    assert s.text.splitlines()[row][a:b].strip() == "Allow once"
    assert make_screen(raw.replace("\x1b[7m", "").replace("\x1b[27m", "")).highlights == ()


def test_reverse_video_state_carries_across_rows_and_ignores_colour_numbers() -> None:
    s = make_screen("a \x1b[7mb\nc\x1b[0m d\n\x1b[38;5;7mnot reverse\x1b[m")
    assert s.highlights == ((0, 2, 3), (1, 0, 1))
    assert s.screen_hash != make_screen("a b\nc d\nnot reverse").screen_hash  # a moved selection is news


def test_output_rows_are_what_a_piece_of_output_draws() -> None:
    """The rows of raw output (a cheap look, not a rendering): split at line breaks and cursor moves,
    escapes gone, cursor-forward as spaces."""
    from supervisor.screen import output_rows

    data = (b"\x1b[H\x1b[2J\x1b[1mDo you want to proceed?\x1b[0m\r\n \xe2\x9d\xaf 1. Yes\r\n"
            b"\x1b[2K\x1b[1A\x1b[2K Esc\x1b[1Cto\x1b[1Ccancel \xc2\xb7 Tab to amend\x1b[10;1H")
    assert output_rows(data) == ["Do you want to proceed?", "❯ 1. Yes", "Esc to cancel · Tab to amend"]
    assert output_rows(b"") == [] and output_rows(b"\x1b]0;title\x07") == []
