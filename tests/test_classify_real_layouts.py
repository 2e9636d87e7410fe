"""classify + decide on screens laid out like the real agents we captured (Claude Code 2.1,
Codex CLI 0.169, aider 0.86, bash programs; see suites/captures/). Every screen here is our own
text written in those layouts, one test per class of fix: danger over the whole command and the
lines above a shell question, shell prompts without a [y/n] marker, first-run dialogs, busy from
the title or a streaming answer, blockers in each agent's wording, agent naming, reverse video."""

from __future__ import annotations

import pytest

from supervisor.classify import classify
from supervisor.decide import counts_as_work, decide
from supervisor.models import Observation, RunState
from supervisor.policy import Policy, baseline_policy
from supervisor.screen import make_screen

RULE = "─" * 100
DASH = " " + "╌" * 98


@pytest.fixture(scope="module")
def policy() -> Policy:
    return baseline_policy()


def obs_of(text: str, policy: Policy, **kw: object) -> Observation:
    return classify(make_screen(text, width=100, height=40, **kw), policy)  # type: ignore[arg-type]


def worked() -> RunState:
    return RunState(run_id="run_t", now=100.0, started_at=0.0, last_output_at=99.0, saw_work=True)


def claude_box(*inner: str) -> str:
    return "\n".join(["", RULE, *inner])


# --- danger: every path of a recursive rm ------------------------------------------------------

CLAUDE_RM = claude_box(
    " Bash command", "", "   rm -rf dist/ lib/", "   Clear compiled output and the library folder", "",
    " Do you want to proceed?", " ❯ 1. Yes", "   2. Yes, and don't ask again for rm commands in /home/u/proj",
    "   3. No, and tell Claude what to do differently (esc)", "", " Esc to cancel · Tab to amend")
CODEX_RM = "\n".join([
    "› tidy the repo", "", "• I'll remove the generated folders.", "",
    "  Would you like to run the following command?", "", "  $ rm -rf target/ assets/", "",
    "› 1. Yes, proceed (y)", "  2. Yes, and don't ask again for this command (a)",
    "  3. No, and tell Codex what to do differently (esc)", "", "  Press enter to confirm or esc to cancel"])
AIDER_RM = "\n".join([
    "diff> clean up", "", "Removing the old output.", "", "rm -rf build/ docs/", "",
    "Tokens: 1.9k sent, 12 received.", "", "rm -rf build/ docs/",
    "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:"])


@pytest.mark.parametrize("text", [CLAUDE_RM, CODEX_RM, AIDER_RM], ids=["claude", "codex", "aider"])
def test_rm_rf_of_a_build_folder_and_a_source_folder_is_dangerous(text: str, policy: Policy) -> None:
    obs = obs_of(text, policy)
    assert obs.state == "asking"
    assert obs.prompt.risk.level == "dangerous" and "rm-recursive" in obs.prompt.risk.matched
    dec = decide(obs, worked(), policy)
    assert dec.kind == "escalate" and dec.approves is None


def test_rm_rf_of_build_folders_only_is_still_approved(policy: Policy) -> None:
    obs = obs_of(CLAUDE_RM.replace("rm -rf dist/ lib/", "rm -rf dist/ build/"), policy)
    assert obs.prompt.risk.level == "none"
    assert decide(obs, worked(), policy).keys == ["1"]


# --- danger: edits to credentials and system files (the diff preview sits between dashed rules) ----

@pytest.mark.parametrize(("path", "name"), [("/home/u/.ssh/authorized_keys", "credentials"),
                                            ("/etc/resolv.conf", "system-file-edit")])
