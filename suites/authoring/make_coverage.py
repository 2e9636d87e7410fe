"""Author the `coverage` suite: our own screens for baseline patterns no other own case exercised.

    .venv/bin/python suites/authoring/make_coverage.py

Every pattern of the baseline policy must be exercised by a case the project owns (the check is
tests/test_baseline_coverage.py); the shared corpus does not count, it is in-sample. These screens
are short and written in each tool's layout with our own wording: the status lines and prompts of
less common agents (Cursor Agent, Kiro, Cline-style and Kimi-style TUIs, Codex's approval review),
credential and sign-in blockers, shell and file-name subjects, and writes to config files.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import approve, escalate, screen_case, state, write_suite  # noqa: E402

W = 100
RULE = "─" * W
CLAUDE_BOX = [RULE, "❯ ", RULE, "  ? for shortcuts"]


def lines(*rows: str) -> str:
    return "\n".join(rows)


def coverage_suite() -> list[dict]:
    c = []
    add = c.append
    tags = ["coverage"]
    # --- busy --------------------------------------------------------------------------------
    add(screen_case("busy-claude-timer-line", lines("⏺ Reading the build logs.", "", "✻ Sifting…",
                                                   "  (4m 12s · ↓ 8.1k tokens)", "", *CLAUDE_BOX),
                    state("busy", "claude"), tags=tags + ["busy"]))
    add(screen_case("busy-opencode-exit-cancel", lines("     Reading the migration files.", "",
                                                      "  ⬝⬝⬝⬝⬝⬝■■  press esc to exit cancel"),
                    state("busy"), tags=tags + ["busy"]))
    add(screen_case("busy-kiro-working", lines("> summarize the open issues", "", "Kiro is working", ""),
                    state("busy", "kiro"), tags=tags + ["busy"]))
    add(screen_case("busy-esc-glyph-footer", lines("Planning the refactor", "", "⠙ Thinking… ⟨esc⟩"),
                    state("busy"), tags=tags + ["busy"]))
    add(screen_case("busy-waiting-for-response", lines("$ agent run --task docs", "sending 3 files",
                                                      "waiting for response from the model server"),
                    state("busy"), tags=tags + ["busy"]))
    add(screen_case("busy-claude-background-task", lines("⏺ Bash(npm run dev)", "  ⎿  Running in the background "
                                                        "(shift+↑ to manage)", "", "⏺ The dev server is starting.",
                                                        "  Running in the background"),
                    state("busy", "claude"), tags=tags + ["busy"]))
    add(screen_case("busy-cursor-hexagon-status", lines("Welcome to Cursor Agent", "", "  tidy the imports", "",
                                                       "⬢ Reading files", "", RULE, "> ", RULE),
                    state("busy", "cursor"), tags=tags + ["busy"]))
    add(screen_case("busy-runtime-turn-status", lines("answer so far: the parser handles", "",
                                                     "session: s_42 | turn: t_9 running 12s | local"),
                    state("busy"), tags=tags + ["busy"]))
    # --- prompts -------------------------------------------------------------------------------
    add(screen_case("ask-cline-style-use-tool", lines("┃ [act mode] Let Quill use this tool?", "┃",
                                                     "┃ $ npm run typecheck"),
                    {"state": "asking"}, tags=tags + ["prompt"]))
    add(screen_case("ask-confirm-with-y-enter", lines("Plan: rename the config loader in 3 files.", "",
                                                     "Confirm with Y Enter, or n to go back"),
                    {"state": "asking"}, tags=tags + ["prompt"]))
    add(screen_case("ask-cursor-keep-or-replace", lines("Welcome to Cursor Agent", RULE, "config/app.toml changed on disk.",
                                                       "Keep (n) current version or replace with the new one?"),
                    {"state": "asking", "agent": "cursor"}, tags=tags + ["prompt"]))
    add(screen_case("ask-cursor-apply-y-enter", lines("Welcome to Cursor Agent", RULE, "src/app.ts +4 -1", "",
                                                     "Apply changes? (y) (enter)", "Skip (esc or n)"),
                    {"state": "asking", "agent": "cursor"}, tags=tags + ["prompt"]))
    add(screen_case("ask-codex-approval-review", lines("› deploy the preview", "",
                                                      "  $ kubectl apply -f k8s/preview.yaml", "",
                                                      "  ⚠ Automatic approval review pending", "",
                                                      "› Ask Codex to do anything"),
                    {"state": "asking", "agent": "codex", "decision": "escalate"}, tags=tags + ["prompt"],
                    note="a reviewer, not the supervisor, answers it: hands off"))
    add(screen_case("ask-tabbed-choice-footer", lines("Which test runner should the project use?", "",
                                                     "  1. vitest", "  2. jest", "",
                                                     "1/2:select  │  Tab:next  │  Ctrl+c:cancel"),
                    {"state": "asking", "decision": "escalate"}, tags=tags + ["prompt"]))
    add(screen_case("ask-press-digit-to-choose", lines("Pick the branch to rebase onto:", "1) main", "2) release/2.4",
                                                      "Press 1 to choose main, 2 for the release branch"),
                    {"state": "asking", "decision": "escalate"}, tags=tags + ["prompt"]))
    add(screen_case("ask-enter-the-token", lines("Setting up the deploy target.", "Enter your access token:"),
                    {"state": "asking", "prompt_kind": "free_text", "decision": "escalate"}, tags=tags + ["prompt"]))
    add(screen_case("ask-waiting-for-input", lines("The migration needs a name for the new table.",
                                                  "Waiting for input"),
                    {"state": "asking", "decision": "escalate"}, tags=tags + ["prompt"]))
    add(screen_case("ask-press-enter-to-approve", lines("Tool call: write docs/usage.md", "",
                                                       "Press Enter to approve, Esc to reject"),
                    {"state": "asking", "decision": "escalate"}, tags=tags + ["prompt"],
                    note="an unknown tool's prompt: its subject is not in a shape the policy knows"))
    add(screen_case("ask-kiro-trust-tool", lines("I'll run the linter.", "", "Allow this action? Use 't' to trust "
                                                "(always allow) this tool for the session. [y/n/t]:", "",
                                                "[docs-writer] 12% λ > "),
                    {"state": "asking", "agent": "kiro"}, tags=tags + ["prompt"]))
    add(screen_case("ask-trust-all-tools", lines(RULE, " Trust all tools mode", "",
                                                " Every tool will run without asking for the rest of the session.",
                                                "", " ❯ 1. Yes, trust all tools", "   2. No", "", " Enter to confirm"),
                    escalate(), tags=tags + ["prompt", "always-escalate"], severity=3, must_pass=True))
    # --- idle ----------------------------------------------------------------------------------
    add(screen_case("idle-kiro-prompt", lines("Here are the three open issues with their owners.", "",
                                             "[docs-writer] 9% λ > "),
                    state("idle", "kiro"), tags=tags + ["idle"]))
    add(screen_case("idle-cline-style-ready", lines("┃ [plan mode] Quill is ready for your message..."),
                    state("idle"), tags=tags + ["idle"]))
    add(screen_case("idle-cursor-banner", lines("Welcome to Cursor Agent", RULE, "", "> "),
                    state("idle", "cursor"), tags=tags + ["idle"]))
    add(screen_case("idle-zsh-arrow-prompt-after-agent", lines("Tokens: 1.2k sent, 40 received.", RULE, "diff> /exit",
                                                              "", "➜  shop git:(main) ✗"),
                    state("idle"), tags=tags + ["idle"]))
    # --- blockers --------------------------------------------------------------------------------
    add(screen_case("blocked-browser-sign-in", lines("Open this link to sign in:", "https://auth.example.dev/device",
                                                    "Browser didn't open? Use the url below to sign in"),
                    state("blocked", decision="escalate", blocker="auth"), tags=tags + ["blocker"]))
    add(screen_case("blocked-push-permission-denied", lines("$ git push origin feature/cache",
                                                           "remote: Permission to acme/shop.git denied to dev-bot.",
                                                           "fatal: unable to access 'https://example.com/acme/shop.git/'"),
                    state("blocked", decision="escalate"), tags=tags + ["blocker"],
                    note="git's own fatal line is the last one; either kind sends it to a human"))
    add(screen_case("blocked-missing-key", lines("quill v0.3", "Error: QUILL_API_KEY is not set",
                                                "Set it in your shell profile and start again."),
                    state("blocked", decision="escalate", blocker="auth"), tags=tags + ["blocker"]))
    add(screen_case("blocked-status-word", lines("step 2 of 4: waiting on the schema review", "",
                                                "Status: BLOCKED until the migration is approved"),
                    state("blocked", decision="escalate"), tags=tags + ["blocker"]))
    # --- subjects, danger, writes ---------------------------------------------------------------
    add(screen_case("subject-create-file-inline", lines("⏺ Write(docs/usage.md)", "", RULE, " Create file docs/usage.md",
                                                       "", " Do you want to create usage.md?", " ❯ 1. Yes", "   2. No",
                                                       "", " Esc to cancel"),
                    approve([["1"], ["Enter"]], "edit_approval", "claude"), tags=tags + ["subject"]))
    add(screen_case("subject-codex-edit-list", lines("› update the docs", "", "  Would you like to make the following "
                                                    "edits?", "", "  docs/usage.md (+6 -2)", "",
                                                    "› 1. Yes, proceed (y)", "  2. No, and tell Codex what to do "
                                                    "differently (esc)", "", "  Press enter to confirm or esc to cancel"),
                    approve([["y"], ["1"], ["Enter"]], "edit_approval", "codex"), tags=tags + ["subject"]))
    add(screen_case("subject-command-line", lines("Quill wants to run a command.", "", "Command: make docs", "",
                                                 "Allow this command?", "❯ 1. Yes", "  2. No"),
                    approve([["1"]], "tool_permission"), tags=tags + ["subject"]))
    add(screen_case("danger-history-wipe", lines("Quill wants to run a command.", "", "Command: shred -u notes.txt", "",
                                                "Allow this command?", "❯ 1. Yes", "  2. No"),
                    escalate(None, None, "dangerous"), tags=tags + ["danger"], severity=5, must_pass=True))
    for name, path in (("user-config", "~/.config/quill/settings.toml"), ("git-config", "~/.gitconfig"),
                       ("package-manager-config", "~/.npmrc"), ("code-hooks", ".git/hooks/pre-push"),
                       ("agent-permissions", ".claude/settings.local.json")):
        add(screen_case(f"write-{name}", lines(f"⏺ Write({path})", "", RULE, " Create file", f" {path}", "",
                                               f" Do you want to create {path.rsplit('/', 1)[-1]}?", " ❯ 1. Yes",
                                               "   2. No", "", " Esc to cancel"),
                        escalate("edit_approval", "claude", "dangerous"), tags=tags + ["write"], severity=5,
                        must_pass=True))
    # a production configuration inside the project: what a deployment reads, so a human looks first
    add(screen_case("write-production-config", lines("⏺ Write(config/production.yml)", "", RULE, " Create file",
                                                     " config/production.yml", "",
                                                     " Do you want to create production.yml?", " ❯ 1. Yes",
                                                     "   2. No", "", " Esc to cancel"),
                    escalate("edit_approval", "claude", "unknown"), tags=tags + ["write"], severity=4))
    # --- where agents show their directory -------------------------------------------------------
    for name, header in (("claude-cwd-header", " cwd: /home/dev/shop"), ("codex-directory-header", "directory: ~/shop")):
        add(screen_case(f"write-placed-by-{name}", lines(header, "", "⏺ Write(/home/dev/shop/docs/usage.md)", "", RULE,
                                                       " Create file", " /home/dev/shop/docs/usage.md", "",
                                                       " Do you want to create usage.md?", " ❯ 1. Yes", "   2. No",
                                                       "", " Esc to cancel"),
                        approve([["1"], ["Enter"]], "edit_approval", "claude"), tags=tags + ["write"],
                        note="the header shows the working directory: the absolute path lands inside it"))
    # --- issue 30's agents: screens their captures have not shown -------------------------------
    add(screen_case("kilo-reject-box-after-esc", lines(
        "  ┃  please run touch", "  ┃", "     I will run a command.", "     $ touch hello.txt", "  ┃",
        "  ┃  △ Reject permission", "  ┃", "  ┃  Tell Kilo what to do differently", "  ┃",
        "  ┃" + " " * 70 + "enter confirm  esc cancel"),
        escalate(None, "kilo"), tags=tags + ["kilo"],
        note="Kilo Code's Esc opens this box (it waits for text): a question for a human"))
    add(screen_case("openhands-start-offline", lines(
        "fatal: unable to access 'https://github.com/OpenHands/extensions/': Could not resolve host: github.com",
        "  All set up!", "  What do you want to build?", "  1. Ask questions, edit files, or run commands.",
        "  2. Use @ to look up a file in the folder structure", " ╭" + "─" * 60 + "╮",
        " │ Type your message, @mention a file, or / for commands" + " " * 7 + "│", " ╰" + "─" * 60 + "╯",
        " [Ctrl+L for multi-line • Ctrl+X for custom editor] • /home/dev/shop ctx N/A • $ 0.00"),
        state("idle", "openhands"), tags=tags + ["openhands"],
        note="OpenHands cannot fetch its extensions offline (no blocker of the user's work); its welcome tips ask nothing"))
    return c


def main() -> None:
    write_suite("coverage", "Own screens for baseline patterns no other own case exercises (the shared corpus is "
                "in-sample and does not count).", coverage_suite(), defaults={"input": {"width": W, "height": 40}},
                script=Path(__file__).name)


if __name__ == "__main__":
    main()
