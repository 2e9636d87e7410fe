"""Author the `unknown_agents` suite: screens of agents the policy has never seen.

    .venv/bin/python suites/authoring/make_unknown_agents.py

Made-up agents ("zorp", "quux") whose dialogs follow none of the grammars the policy knows: arrow
menus with their own cursor glyph, button rows, choice words one per line, side-by-side words with
an auto-deny countdown, a radio row in a box, ``[Y/n]`` and ``(y/n)`` lines. Each dialog must be
`asking` and escalated (its keys are unknown), never idle; their timers and counters are busy, their
HTTP errors and login demands in their own words are blockers, and their finished turns (a plan
listed above the composer, a question with no choices) stay idle. Our own wording throughout; the
same dialogs are drawn live by tests/novel_agent.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import escalate, screen_case, state, write_suite  # noqa: E402

ZORP = [" zorp ◈ session 4f2a · a made-up agent", ""]
QUUX = ["quux 0.3 ▸ /home/dev/shop", ""]


def zorp(*rows: str) -> str:
    return "\n".join([*ZORP, *rows])


def quux(*rows: str) -> str:
    return "\n".join([*QUUX, *rows])


CHOICES = {
    "zorp-arrow-menu": ["Go ahead", "Stop"],
    "zorp-button-row": ["Accept", "Reject"],
    "zorp-word-list": ["Allow", "Deny"],
    "zorp-countdown-row": ["Continue", "Reject"],
    "zorp-radio-box": ["Yes, run it", "No, skip it"],
    "zorp-yn-line": ["Yes", "No"],
    "zorp-y-slash-n": ["Yes", "No"],
    "quux-numbered-colon": ["approve", "refuse"],
    "quux-allow-deny-buttons": ["Allow", "Deny"],
}
"""What each dialog's notice must name (its choices)."""


def unknown_agents_suite() -> list[dict]:
    c: list[dict] = []
    tags = ["unknown-agent"]

    def ask(cid: str, text: str, note: str, command: str = "zorp") -> None:
        expected = escalate(None, "unknown")
        expected["next_action_contains"] = list(CHOICES[cid])
        c.append(screen_case(cid, text, expected, tags=[*tags, "dialog"], severity=3,
                             must_pass=True, note=note, current_command=command))

    ask("zorp-arrow-menu", zorp("  ✧ I need to run a command to continue.", "  ✧ shell · make test", "",
                                " Zorp wants to execute a shell command. Allow it?", "   » 1) Go ahead",
                                "     2) Always go ahead for make", "     3) Stop",
                                " (choose with arrows, confirm with return)"),
        "a numbered menu with a cursor glyph no agent uses and a hint in its own words")
    ask("zorp-button-row", zorp("  ✧ I will update the notes.", "", " Zorp needs to edit notes.md",
                                "   [ Accept ]   [ Accept all ]   [ Reject ]"),
        "bracketed buttons on one row")
    ask("zorp-word-list", zorp("  ✧ I need to read the docs.",
                               " Permission needed: network access to https://example.com/docs", "   ◇ Allow",
                               "   ◆ Deny"),
        "choice words one per line, each with its own glyph (which one is selected is not known)")
    ask("zorp-countdown-row", zorp("  ✧ Plan: add a test, then run it.", " Proceed with the plan?",
                                   "    Continue      Reject        auto-reject in 42s"),
        "side-by-side words and an auto-reject countdown")
    ask("zorp-radio-box", zorp("  ✧ I will run the tests.", " ┌ zorp asks ─────────────────────────────┐",
                               " │ Run `pytest -q` here?                  │",
                               " │   ◉ Yes, run it     ○ No, skip it      │",
                               " └ ←/→ move · ⏎ pick ─────────────────────┘"),
        "a radio row inside a box")
    ask("zorp-yn-line", zorp("  ✧ Listing the folder.", ' Execute "ls -la"? [Y/n] '),
        "a [Y/n] line about a harmless command: still escalated, what Enter does in zorp is not known")
    ask("zorp-y-slash-n", zorp("  ✧ Plan ready: add one test.", " Proceed with the plan? (y/n) "),
        "a (y/n) line")
    ask("quux-numbered-colon", quux("• quux would like to run: npm test", "", "Approve this step?",
                                    "  [1] approve", "  [2] approve and remember", "  [3] refuse",
                                    "select 1-3 and press return"),
        "bracketed numbers", command="quux")
    ask("quux-allow-deny-buttons", quux("• writing src/app.js", "", "quux needs permission to write src/app.js:",
                                        "  < Allow >    < Deny >"),
        "angle-bracket buttons", command="quux")

    def st(cid: str, text: str, expected: dict, note: str, command: str = "zorp") -> None:
        run_state = {"saw_work": True, "idle_streak": 1} if expected["state"] == "idle" else None
        c.append(screen_case(cid, text, expected, tags=[*tags, expected["state"]], note=note,
                             current_command=command, run_state=run_state))

    st("zorp-busy-timer", zorp("  ✧ Looked at the repository", " [00:07] pondering"),
       state("busy", "unknown"), "a running timer before a gerund")
    st("zorp-busy-gerund-seconds", zorp("  ✧ Looked at the repository", " Pondering 12s"),
       state("busy", "unknown"), "a gerund with its elapsed seconds")
    st("zorp-busy-token-counter", zorp("  ✧ Looked at the repository", " ◐ 1,204 tokens received"),
       state("busy", "unknown"), "a token counter")
    blocked = [
        ("zorp-http-401", "  ✧ Request failed: HTTP 401 Unauthorized (invalid token)", "auth"),
        ("zorp-login-first", " You must log in first: run `zorp auth login` to continue.", "auth"),
        ("zorp-http-429", "  ✧ The provider returned 429: slow down, you are sending requests too quickly.",
         "rate_limit"),
        ("zorp-http-500", "  ✧ Server error (500): the model backend failed. Try again later.",
         "model_unavailable"),
        ("quux-error-503", "Error code 503 from the endpoint", "model_unavailable"),
    ]
    for cid, line, kind in blocked:
        command = cid.split("-", 1)[0]
        st(cid, (zorp if command == "zorp" else quux)(line, " zorp>" if command == "zorp" else "quux> "),
           state("blocked", "unknown", "escalate", blocker=kind), f"an HTTP error or login demand ({kind})",
           command=command)
    st("zorp-idle-plan-list", zorp("  ✧ Here is the plan:", "   1. add a test", "   2. refactor the parser",
                                   "   3. update the docs", " zorp>"),
       state("idle", "unknown", "finish"), "a finished turn listing steps: no choice words, not a question")
    st("zorp-idle-question-without-choices", zorp("  ✧ Done. Do you want me to add more tests?", " zorp>"),
       state("idle", "unknown", "finish"), "a question with no choices under it: the composer waits")
    st("zorp-idle-prose-500", zorp("  ✧ I fixed the bug where the server returned 500 on empty input.", " zorp>"),
       state("idle", "unknown", "finish"), "prose that mentions an HTTP status is no blocker")
    return c


def main() -> None:
    write_suite("unknown_agents", "Agents the policy has never seen: their dialogs escalated, never idle; their "
                "busy, blocked and idle screens read generically.", unknown_agents_suite(),
                defaults={"input": {"width": 100, "height": 30}}, script=Path(__file__).name)


if __name__ == "__main__":
    main()