def test_edit_of_a_sensitive_file_is_dangerous(path: str, name: str, policy: Policy) -> None:
    text = "\n".join([f"⏺ Update({path})", claude_box(
        " Edit file", f" {path}", DASH, " 1   +nameserver 10.0.0.2", DASH,
        f" Do you want to make this edit to {path.rsplit('/', 1)[1]}?", " ❯ 1. Yes",
        "   2. Yes, allow all edits during this session (shift+tab)",
        "   3. No, and tell Claude what to do differently (esc)")])
    obs = obs_of(text, policy)
    assert obs.prompt is not None and obs.prompt.kind == "edit_approval"
    assert name in obs.prompt.risk.matched
    assert decide(obs, worked(), policy).kind == "escalate"


# --- danger: a shell question approves what the lines above it say ------------------------------

@pytest.mark.parametrize("text", [
    "$ apt-get purge nano\nReading package lists... Done\nThe following packages will be REMOVED:\n  nano*\n"
    "0 upgraded, 0 newly installed, 1 to remove and 4 not upgraded.\nDo you want to continue? [Y/n] ",
    "$ pip uninstall httpx\nFound existing installation: httpx 0.27.0\nUninstalling httpx-0.27.0:\n"
    "  Would remove:\n    /srv/venv/lib/python3.11/site-packages/httpx/*\nProceed (Y/n)? ",
    "$ ./bin/wipe-cache.sh\nThis will delete every cached artefact under ./var.\nContinue? (y/n) ",
], ids=["apt-remove", "pip-uninstall", "this-will-delete"])
def test_shell_question_after_a_removal_notice_escalates(text: str, policy: Policy) -> None:
    obs = obs_of(text, policy, current_command="bash")
    assert obs.state == "asking" and obs.prompt.risk.level == "dangerous"
    dec = decide(obs, worked(), policy)
    assert dec.kind == "escalate" and dec.approves is None


def test_shell_install_question_names_the_program_it_does_not_know(policy: Policy) -> None:
    """A package manager the command table does not know (zypper): the question is escalated, and the
    reason names the program (no danger pattern matches it; approval needs positive knowledge)."""
    text = ("$ zypper install jq\nThe following NEW package is going to be installed:\n  jq\n"
            "1 new package to install.\nContinue? [Y/n] ")
    obs = obs_of(text, policy)
    assert obs.prompt is not None and obs.prompt.risk.level == "unknown", obs
    dec = decide(obs, worked(), policy)
    assert dec.kind == "escalate" and dec.keys == []
    assert "zypper is not a known command" in dec.reason


def test_a_system_package_install_question_is_escalated_as_changing_the_machine(policy: Policy) -> None:
    text = ("$ apt-get install jq\nThe following NEW packages will be installed:\n  jq\n"
            "0 upgraded, 1 newly installed, 0 to remove and 4 not upgraded.\nDo you want to continue? [Y/n] ")
    obs = obs_of(text, policy)
    assert obs.prompt.risk.level == "dangerous"
    dec = decide(obs, worked(), policy)
    assert dec.kind == "escalate" and dec.keys == []
    assert "apt-get install: changes the machine beyond the project" in dec.reason


# --- shell prompts without a [y/n] marker ---------------------------------------------------------

@pytest.mark.parametrize("text", [
    "$ rm -i draft.md\nrm: remove regular file 'draft.md'? ",
    "$ git add -p\n@@ -3,2 +3,2 @@\n-old\n+new\n(2/3) Stage this hunk [y,n,q,a,d,j,J,g,/,e,?]? ",
    "$ git clean -i\nWould remove the following items:\n  tmp1.log  tmp2.log\n*** Commands ***\n"
    "    1: clean    2: filter by pattern    3: select by numbers\nWhat now> ",
    "$ unzip site.zip\nArchive:  site.zip\nreplace index.html? [y]es, [n]o, [A]ll, [N]one, [r]ename: ",
    "$ sudo systemctl restart nginx\n[sudo] password for ana: ",
    "$ git fetch\nThe authenticity of host 'code.example.org (198.51.100.4)' can't be established.\n"
    "ED25519 key fingerprint is SHA256:abcdefghijklmnop.\n"
    "Are you sure you want to continue connecting (yes/no/[fingerprint])? ",
    "$ git push\nUsername for 'https://code.example.org': ",
    "$ npm init\nThis utility will walk you through creating a package.json file.\nversion: (1.0.0) ",
], ids=["rm-i", "git-add-p", "git-clean-i", "unzip", "sudo", "ssh-hostkey", "git-username", "npm-init"])
def test_shell_prompts_without_yn_are_asking_and_escalated(text: str, policy: Policy) -> None:
    obs = obs_of(text, policy, current_command="bash")
    assert obs.state == "asking", obs.evidence
    dec = decide(obs, worked(), policy)
    assert dec.kind == "escalate" and dec.approves is None and dec.keys == []


