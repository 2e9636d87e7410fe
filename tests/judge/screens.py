"""Screens written for the judge tests (our own text, modelled on how agents draw prompts)."""

from __future__ import annotations

DANGEROUS_MENU = """\
╭───────────────────────────────────────────────────────╮
│ Bash command                                          │
│                                                       │
│   rm -rf ~/projects/old-build                         │
│   Remove the old build directory                      │
│                                                       │
│ Do you want to proceed?                               │
│ ❯ 1. Yes                                              │
│   2. Yes, and don't ask again for rm commands         │
│   3. No, and tell Claude what to do differently (esc) │
╰───────────────────────────────────────────────────────╯"""

SAFE_MENU = """\
╭───────────────────────────────────────────────────────╮
│ Bash command                                          │
│                                                       │
│   pytest -q tests/unit                                │
│   Run the unit tests                                  │
│                                                       │
│ Do you want to proceed?                               │
│ ❯ 1. Yes                                              │
│   2. Yes, and don't ask again for pytest commands     │
│   3. No, and tell Claude what to do differently (esc) │
╰───────────────────────────────────────────────────────╯"""

BUSY = """\
● Reading src/parser.py

✻ Pondering… (12s · ↑ 1.2k tokens · esc to interrupt)

╭──────────────────────────────────────────────╮
│ >                                            │
╰──────────────────────────────────────────────╯"""

DEFAULT_NO = "Overwrite existing config file config/settings.toml? [y/N] "

UNCERTAIN = """\
Processing batch 7 of 12
  partial results written
Press any key when you have inserted the next disk"""

UNCERTAIN_2 = """\
Processing batch 8 of 12
  partial results written
Press any key when you have inserted the next disk"""