def test_npx_single_key_question_is_read_and_judged(policy: Policy) -> None:
    """npx's single-key question is a prompt; what it would fetch and run (cowsay) is not a command the
    policy knows, so it is escalated with that reason; a known tool's is answered."""
    obs = obs_of("$ npx cowsay hi\nNeed to install the following packages:\ncowsay@1.6.0\nOk to proceed? (y) ",
                 policy)
    assert obs.state == "asking"
    dec = decide(obs, worked(), policy)
    assert dec.kind == "escalate" and "cowsay is not a known command" in dec.reason
    obs = obs_of("$ npx prettier --check src\nNeed to install the following packages:\nprettier@3.3.3\n"
                 "Ok to proceed? (y) ", policy)
    assert decide(obs, worked(), policy).keys == ["y", "Enter"]


# --- a live prompt is at the bottom: an agent's last frame above a shell prompt is not ---------------

def test_claude_frame_above_a_shell_prompt_is_not_a_prompt(policy: Policy) -> None:
    obs = obs_of(CLAUDE_RM.replace("rm -rf dist/ lib/", "make test") + "\n\nana@host:~/proj$ ", policy)
    assert obs.state != "asking"
    assert decide(obs, worked(), policy).approves is None


# --- first-run dialogs --------------------------------------------------------------------------

def test_codex_trust_dialog_is_confirmed_with_enter(policy: Policy) -> None:
    text = "\n".join([
        "", "  Folder access", "  /home/u/proj", "",
        "  Trust this folder? Codex can read, edit, and run files here, subject to your",
        "  permission settings. Continue only if you trust these files.", "",
        "› 1. Trust and continue", "  2. Back to Agent Command Center", "", "  enter continue · esc back"])
    obs = obs_of(text, policy)
    assert obs.state == "asking" and obs.prompt.kind == "trust_dialog"
    dec = decide(obs, worked(), policy)
    assert (dec.kind, dec.keys, dec.approves) == ("answer", ["Enter"], True)  # a digit only moves the cursor
    assert not counts_as_work(obs)


def test_claude_theme_menu_with_a_preview_is_asking(policy: Policy) -> None:
    text = "\n".join([
        "  ▐▛███▜▌   *", " ▝▜█████▛▘", "", " Let's get started.", "",
        " Choose the text style that looks best with your terminal", " To change this later, run /theme", "",
        "   1. Auto (match terminal)", " ❯ 2. Dark mode ✔", "   3. Light mode", "",
        DASH, "  1  def hello():", "  2 -    print('hi')", "  2 +    print('hello')", DASH,
        "  Syntax theme: Monokai Extended (ctrl+t to disable)"])
    obs = obs_of(text, policy, current_command="claude")
    assert obs.state == "asking" and obs.prompt.kind == "numbered_menu"
    assert obs.prompt.highlighted == 1
    dec = decide(obs, RunState(), policy)
    assert (dec.kind, dec.keys) == ("answer", ["Enter"])


def test_plan_approval_is_escalated(policy: Policy) -> None:
    text = "\n".join(["⏺ Plan: add a cache layer, then wire it into the loader, then test it.", claude_box(
        " Would you like to proceed?", "", " ❯ 1. Yes, and auto-accept edits", "   2. Yes, and manually approve edits",
        "   3. No, keep planning")])
    dec = decide(obs_of(text, policy), worked(), policy)
    assert dec.kind == "escalate" and dec.approves is None


# --- busy ---------------------------------------------------------------------------------------

CODEX_IDLE_BOX = "\n".join(["", "  >_ OpenAI Codex (v0.169.0)", "", "› explain the loader", "",
                            "• The loader reads", "", "› Ask Codex to do anything", "",
                            "  ← for agents · ? for shortcuts"])


CODEX_DONE_BOX = CODEX_IDLE_BOX.replace("• The loader reads", "• The loader reads the config once.\n\n  Worked for 2s")


def test_codex_streaming_shows_only_a_title_spinner(policy: Policy) -> None:
    """While text streams in, Codex spins only its pane title; with the title lost, an answer that
    stops mid-sentence with no "Worked for" line after it is still coming in (issue 10 §4)."""
    assert obs_of(CODEX_IDLE_BOX, policy, title="⠹ proj").state == "busy"
    assert obs_of(CODEX_IDLE_BOX, policy, title="proj").state == "busy"
    assert obs_of(CODEX_DONE_BOX, policy, title="proj").state == "idle"


AIDER_HEAD = "\n".join(["Aider v0.86.2", "Main model: anthropic/claude-sonnet-4-5 with diff edit format",
                        "Git repo: .git with 3 files", RULE])


def test_aider_waiting_and_streaming_are_busy(policy: Policy) -> None:
    waiting = AIDER_HEAD + "\ndiff> explain main.py\n\n\n    ░█   Waiting for anthropic/claude-sonnet-4-5"
    streaming = AIDER_HEAD + "\ndiff> explain main.py\n\nmain.py parses the flags and then"
    for text in (waiting, streaming):
        obs = obs_of(text, policy, current_command="python3")
        assert (obs.state, obs.agent) == ("busy", "aider"), obs.evidence
    done = streaming + " runs the job.\n\nTokens: 1.1k sent, 40 received.\n" + RULE + "\nmain.py\ndiff> "
    assert obs_of(done, policy, current_command="python3").state == "idle"


# --- blockers -----------------------------------------------------------------------------------

def _aider_error(*lines: str) -> str:
    return AIDER_HEAD + "\nmain.py\ndiff> hello\n\n" + "\n".join(lines) + "\n\n" + RULE + "\nmain.py\ndiff> "


@pytest.mark.parametrize(("text", "kind"), [
    (_aider_error("litellm.AuthenticationError: AnthropicException - invalid x-api-key",
                  "The API provider is not able to authenticate you. Check your API key."), "auth"),
    (_aider_error("litellm.RateLimitError: RateLimitError: too many requests",
                  "The API provider has rate limited you. Try again later or check your quotas."), "rate_limit"),
    (_aider_error("litellm.NotFoundError: model claude-x not found"), "model_unavailable"),
])
def test_aider_errors_above_its_prompt_are_blockers(text: str, kind: str, policy: Policy) -> None:
    obs = obs_of(text, policy, current_command="python3")
    assert (obs.state, obs.agent) == ("blocked", "aider")
    assert obs.blocker.kind == kind
    assert decide(obs, worked(), policy).kind == "escalate"


def test_aider_between_retries_is_busy_not_blocked(policy: Policy) -> None:
    err = ["litellm.RateLimitError: RateLimitError: too many requests",
           "The API provider has rate limited you. Try again later or check your quotas."]
    text = AIDER_HEAD + "\ndiff> hello\n\n" + "\n".join(err + ["Retrying in 0.5 seconds..."] + err
                                                         + ["Retrying in 1.0 seconds..."])
    assert obs_of(text, policy, current_command="python3").state == "busy"
    assert obs_of(_aider_error(*err), policy, current_command="python3").state == "blocked"  # it gave up


def _claude_turn(reply: str) -> str:
    return "\n".join(["❯ run the tests", "", reply, "", "✻ Baked for 1s", "", RULE, "❯ ", RULE, "  ? for shortcuts"])


@pytest.mark.parametrize(("reply", "kind"), [
    ("● API Error: Request rejected (429) · This request would exceed the rate limit for your organization",
     "rate_limit"),
    ("● There's an issue with the selected model (claude-x). It may not exist or you may not have access to it.",
     "model_unavailable"),
    ("  ⎿  Not logged in · Please run /login", "auth"),
])
def test_claude_errors_of_the_last_turn_are_blockers(reply: str, kind: str, policy: Policy) -> None:
    obs = obs_of(_claude_turn(reply), policy)
    assert obs.state == "blocked" and obs.blocker.kind == kind


def test_claude_error_followed_by_a_newer_turn_is_history(policy: Policy) -> None:
    text = _claude_turn("● API Error: Request rejected (429) · over the limit").replace(
        "  ? for shortcuts", "").rstrip()
    text = text.rsplit("\n", 2)[0] + "\n❯ try again\n\n● All 12 tests pass.\n\n" + RULE + "\n❯ \n" + RULE
    assert obs_of(text, policy).state == "idle"


def test_prose_about_an_error_is_not_a_blocker(policy: Policy) -> None:
    reply = ("⏺ The session cookie expired, so every request after an hour got back a plain\n"
             "  401 Unauthorized. I now refresh the cookie before it expires.")
    assert obs_of(_claude_turn(reply), policy).state == "idle"


@pytest.mark.parametrize(("line", "kind"), [
    ("■ unexpected status 401 Unauthorized: invalid key, url: http://127.0.0.1:9/v1/responses", "auth"),
    ("■ You’ve hit your usage limit. Try again later.", "usage_limit"),
    ("■ exceeded retry limit, last status: 429 Too Many Requests", "rate_limit"),
    ("■ The model `gpt-x` does not exist or you do not have access to it.", "model_unavailable"),
])
def test_codex_square_errors_are_blockers(line: str, kind: str, policy: Policy) -> None:
    text = "\n".join(["  >_ OpenAI Codex (v0.169.0)", "", "› hello", "", "", line, "", "", "",
                      "› Ask Codex to do anything", "", "  ← for agents · ? for shortcuts"])
    obs = obs_of(text, policy)
    assert (obs.state, obs.agent) == ("blocked", "codex")
    assert obs.blocker.kind == kind


def test_agent_that_died_of_a_network_error_is_escalated(policy: Policy) -> None:
    text = ("\n Unable to connect to Anthropic services\n\n Failed to connect to api.anthropic.com: ECONNREFUSED\n\n"
            " Please check your internet connection.\n\n\nPane is dead (status 1, Sun Nov 22 06:00:00 2026)")
    obs = obs_of(text, policy, dead=True, current_command="claude")
    assert (obs.state, obs.agent) == ("exited", "claude")
    assert obs.blocker is not None and obs.blocker.kind == "network"
    dec = decide(obs, worked(), policy)
    assert dec.kind == "escalate" and "network" in (dec.next_action or "")
    plain = obs_of("bye\n\nPane is dead (status 0)", policy, dead=True)
    assert decide(plain, worked(), policy).kind == "finish"


# --- agent naming: a model name is not the agent ---------------------------------------------------

def test_aider_with_a_claude_model_is_aider(policy: Policy) -> None:
    obs = obs_of(AIDER_HEAD + "\ndiff> ", policy)
    assert (obs.state, obs.agent) == ("idle", "aider")


def test_opencode_with_a_claude_model_is_opencode(policy: Policy) -> None:
    text = "\n".join(["  Reading the config.", "", "  ■■■■⬝⬝⬝⬝  esc interrupt", "", "┃", "┃  Ask anything...",
                      "┃", "┃  Build  Claude Opus 4.1 Anthropic"])
    obs = obs_of(text, policy)
    assert (obs.state, obs.agent) == ("busy", "opencode")


# --- reverse video: the only mark of opencode's selected option ---------------------------------------

def _opencode_panel(command: str, selected: int) -> str:
    labels = ["Allow once", "Allow always", "Reject"]
    row = "   ".join(f"\x1b[7m {x} \x1b[27m" if i == selected else x for i, x in enumerate(labels))
    return "\n".join(["  Checking the tree.", "", "  △ Permission required", "    # List files", f"    $ {command}",
                      "", "  " + row, "", "  ⇆ select  enter confirm  esc dismiss"])


def test_opencode_selected_option_comes_from_reverse_video(policy: Policy) -> None:
    obs = obs_of(_opencode_panel("ls -la src", 0), policy)
    assert (obs.state, obs.agent) == ("asking", "opencode")
    assert obs.prompt.highlighted == 0 and obs.prompt.options[0].label == "Allow once"
    dec = decide(obs, worked(), policy)
    assert (dec.kind, dec.keys, dec.approves) == ("answer", ["Enter"], True)
    moved = obs_of(_opencode_panel("ls -la src", 2), policy)
    assert moved.prompt.highlighted == 2
    dec = decide(moved, worked(), policy)  # "Reject" selected: no key we can be sure of reaches "Allow once"
    assert dec.kind == "escalate" and dec.keys == []


def test_opencode_panel_command_is_the_risk_subject(policy: Policy) -> None:
    obs = obs_of(_opencode_panel("rm -rf ~/work/site", 0), policy)
    assert obs.prompt.risk.level == "dangerous"
    assert decide(obs, worked(), policy).kind == "escalate"


def test_plain_text_without_reverse_video_cannot_pick_an_option() -> None:
    """Without reverse video and without the agent's first_option_selected knowledge, no option
    is known to be selected: nothing is sent."""
    from supervisor.policy import parse_policy

    unsure = parse_policy("agents:\n  opencode: {first_option_selected: false}\n")
    obs = obs_of(_opencode_panel("ls", 0).replace("\x1b[7m", "").replace("\x1b[27m", ""), unsure)
    assert obs.prompt.highlighted is None
    assert decide(obs, worked(), unsure).kind == "escalate"


# --- what counts as work --------------------------------------------------------------------------

def test_counts_as_work(policy: Policy) -> None:
    assert counts_as_work(obs_of(CLAUDE_RM, policy))  # a tool permission: the agent is on the task
    assert counts_as_work(obs_of(CODEX_IDLE_BOX, policy, title="⠹ proj"))
    assert not counts_as_work(obs_of(CODEX_DONE_BOX, policy))
    first_run = AIDER_HEAD + "\nAdd .aider* to .gitignore (recommended)? (Y)es/(N)o [Yes]: "
    assert not counts_as_work(obs_of(first_run, policy))


def test_a_percentage_footer_under_a_dialog_is_not_a_shell_prompt(policy: Policy) -> None:
    text = CLAUDE_RM.replace("rm -rf dist/ lib/", "make test") + "\n  Context left until auto-compact: 7%"
    obs = obs_of(text, policy)
    assert obs.state == "asking"
    assert decide(obs, worked(), policy).keys == ["1"]


def test_a_long_word_after_a_parenthesised_letter_does_not_backtrack(policy: Policy) -> None:
    """The aider y/n parser once took exponential time on "(y)" + a long word + "[" (20+ s for a
    40-letter word): an agent's output must never hang the supervisor. Without the fix this test
    does not finish."""
    line = "Notes (y)" + "a" * 60 + "! see [1] (n)o"
    obs = obs_of(f"$ cat notes\n{line}\n$ ", policy)
    assert obs.state == "idle"


def test_a_stream_redrawn_line_by_line_is_busy(policy: Policy) -> None:
    """aider's live view in tmux, once its banner and prompt scrolled away: the growing answer
    line printed again and again, and nothing else (a supervised run once 'finished' here)."""
    grow = ["The parser", "The parser reads", "The parser reads each", "The parser reads each token"]
    text = "\n".join(grow[:1] * 3 + grow + grow[-1:] * 5)
    assert obs_of(text, policy, current_command="python3").state == "busy"
    assert obs_of("ok\nok\nok\nok\nok", policy, current_command="python3").state == "idle"  # no growth
    assert obs_of(text + "\n$ ", policy, current_command="bash").state == "idle"


def _gemini(body: str, stale: str = "") -> str:
    """Gemini CLI's layout: output, its composer between rules, the footer naming the directory;
    ``stale`` rows below the footer are what a resize leaves on screen (it does not clear)."""
    return (f"{body}\n\n\n{RULE}\n >   Type your message or @path/to/file\n{RULE}\n"
            " ~/work/app (main)          no sandbox (see /docs)          gemini-pro (98% context left)\n" + stale)


STALE = "\n".join([" ~/work/app (main)   no sand", "box   gemini-pro", "", "   │", "│ (Press Enter to submit)",
                   "   │", "╰" + "─" * 60, "─" * 20 + "╯", " ~/work/app (main)          no sandbox", "", ""])


@pytest.mark.parametrize("stale", ["", STALE], ids=["clean", "stale-rows-below"])
def test_gemini_rows_left_below_its_footer_by_a_resize_are_not_read(stale: str, policy: Policy) -> None:
    """An auth error above the composer is a blocker, a spinner above it is busy, a finished turn is
    idle, whatever debris of an earlier width (a dialog's hint, box edges, footer copies) lies below
    the footer."""
    error = " > hello\n\n✕ [API Error: 401 UNAUTHENTICATED: Incorrect API key provided]"
    obs = obs_of(_gemini(error, stale), policy, current_command="gemini")
    assert (obs.agent, obs.state) == ("gemini", "blocked") and obs.blocker.kind == "auth"
    busy = obs_of(_gemini(" > hello\n\n✦ Let me look a\n\n ⠋ Thinking... (esc to cancel, 4s)", stale), policy,
                  current_command="gemini")
    assert busy.state == "busy"
    idle = obs_of(_gemini(" > hello\n\n✦ Done: the tests pass.", stale), policy, current_command="gemini")
    assert idle.state == "idle"
    # its title says it works while text streams in with the spinner out of sight
    streaming = obs_of(_gemini(" > hello\n\n✦ Let me look a", stale), policy, current_command="gemini",
                       title="✦  Working… (app)")
    assert streaming.state == "busy"


NOTICE = f"""\
● Running a command
  ⎿  $ python3 -m pytest -q

{RULE[:60]}
  The safety check is not reachable from this session

  You can keep going and approve each action yourself, or switch
  to another mode.

  Enter to keep going · shift+Tab to switch to another mode and
  stop · Esc to cancel
"""


def test_a_dialog_hint_wrapped_onto_the_last_line_is_still_a_dialog(policy: Policy) -> None:
    """A narrow pane wraps a dialog's hint line in two: it is still read as a dialog waiting, whose
    one option is what its hint says Enter does ("Keep going": neither an approval nor a refusal,
    so it needs no subject); the same two lines quoted in a message with the composer back below
    them are not a dialog."""
    obs = obs_of(NOTICE, policy, current_command="claude")
    assert obs.state == "asking" and obs.prompt is not None
    assert [(o.label, o.key, o.approves) for o in obs.prompt.options] == [("Keep going", "Enter", None)]
    assert obs.prompt.risk.level == "none" and not decide(obs, worked(), policy).approves
    quoted = NOTICE + f"\n● That notice is gone now.\n\n{RULE}\n❯ \n{RULE}\n  ? for shortcuts\n"
    assert obs_of(quoted, policy, current_command="claude").state == "idle"


SPLASH_MENU = """\
 Welcome to Some Agent v9.9
 ....................................

        *          ░░░▓▓███
    ░░░░░░░          ███▓░

 Let's get started.

 Pick the colours that suit your terminal
 You can change them later with /colours

 ❯ 1. Match the terminal
   2. Dark colours
   3. Light colours
"""


def test_a_menu_under_a_splash_screen_is_asked_in_words_and_approves_nothing(policy: Policy) -> None:
    """With no frame around it and no question mark, a first-run menu's question is the first line
    of words in the lines just above its options (never the splash art); none of its options
    approves, so it needs no subject (risk none). The same menu offering "Yes" approves something
    it does not name: unknown, and never approved."""
    obs = obs_of(SPLASH_MENU, policy)
    assert obs.state == "asking" and obs.prompt is not None
    assert obs.prompt.question == "Let's get started."
    assert obs_of(SPLASH_MENU.replace(" Let's get started.\n\n", ""), policy).prompt.question == (
        "Pick the colours that suit your terminal")
    assert not any(o.approves for o in obs.prompt.options)
    assert (obs.prompt.risk.level, obs.prompt.risk.subject) == ("none", None)
    yes = obs_of(SPLASH_MENU.replace("Match the terminal", "Yes, go ahead"), policy)
    assert yes.prompt is not None and yes.prompt.options[0].approves
    assert yes.prompt.risk.level == "unknown" and not decide(yes, worked(), policy).approves


def test_gemini_box_fragments_below_its_dialog_after_a_resize_are_not_read(policy: Policy) -> None:
    """With its dialog drawn last (no composer, no footer), what a resize leaves below the dialog's
    bottom edge (its hint row cut off on one side, lone edges) is not read: the dialog is still the
    live prompt (a key to type: a human's). Text below a box is not debris, and gets no key."""
    def row(text: str) -> str:
        return f"│ {text:<57}│"

    box = "\n".join(["╭" + "─" * 58 + "╮", row("Enter Deploy Token"), row(""),
                     row("Paste the token for the staging cluster."), "│ ╭" + "─" * 54 + "╮ │",
                     "│ │ " + f"{'tok-from-env':<53}" + "│ │", "│ ╰" + "─" * 54 + "╯ │", row(""),
                     row("(Press Enter to submit, Esc to cancel)"), row(""), "╰" + "─" * 58 + "╯"])
    debris = "\n".join(["│ (Press Enter to submit, Esc to cancel)", "                              │", "│",
                        "                              │", "╰" + "─" * 70, "─" * 30 + "╯"])
    obs = obs_of(box + "\n" + debris, policy, current_command="gemini")
    assert obs.state == "asking" and obs.prompt is not None and obs.prompt.kind == "free_text"
    assert decide(obs, worked(), policy).keys == []
    text = obs_of(box + "\n✦ I will wait for your token above.\n" + debris, policy, current_command="gemini")
    assert not decide(text, worked(), policy).keys


def _gemini_box(*rows: str) -> str:
    return "\n".join(["╭" + "─" * 66 + "╮", *(f"│ {r:<65}│" for r in rows), "╰" + "─" * 66 + "╯"])


def test_a_url_is_the_subject_only_of_a_dialog_about_one(policy: Policy) -> None:
    """A web-fetch dialog approves the URL it names; a shell dialog whose command was not found is
    not approved because a docs link sits in it (that URL is not what it would run)."""
    fetch = _gemini_box("?  WebFetch Fetch the release notes", "", "URLs to fetch:",
                        " - https://example.org/releases/2.0.html", "", "Do you want to proceed?", "",
                        "● 1. Yes, allow once", "  2. No, suggest changes (esc)")
    obs = obs_of(fetch, policy, current_command="gemini")
    assert obs.prompt is not None and obs.prompt.risk.subject_kind == "url"
    assert decide(obs, worked(), policy).approves
    shell = _gemini_box("Allow execution of [Shell]?", "Learn more: https://docs.example.org/shell-tool", "",
                        "● 1. Allow once", "  2. No, suggest changes (esc)")
    obs = obs_of(shell, policy, current_command="gemini")
    assert obs.prompt is not None and obs.prompt.risk.level == "unknown" and obs.prompt.risk.subject is None
    dec = decide(obs, worked(), policy)
    assert dec.kind == "escalate" and not dec.keys
