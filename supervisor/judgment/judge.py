"""The command judgment: approve only what is positively known safe.

:func:`judge_command` parses a command line (:mod:`supervisor.judgment.shell`), unwraps every simple
command (``env``, ``timeout``, ``xargs``, ``find -exec``, ``sh -c`` ...), looks each program and
subcommand up in the policy's command table (:class:`~supervisor.policy.CommandKnowledge`), gives each
argument its role, places every path it reads, writes or deletes against the pane's directory (and
any ``cd`` before it), and rates the whole as its riskiest part:

- ``none``/``low``: every part is in the table, known safe, and every path it touches is placed
  where the policy allows (writes inside the project or a scratch folder, deletions only of what is
  recoverable, reads inside the project or of harmless places);
- ``unknown``: some part is not known: a program or form not in the table, a name or path built at
  run time, inline code, a path that cannot be placed, text that does not parse or hides characters;
- ``dangerous``: some part is known to be dangerous (its effect, or a path it touches).

The reason names the part that decided. Danger patterns stay a second veto over the raw text in the
classifier; this judgment never depends on one having matched.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from supervisor.judgment.paths import HARMLESS_TARGETS, git_restorable, inside, live_root, place, real_path
from supervisor.judgment.shell import ParsedCommand, SimpleCommand, Word, lookalike_characters, parse_command
from supervisor.models import RiskLevel
from supervisor.policy import ArgPattern, CommandKnowledge, CommandSpec, Effect, FlagSpec
from supervisor.redact import issued_credentials
from supervisor.regexes import policy_regex

_ORDER: dict[str, int] = {"none": 0, "low": 1, "unknown": 2, "dangerous": 3}
LOST = "\0lost"
"""The directory after a ``cd`` that cannot be followed: no path after it can be placed."""
MAX_DEPTH = 6
"""How deep wrappers and ``sh -c`` strings are followed before the rest is ``unknown``."""


class Searcher(Protocol):
    def search(self, text: str) -> object | None: ...


@dataclass(frozen=True)
class PartJudgment:
    """One simple command (or one path of it) and how it was judged."""

    text: str
    """The simple command as written."""
    level: RiskLevel
    reason: str
    """Why this level, naming the part that decided (``redis-cli is not a known command``)."""
    rule: str
    """What decided: ``table:git status``, ``unknown-program``, ``write-outside-project``, a path rule's name."""
    effects: tuple[str, ...] = ()


@dataclass(frozen=True)
class CommandJudgment:
    """The judgment of a whole command line."""

    level: RiskLevel
    parts: tuple[PartJudgment, ...]
    reason: str
    """The riskiest part's reason, with that part quoted."""
    inert: tuple[str, ...] = ()
    """Words of the command, as written, that are data by the table (a message, a search pattern, text
    printed, a variable's value, a here-string): nothing runs them. Where every part is known safe, the
    danger patterns do not veto on these alone (``git commit -m "fix rm -rf detection"``)."""

    @property
    def matched(self) -> list[str]:
        """The rules that made it risky (for :class:`~supervisor.models.RiskAssessment.matched`)."""
        return list(dict.fromkeys(p.rule for p in self.parts if _ORDER[p.level] >= _ORDER["unknown"]))


@dataclass(frozen=True)
class PathRule:
    name: str
    level: RiskLevel
    pattern: Searcher


@dataclass
class Knowledge:
    """A policy's command table, compiled once per policy (the classifier memoizes it)."""

    table: CommandKnowledge
    path_rules: list[PathRule]
    """The policy's write-risk paths: risky wherever they are (shell startup files, ``~/.ssh``)."""
    outside_level: RiskLevel
    names: dict[str, str] = field(default_factory=dict)
    recoverable: re.Pattern[str] | None = None
    harmless_reads: re.Pattern[str] | None = None
    scratch: re.Pattern[str] | None = None
    secrets: re.Pattern[str] | None = None
    secret_urls: re.Pattern[str] | None = None
    local_services: re.Pattern[str] | None = None
    not_local_services: re.Pattern[str] | None = None
    known_vars: tuple[tuple[str, str], ...] = ()
    env_values: dict[str, re.Pattern[str]] = field(default_factory=dict)

    def unsafe_setting(self, name: str, value: Word | None) -> bool:
        """Whether setting ``name`` (to ``value``, as written) may change what programs run or load:
        it is one of the policy's ``unsafe_env`` and its value is not one ``env_values`` calls harmless."""
        if name not in self.table.unsafe_env:
            return False
        if name == "PATH" and value is not None and _PATH_SYSTEM_FIRST.fullmatch(value.raw):
            return False
        if name == "PATH" and value is not None and _PATH_APPENDED.fullmatch(value.raw) and not any(
                d.strip('"').startswith(("/tmp", "/var/tmp", "/dev/shm")) for d in value.raw.split(":")[1:]):
            # `PATH=$PATH:~/.local/bin`: folders searched after today's, so what is found today stays; not a
            # scratch folder (what is written there needs no human, so a program could be planted there)
            return False
        rx = self.env_values.get(name)
        return rx is None or value is None or value.dynamic or rx.search(value.text) is None

    @classmethod
    def compile(cls, table: CommandKnowledge, path_rules: list[PathRule], outside_level: RiskLevel) -> Knowledge:
        names = {name: name for name in table.programs}
        for name, spec in table.programs.items():
            for other in spec.also:
                names.setdefault(other, name)
        return cls(table=table, path_rules=path_rules, outside_level=outside_level, names=names,
                   recoverable=_alternation(table.recoverable), harmless_reads=_alternation(table.harmless_reads),
                   scratch=_alternation(table.scratch), secrets=_alternation(table.secrets),
                   secret_urls=_alternation(table.secret_urls), local_services=_alternation(table.local_services),
                   not_local_services=_alternation(table.not_local_services), known_vars=tuple(sorted(table.known_vars.items())),
                   env_values={name: policy_regex(f"^(?:{rx})$") for name, rx in table.env_values.items()})


def _alternation(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """The policy's patterns as one, on the policy regex engine (linear time where it can)."""
    return policy_regex("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def judge_command(text: str, knowledge: Knowledge, *, cwd: str, dirname: str = "") -> CommandJudgment:
    """Judge a command line an agent would run in ``cwd`` (the project). See the module docstring."""
    parsed = parse_command(text, knowledge.known_vars)
    ctx = _Context(knowledge, cwd, dirname, live_root(cwd), parsed)
    for problem in parsed.problems:
        ctx.add(text, "unknown", problem, "unparsed")
    ctx.line(parsed, cwd, 0)
    if found := issued_credentials(text):
        # a token written out in the command (`git clone https://ghp_...@github.com/x`) is a secret wherever it
        # goes: the remote's config, the shell's history, the transcript the agent's provider keeps
        ctx.add(text, knowledge.table.effects.get("secrets", "dangerous"),
                f"carries a credential written out in it ({found[0].replace('_', ' ')})", "credential-in-command",
                ["secrets"])
    return ctx.result(text)


@dataclass
class _Args:
    """A command's arguments as the table reads them."""

    roles: list[tuple[str, Word]] = field(default_factory=list)
    base: list[Effect] = field(default_factory=list)
    """The command's (or subcommand's) own effects, or what an option ``sets`` them to."""
    added: list[Effect] = field(default_factory=list)
    """Effects options and argument patterns add."""
    @property
    def effects(self) -> list[Effect]:
        return list(dict.fromkeys(self.base + self.added))

    nested: list[tuple[list[Word], str]] = field(default_factory=list)
    """Commands it runs in turn (argv, why), from a ``command`` role or an option's."""
    code: list[Word] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    form: str = ""
    inline: str | None = None
    find_roots: list[str] | None = None
    names: list[str] = field(default_factory=list)
    """For a command with ``{}`` placeholders (find -exec): the names its ``-name`` options give."""
    found: list[str] = field(default_factory=list)
    """Roles of what the command finds, from options that act on each (``find -delete``: delete)."""
    project_args: bool = False
    """Its plain arguments are the project's own program's (the spec's ``project_args``)."""
    shows_paths: bool = False
    """Its plain arguments may name files whose contents it prints (the spec's ``shows_paths``)."""


class _Context:
    def __init__(self, k: Knowledge, cwd: str, dirname: str, root: str | None, parsed: ParsedCommand) -> None:
        self.k = k
        self.cwd = cwd
        self.dirname = dirname
        self.root = root
        self.parsed = parsed
        self.parts: list[PartJudgment] = []
        self.written: dict[str, str] = {}
        self.made: set[str] = set()
        self.files_only = False
        """The command being judged deletes files only (``rm`` without ``-r``/``-d``): a folder of the same
        name, where a redirect to it failed, is refused."""
        """Paths a part of the line replaced whole, so far, as files (a ``>`` redirect's target, ``sed -i.bak``'s
        backup), never one only added to or touched. Where that part failed (the path is a folder), a later
        ``rm`` of it without ``-r`` fails too: only such a deletion counts them (``files_only``)."""
        """Paths this command line writes (placed, normalised) -> the part that writes them."""
        self.ran: dict[str, str] = {}
        """Paths this command line runs as a program or script -> the part that runs them."""
        self.inert: list[str] = [w.raw for w in parsed.here_strings if not w.dynamic]

    # --- the results -------------------------------------------------------------------------
    def add(self, text: str, level: RiskLevel, reason: str, rule: str, effects: Iterable[str] = ()) -> None:
        self.parts.append(PartJudgment(text=_clip(text), level=level, reason=reason, rule=rule,
                                       effects=tuple(dict.fromkeys(effects))))

    def result(self, text: str) -> CommandJudgment:
        for path in self.ran.keys() & self.written.keys():
            # `echo ... > x.sh && sh x.sh`: what runs is code this very line wrote, and nobody read it
            self.add(self.ran[path], self.k.table.effects.get("code", "unknown"),
                     f"runs {path}, which this same command writes (code nobody has read)", "runs-what-it-writes",
                     ["code"])
        if not self.parts:
            self.add(text, "unknown", "no command found in the text", "unparsed")
        worst = max(self.parts, key=lambda p: _ORDER[p.level])
        level: RiskLevel = worst.level
        inert = tuple(dict.fromkeys(x for x in self.inert if len(x.strip()) >= 2)) if _ORDER[level] <= 1 else ()
        return CommandJudgment(level=level, parts=tuple(self.parts), reason=f"`{worst.text}`: {worst.reason}",
                               inert=inert)

    # --- walking -------------------------------------------------------------------------------
    def line(self, parsed: ParsedCommand, cwd: str, depth: int) -> None:
        for i, cmd in enumerate(parsed.commands):
            names = _environment_filtered(cmd, parsed.commands[i + 1] if i + 1 < len(parsed.commands) else None)
            if names:
                self.add(cmd.text, "none", f"prints only {', '.join(names)} of the environment (the grep after it "
                         "lets nothing else through)", "environment-filtered", ["read"])
                continue
            self.simple(cmd, cwd, depth)

    def simple(self, cmd: SimpleCommand, base_cwd: str, depth: int) -> None:
        cwd = self.move(base_cwd, cmd.cd)
        for name, value in cmd.assignments:
            if not value.dynamic:
                self.inert.append(value.raw)
            if self.k.unsafe_setting(name, value):
                self.add(cmd.text, "unknown", f"sets {name}, which changes what programs run", "unsafe-env")
            if _DATABASE_ENV_NAME.search(name) and (value.dynamic or not _LOCAL_DATABASE.fullmatch(value.text)):
                # `DATABASE_URL="<the deployed one>" npx ts-node prisma/seed.ts`: what it changes is that database's
                self.add(cmd.text, "unknown", f"sets {name} to a database not on this machine "
                         f"({value.raw[:40]!r}): what the command changes there is not known", "remote-database")
        empty = not cmd.words or (not cmd.words[0].dynamic and cmd.words[0].text in (":", "true", "false")) or (
            [w.text for w in cmd.words] == ["echo"]) or (
            cmd.words[0].text == "cat" and len(cmd.words) > 1 and all(w.text == "/dev/null" for w in cmd.words[1:]))
        for red in cmd.redirects:
            # `: > f`, a bare `> f`, `cat /dev/null > f`: nothing is written, the file is emptied
            op = "truncate" if empty and red.op in (">", ">|", "&>") else red.op
            self.redirect(cmd.text, op, red.target, red.fd_dup, cwd)
        if not cmd.words:
            if not cmd.redirects and not any(self.k.unsafe_setting(n, v) for n, v in cmd.assignments):
                self.add(cmd.text, "none", "sets a shell variable", "assignment", ["none"])
            return
        stdin_inside = self.stdin_places(cmd, cwd)
        piped = cmd.stdin_from is not None or cmd.stdin_text or any(r.op == "<" for r in cmd.redirects)
        before = len(self.parts)
        self.argv(list(cmd.words), cmd.text, cwd, depth, stdin_inside=stdin_inside, piped=piped)
        prod = next((f"{n}={v.text}" for n, v in cmd.assignments if not v.dynamic and _DEPLOY_ENV_NAME.search(n)
                     and _PRODUCTION.search(v.text)), None)
        if prod and any(set(p.effects) & {"write", "delete", "install", "send", "network"} for p in self.parts[before:]):
            # `RAILS_ENV=production bin/rails db:migrate`: what it changes is production's
            self.add(cmd.text, "unknown", f"runs with {prod}: what it changes is production's", "production-env")

    def move(self, cwd: str, steps: Sequence[Word]) -> str:
        """The directory after each ``cd`` in ``steps``; :data:`LOST` when one cannot be followed."""
        for w in steps:
            if cwd == LOST:
                return LOST
            if w.dynamic or w.glob or w.text == "-" or w.text.startswith("$"):
                return LOST
            if not cwd:
                if w.text.startswith(("/", "~")) or posixpath.normpath(w.text).startswith(".."):
                    return LOST
                continue  # a subfolder of a project whose directory is not known: still inside it
            where, shown = place(w.text, cwd, self.dirname, screen_text=False)
            if where == "unknown":
                return LOST
            full = w.text
            if full == "~" or full.startswith("~/"):
                cwd = shown if shown.startswith("/") else shown
            elif full.startswith("/"):
                cwd = posixpath.normpath(full)
            else:
                cwd = posixpath.normpath(posixpath.join(cwd, full))
        return cwd

    def stdin_places(self, cmd: SimpleCommand, cwd: str) -> bool:
        """Whether what is piped into ``cmd`` is a list of paths inside the project: the command before
        it only reads, and every path it reads is inside (``find . -name '*.py' | xargs wc -l``)."""
        chain = list(cmd.stdin_chain)
        while len(chain) > 1 and self.filters_lines(chain[-1]):
            chain.pop()  # `git ls-files | grep '\\.py$' | xargs ...`: grep passes on some of git's lines
        return bool(chain) and self.lists_paths_inside(chain[-1], cwd)

    def filters_lines(self, words: Sequence[Word]) -> bool:
        """Whether ``words`` run a ``line_filters`` program on its standard input only, with only the
        options that keep each line it prints one of its input's lines."""
        if not words or words[0].dynamic:
            return False
        prog = posixpath.basename(words[0].text)
        allowed = self.k.table.line_filters.get(prog)
        if allowed is None:
            return False
        given, by_option = 0, False  # plain arguments; a pattern given by option (`grep -e PAT`)
        i = 1
        while i < len(words):
            w = words[i]
            if w.dynamic or w.glob:
                return False
            name, eq, _ = w.text.partition("=")
            if w.text.startswith("-") and len(w.text) > 1:
                if f"{name}=" in allowed:  # an option with a value (`-n 20`, `-e PAT`, `--max-count=5`)
                    by_option = by_option or name in ("-e", "--regexp")
                    i += 1 if eq else 2
                    continue
                if w.text not in allowed:
                    return False
            else:
                given += 1
            i += 1
        patterns = prog in ("grep", "egrep", "fgrep", "rg")
        return given == (1 if patterns and not by_option else 0)

    def substitution_lists_inside(self, w: Word, cwd: str) -> bool:
        """A word that is exactly one command substitution of a path lister reading inside the project
        (``wc -l $(git ls-files '*.py')``): the paths it expands to are inside too."""
        m = _WHOLE_SUBSTITUTION.fullmatch(w.raw)
        if m is None:
            return False
        inner = parse_command(m.group(1), self.k.known_vars)
        if inner.problems or len(inner.commands) != 1:
            return False
        (cmd,) = inner.commands
        if cmd.redirects or cmd.assignments or cmd.cd or cmd.stdin_from is not None or cmd.stdin_text:
            return False
        return self.lists_paths_inside(cmd.words, cwd)

    def lists_paths_inside(self, words: Sequence[Word], cwd: str) -> bool:
        """Whether the command ``words`` prints a list of paths inside the project (a path lister that
        only reads, every path it reads inside; ``echo`` of plain words inside)."""
        if not words or words[0].dynamic:
            return False
        if words[0].text == "echo" and len(words) > 1 and all(not w.dynamic and not w.glob for w in words[1:]):
            # `echo a.txt b.txt | xargs ...`: the items are the words it prints
            items = [w for w in words[1:] if not w.text.startswith("-")]
            return bool(items) and all(place(w.text, cwd, self.dirname, screen_text=False)[0] == "inside"
                                       for w in items)
        name = self.k.names.get(posixpath.basename(words[0].text))
        spec = self.k.table.programs.get(name) if name else None
        if spec is None:
            return False
        args = self.read_args(spec, list(words[1:]), posixpath.basename(words[0].text))
        paths = [w for role, w in args.roles if role in ("read", "names")]
        if args.unknown or args.nested or args.code or set(args.effects) != {"read"}:
            return False
        with_option = self.k.table.path_listers_with.get(args.form) or self.k.table.path_listers_with.get(name or "")
        if with_option is not None and any(not w.dynamic and w.text in with_option for w in words[1:]):
            pass  # `git diff --name-only main...HEAD`, `grep -rl TODO src`: only paths
        elif args.form not in self.k.table.path_listers and name not in self.k.table.path_listers:
            return False  # `cat list.txt | xargs cat`: the items are whatever the file says
        if not paths:
            return True  # find, ls, git ls-files with no path: the working directory
        return all(not w.dynamic and place(w.text, cwd, self.dirname, screen_text=False)[0] == "inside"
                   for w in paths)

    def argv(self, words: list[Word], text: str, cwd: str, depth: int, *, stdin_inside: bool = False,
             piped: bool = False, extra: Word | None = None) -> None:
        """Judge one program run with ``words`` (``extra``: a word appended at run time, from xargs)."""
        if depth > MAX_DEPTH:
            self.add(text, "unknown", "commands nested too deep to follow", "too-deep")
            return
        head = words[0]
        if head.dynamic:
            self.add(text, "unknown", f"the program name {head.raw!r} is built at run time", "dynamic-program")
            return
        odd = lookalike_characters(head.text)
        if odd:
            self.add(text, "unknown", f"the program name {head.text!r} has look-alike characters: {', '.join(odd)}",
                     "look-alike")
            return
        if head.raw != head.text and any(c in head.raw for c in "'\"\\"):
            # `s''h x`, `\rm`, `"rm" -rf`: nobody quotes a program's name but to slip it past a reader;
            # what it runs is judged too (its reason is the one shown when it is as risky)
            self.argv([Word(head.text, head.text, glob=head.glob), *words[1:]], text, cwd, depth,
                      stdin_inside=stdin_inside, piped=piped, extra=extra)
            self.add(text, "unknown", f"the program name is written {head.raw!r} (quoted or escaped)",
                     "quoted-program")
            return
        prog = head.text
        if "/" in prog and prog not in self.k.names:
            resolved = self.program_path(prog, cwd)
            if resolved is None and posixpath.basename(prog) in self.k.names and \
                    place(prog, cwd, self.dirname, screen_text=False)[0] == "inside":
                resolved = posixpath.basename(prog)  # the project's own gradlew, manage.py: the table's entry
            if resolved is None:
                if _REMOTE_PROGRAM.match(prog):
                    self.add(text, self.k.table.effects.get("code", "unknown"),
                             f"runs {prog!r}, code fetched from elsewhere (nobody has read it)", "remote-program",
                             ["code"])
                    return
                if not _PROGRAM_PATH.fullmatch(prog) or posixpath.basename(prog) in ("", ".", ".."):
                    self.add(text, "unknown", f"{prog!r} is not a program's path", "unknown-program")
                    return
                where, shown, real = self.placed(Word(prog, prog), cwd)
                if where == "inside":
                    self.ran[self.key(shown, real)] = text
                    named = self.project_program_named(prog, text) or self.project_args_named(prog, words[1:], text)
                    if not named:
                        self.add(text, "none", f"runs {prog}, a program of the project", "project-program", ["run"])
                    self.check_args_read(words[1:], text, cwd)
                elif real is not None and posixpath.dirname(real) in _SYSTEM_BIN \
                        and posixpath.basename(real) in self.k.names:
                    # a link inside the project to a system program (`./x` -> /usr/bin/rm): that program
                    self.argv([Word(posixpath.basename(real), posixpath.basename(real)), *words[1:]], text, cwd,
                              depth + 1, stdin_inside=stdin_inside, piped=piped, extra=extra)
                else:
                    self.add(text, "unknown", f"runs {shown}, a program outside the project", "program-outside")
                return
            prog = resolved
        if prog in self.parsed.functions:
            self.add(text, "none", f"calls the shell function {prog} (its body is judged)", "function", ["none"])
            return
        if prog in ("cargo", "rustc", "rustdoc") and len(words) > 1 and _TOOLCHAIN.fullmatch(words[1].text):
            words = [words[0], *words[2:]]  # `cargo +nightly test`: rustup's toolchain, then the command
        name = self.k.names.get(prog)
        if name is None and (pinned := _PINNED.fullmatch(prog)):
            name = self.k.names.get(pinned.group(1))  # `npx shadcn@latest add`: the package at a version
        spec = self.k.table.programs.get(name) if name else None
        if spec is None:
            self.add(text, "unknown", f"{prog} is not a known command", "unknown-program")
            return
        args = words[1:] + ([extra] if extra is not None else [])
        self.judge_spec(spec, prog, args, text, cwd, depth, stdin_inside=stdin_inside, piped=piped)

    def project_program_named(self, prog: str, text: str) -> bool:
        """A project program whose file name says what it does (``./deploy.sh``): judged by that
        (the table's ``project_programs``); False when no pattern names it."""
        got = self.named_by_file(prog)
        if got is not None:
            self.add(text, *got)
        return got is not None

    def project_args_named(self, prog: str, args: Sequence[Word], text: str) -> bool:
        """A project program or script given an argument that says it ships or wipes something
        (``python setup.py sdist upload``, ``./manage.py deploy``, ``init_db.py --drop-all``): the table's
        ``project_program_args`` (options too: a pattern anchored at a word's start names its dashes)."""
        for w in args:
            if w.dynamic:
                continue
            for ap in self.k.table.project_program_args:
                if policy_regex(ap.pattern).search(w.text):
                    self.add(text, *self.pattern_verdict(ap, f"runs {prog} {w.text}: ", "by that argument it",
                                                         "an argument of a project program that is not known safe",
                                                         "project-program-args"))
                    return True
        return False

    def named_by_file(self, prog: str) -> tuple[RiskLevel, str, str, list[Effect]] | None:
        """What the table's ``project_programs`` say of a project program or script: by its file name, or,
        for a pattern with a ``/`` in it, by its path as written (``.github/scripts/x.py`` is a CI job's)."""
        base = posixpath.basename(prog).lower()
        if _TEST_FILE.search(base):
            return None  # a test of the project (`release_tests.py`, `deploy.test.ts`) runs the tests
        path = prog.lower().removeprefix("./")
        for ap in self.k.table.project_programs:
            if policy_regex(ap.pattern).search(path if "/" in ap.pattern else base):
                return self.pattern_verdict(ap, f"runs {prog}, ", "a program of the project that by its name",
                                            "a program of the project whose name is not known safe",
                                            "project-program-named")
        return None

    def pattern_verdict(self, ap: ArgPattern, what: str, by: str, not_known: str,
                        rule: str) -> tuple[RiskLevel, str, str, list[Effect]]:
        """(level, reason, rule, effects) of a project program that ``ap`` names (``what`` ends with its
        separator): unknown, or running the project's code with ``ap``'s effects added."""
        if ap.unknown:
            return ("unknown", f"{what}{not_known}", rule, ["run"])
        effects: list[Effect] = ["run", *ap.does]
        lvl = max((self.k.table.effects.get(e, "unknown") for e in effects), key=lambda x: _ORDER[x])
        words = ", ".join(_EFFECT_WORDS.get(e, e) for e in ap.does)
        return (lvl, f"{what}{by} {words}", f"effect:{ap.does[0] if ap.does else 'run'}", effects)

    def sed_backups(self, words: list[Word], args: _Args, cwd: str) -> None:
        """``sed -i.bak ... f``: the backup ``f.bak`` it makes, whole, of each file it edits (see ``made``)."""
        suffix = next((w.text[2:] if w.text.startswith("-i") else w.text.split("=", 1)[1] for w in words
                       if not w.dynamic and ((w.text.startswith("-i") and len(w.text) > 2)
                                             or w.text.startswith("--in-place="))), "")
        if not suffix or "*" in suffix or "/" in suffix:
            return
        for role, w in args.roles:
            if role in ("write", "replace") and not w.dynamic and not w.glob:
                where, shown, real = self.placed(Word(w.text + suffix, w.raw + suffix), cwd)
                if where == "inside":
                    self.made.add(self.key(shown, real))

    def program_path(self, prog: str, cwd: str) -> str | None:
        """A program named by path: a system program's name (``/usr/bin/rm`` -> ``rm``), else None."""
        d, base = posixpath.split(prog)
        return base if d in _SYSTEM_BIN else None

    @staticmethod
    def key(shown: str, real: str | None) -> str:
        """One name for a placed path, to tell that two parts touch the same file."""
        return real or posixpath.normpath(shown)

    def judge_spec(self, spec: CommandSpec, prog: str, words: list[Word], text: str, cwd: str, depth: int,
                   *, stdin_inside: bool, piped: bool) -> None:
        if spec.inline == "sed":
            words = _bsd_in_place(words)
        args = self.read_args(spec, words, prog)
        form = args.form or prog
        if spec.inline == "sed":
            self.sed_backups(words, args, cwd)
        spec_inline = args.inline
        if args.unknown:
            self.add(text, "unknown", args.unknown[0], "unknown-form")
            return
        effects: list[Effect] = args.effects
        # inline code: a shell's is a command line judged in turn; a Python one-liner that only
        # imports and prints is the project's code; any other is code nobody has read
        for code in args.code:
            if code.dynamic:
                effects.append("code")
                self.add(text, "unknown", f"{form} runs code built at run time", "dynamic-code", ["code"])
                return
            if spec_inline == "shell":
                nested = parse_command(code.text, self.k.known_vars)
                self.line(nested, cwd, depth + 1)
                for problem in nested.problems:
                    self.add(code.text, "unknown", problem, "unparsed")
                effects = [e for e in effects if e != "code"] or ["none"]
            elif spec_inline in _READERS and (opened := _READERS[spec_inline](code.text)) is not None:
                # it only reads, computes and prints: the files it opens are judged like any command's reads
                effects = [e for e in effects if e != "code"] or ["none"]
                if not {"write", "delete"} & set(effects):
                    self.inert.append(code.raw)  # its strings are data (`sed -i` edits: what it writes may be vetoed)
                args.roles.extend(("read", Word(path, repr(path))) for path in opened)
            elif spec_inline in _HARMLESS and _HARMLESS[spec_inline](code.text):
                effects = [e for e in effects if e != "code"] or ["none"]
                if not {"write", "delete"} & set(effects):
                    # read and found only to print: its strings are data. (One that edits files in place is
                    # what the command does: a danger pattern may still look at it.)
                    self.inert.append(code.raw)
            else:
                what = "SQL that does more than read" if spec_inline == "sql" else "inline code"
                self.add(text, self.k.table.effects.get("code", "unknown"),
                         f"{form} runs {what} ({_clip(code.text, 60)!r})", "inline-code", ["code"])
                return
        script_role = any(r.rstrip("*") == "script" for r in spec.args) or any(
            f.value == "script" for f in spec.flags.values())
        scripts = [w for role, w in args.roles if role == "script" and w.text != "-"]
        if any(role == "script" and w.text == "-" for role, w in args.roles):
            piped = True
        if script_role and piped and not scripts and not args.code and not args.nested and "code" not in effects:
            # an interpreter with no script and no code runs what is piped into it
            self.add(text, self.k.table.effects.get("code", "unknown"),
                     f"{form} runs the code piped into it", "stdin-code", ["code"])
            return
        if (script_role and not piped and not scripts and not args.code and not args.nested and "code" not in effects
                and all(not w.dynamic and w.text in _SESSION_FLAGS for w in words)):
            # `sh`, `python`, `docker exec -it ctr bash`: a session whose commands are typed into it later,
            # where no dialog shows them
            self.add(text, "unknown", f"starts an interactive {form} (what is typed into it is not shown here)",
                     "interactive-session")
            return
        for w in scripts:
            rest = words[words.index(w) + 1:] if w in words else []
            self.project_args_named(w.text, rest, text)
            self.check_arg_paths(rest, text, cwd)
        if args.project_args:
            self.project_args_named(form, [w for role, w in args.roles if role == "text"], text)
        levels: list[tuple[RiskLevel, str, str]] = []
        if args.shows_paths and self.k.secrets is not None:
            for role, w in args.roles:
                path = w.text.rsplit(":", 1)[-1] if not w.dynamic else ""  # `HEAD:.env`: the file at a revision
                if role == "text" and path and self.k.secrets.search(path.removeprefix("./")):
                    levels.append((self.k.table.effects.get("secrets", "dangerous"),
                                   f"{form} shows {w.text}, which holds secrets", "read-secrets"))
                    break
        # a variable whose name says it holds a secret, expanded into a command's arguments: over the network
        # (`curl -H "Authorization: Bearer $PROVIDER_KEY" https://...`) the secret goes with it; anywhere else
        # (`echo $GITHUB_TOKEN`) it ends on the screen, in the transcript or in a file
        sent = [m for w in words if w.dynamic for m in _VARIABLE.findall(w.raw) if _SECRET_NAME.search(m)]
        if sent:
            net = bool({"network", "send"} & set(effects))
            levels.append((self.k.table.effects.get("secrets", "dangerous"),
                           f"{form} {'sends' if net else 'prints or passes on'} ${sent[0]}, a secret by its name"
                           + (", over the network" if net else ""), "secret-sent"))
        if "send" in effects and self.sends_locally(args, words):
            local: list[Effect] = [e for e in effects if e != "send"]
            effects = [*local, "network"]
        for effect in dict.fromkeys(effects):
            lvl = self.k.table.effects.get(effect, "unknown")
            levels.append((lvl, f"{form}: {_EFFECT_WORDS.get(effect, effect)}", f"effect:{effect}"))
        roles = self.symlink_targets(args.roles, words, cwd) if any(r == "link" for r, _ in args.roles) else args.roles
        if any(r == "move" for r, _ in roles):
            # `mv src /tmp/trash`: what moves out of the project is gone from it
            away = any(r in ("write", "replace") and self.placed(w, cwd)[0] != "inside" for r, w in roles)
            roles = [("delete" if away else "write", w) if r == "move" else (r, w) for r, w in roles]
        if any(r == "replace" for r, _ in roles):
            if self.root is not None:
                roles = self.into_folder(roles, cwd)
            else:
                levels.extend(self.merge_not_placed(roles, form))
        # `rm f` / `unlink f` delete a file only (a folder is refused): what `made` holds is then that file
        self.files_only = prog in ("rm", "unlink") and not any(
            not w.dynamic and (w.text in ("--recursive", "--dir", "-d") or (
                w.text.startswith("-") and not w.text.startswith("--") and ("r" in w.text or "R" in w.text or "d" in w.text)))
            for w in words)
        for role, w in roles:
            got = self.role(role, w, cwd, stdin_inside)
            if got is not None:
                levels.append(got)
        worst = max(levels, key=lambda x: _ORDER[x[0]]) if levels else ("none", f"{form}: does nothing", "table")
        if _ORDER[worst[0]] <= _ORDER["low"]:
            self.add(text, worst[0], f"{form}: known ({', '.join(dict.fromkeys(effects)) or 'none'})",
                     f"table:{form}", effects)
        else:
            self.add(text, worst[0], worst[1], worst[2], effects)
        for argv, why in args.nested:
            if not argv:
                self.add(text, "unknown", f"{why} with no command", "unknown-form")
                continue
            extra = None
            if why == "uv run" and not argv[0].dynamic and argv[0].text.endswith(".py"):
                argv = [Word("python", "python"), *argv]  # `uv run main.py` runs the script with Python
            elif why == "uv run" and any(w.text in ("-m", "--module") for w in _before(words, argv[0])):
                argv = [Word("python", "python"), Word("-m", "-m"), *argv]  # `uv run -m pytest`: a module
            if spec.inline == "python" and self.project_module(argv, text, cwd):
                continue
            if why == "xargs":
                extra = Word("./<stdin>", "<stdin>") if stdin_inside else Word("<stdin>", "<stdin>", dynamic=True)
                replace = _xargs_replace(words)
                if replace is not None:  # `xargs -I {} cp {} dest/`: each item stands where {} is
                    argv = [Word(w.text.replace(replace, extra.text), w.raw, dynamic=w.dynamic or extra.dynamic,
                                 glob=w.glob) if replace in w.text else w for w in argv]
                    extra = None
            # in a container its relative paths are the container's working directory's, which only a
            # mount may make the project's: none of them can be placed
            where = LOST if why in _IN_CONTAINER else cwd
            self.argv(argv, text, where, depth + 1, extra=extra, stdin_inside=stdin_inside)

    def project_module(self, argv: list[Word], text: str, cwd: str) -> bool:
        """``python -m pkg.cli ...`` where ``pkg`` is a package or module of the project (looked at live:
        ``pkg/`` or ``pkg.py`` in the directory it runs in, or under ``src/``) and not a program the table
        knows: the project's own code, like a script of the project (judged by its name and arguments)."""
        import os

        head = argv[0]
        if head.dynamic or head.glob or self.root is None or cwd == LOST or head.text in self.k.names \
                or not _MODULE.fullmatch(head.text):
            return False
        top = head.text.split(".")[0]
        for base in ("", "src"):
            where, _, real = self.placed(Word(posixpath.join(base, top) if base else top, top), cwd)
            if where != "inside" or real is None:
                continue
            if os.path.isdir(real) or os.path.isfile(real + ".py"):
                rel = head.text.replace(".", "/")
                named = self.project_program_named(rel + ".py", text) or self.project_args_named(rel, argv[1:], text)
                if not named:
                    self.add(text, "none", f"runs {head.text}, a module of the project", "project-module", ["run"])
                self.check_args_read(argv[1:], text, cwd)
                return True
        return False

    def merge_not_placed(self, roles: list[tuple[str, Word]], form: str) -> list[tuple[RiskLevel, str, str]]:
        """With no file system to look at: a folder's contents put over another folder's (``cp -r
        other/src/. web/src/``, ``mv build/* out/``) replace files nobody can name; unknown, unless every
        destination is a folder the policy calls recoverable."""
        rec = self.k.recoverable
        if all(r != "replace" or (rec is not None and rec.search(w.text)) for r, w in roles):
            return []
        merged = next((w for r, w in roles if r in ("read", "write") and not w.dynamic
                       and (w.text.rstrip("/").endswith(("/.", "/*")) or w.text.rstrip("/") in (".", "*"))), None)
        if merged is None:
            return []
        return [("unknown", f"{form} puts what {merged.text} holds over what its destination holds "
                 "(the files it would replace cannot be looked at)", "overwrite-not-placed")]

    def into_folder(self, roles: list[tuple[str, Word]], cwd: str) -> list[tuple[str, Word]]:
        """A copy or move whose destination is a folder that exists (looked at live) replaces what it
        holds of the same names: ``cp -r other/src/. web/src/`` overwrites each file of ``web/src`` that
        ``other/src`` has too. The destination becomes those paths (a source's contents when it ends in
        ``/.``; the folder itself when a source is a glob, dynamic, or too big to list)."""
        import os

        out: list[tuple[str, Word]] = []
        sources = [w for r, w in roles if r in ("read", "write")]
        for r, w in roles:
            if r != "replace" or w.dynamic or w.glob or cwd == LOST:
                out.append((r, w))
                continue
            where, _, dest = self.placed(w, cwd)
            if where != "inside" or dest is None or not os.path.isdir(dest) or (
                    self.k.table.git_restorable and self.root is not None and git_restorable(self.root, dest)):
                out.append((r, w))  # not a folder; or one git gives back whole: no file of it needs a look
                continue
            names: list[str] | None = []
            for src in sources:
                if src.dynamic or src.glob or names is None:
                    names = None
                    break
                text = src.text.rstrip("/") or "/"
                if text == "." or text.endswith("/."):
                    src_real = self.placed(Word(text, text), cwd)[2]
                    try:
                        entries = os.listdir(src_real) if src_real is not None else []
                    except OSError:
                        entries = []
                    if len(entries) > 500:
                        names = None
                        break
                    names.extend(entries)
                else:
                    names.append(posixpath.basename(text))
            if names is None:
                out.append((r, w))
                continue
            out.extend((r, Word(posixpath.join(w.text, n), posixpath.join(w.raw, n))) for n in dict.fromkeys(names))
        return out

    def symlink_targets(self, roles: list[tuple[str, Word]], words: list[Word], cwd: str) -> list[tuple[str, Word]]:
        """A symbolic link's relative target is read from the folder the link is in, not from here:
        ``ln -s ../shared/a.json config/a.json`` links to ``shared/a.json``. (A hard link's target is a
        path from here.) The link's folder is its destination when that is a folder (``-t DIR``, or one
        that exists), else the destination's parent."""
        symbolic = any(not w.dynamic and (w.text in ("--symbolic", "-s") or (
            w.text.startswith("-") and not w.text.startswith("--") and "s" in w.text[1:])) for w in words)
        dests = [w for r, w in roles if r == "write"]
        if not symbolic or len(dests) != 1 or dests[0].dynamic:
            return roles
        dest = dests[0].text
        into_dir = any(not w.dynamic and w.text in ("-t", "--target-directory") or w.text.startswith("--target-directory=")
                       for w in words) or dest.endswith("/")
        if not into_dir and self.root is not None and cwd != LOST:
            import os

            into_dir = os.path.isdir(real_path(self.root, cwd, dest))
        folder = dest if into_dir else posixpath.dirname(dest)
        out = []
        for r, w in roles:
            if r == "link" and not w.dynamic and folder and not w.text.startswith(("/", "~")):
                joined = posixpath.join(folder, w.text)
                w = Word(joined, w.raw, dynamic=w.dynamic, glob=w.glob)
            out.append((r, w))
        return out

    def level(self, effect: Effect) -> RiskLevel:
        return self.k.table.effects.get(effect, "unknown")

    # --- arguments ---------------------------------------------------------------------------
    def read_args(self, spec: CommandSpec, words: list[Word], prog: str = "") -> _Args:
        out = _Args(base=list(spec.does), form=prog, inline=spec.inline)
        self.read_into(spec, words, prog, out)
        return out

    def read_into(self, spec: CommandSpec, words: list[Word], form: str, out: _Args,
                  inherited: dict[str, FlagSpec] | None = None) -> None:
        """Read ``words`` as ``spec``'s options and arguments into ``out``; a subcommand's options that
        it does not list are looked up among its program's (``npm install -g``)."""
        if inherited:
            spec = spec.model_copy(update={"flags": {**inherited, **spec.flags}})
        out.project_args = out.project_args or spec.project_args
        out.shows_paths = out.shows_paths or spec.shows_paths
        positional: list[Word] = []
        after_dd: int | None = None  # how many positional arguments came before `--`
        roles = list(spec.args)
        command_at = _command_index(roles)
        i = 0
        options_done = False
        while i < len(words):
            w = words[i]
            t = w.text
            if not options_done and t == "--" and not w.dynamic:
                options_done = True
                after_dd = len(positional)
                if spec.after_double_dash is not None and i + 1 < len(words):
                    out.added.extend(spec.after_double_dash)
                i += 1
                continue
            # a wrapper's own options come first; once its fixed arguments are read (`timeout 5`), the
            # next word is the command it runs, whatever it looks like
            if not options_done and w.dynamic and self.dynamic_text_option(spec, w):
                i += 1  # `-j$(nproc)`, `--jobs=$(nproc)`: a count or a name built at run time, not a path
                continue
            if (not options_done and not w.dynamic and t.startswith("-") and len(t) > 1
                    and (not t[1].isdigit() or t in spec.flags)
                    and not (command_at is not None and command_at > 0 and len(positional) >= command_at
                             and not spec.options_until_double_dash)):
                i = self.option(spec, words, i, form, out, roles_out=roles)
                command_at = _command_index(roles)  # `command -v git` looks a name up; it runs nothing
                continue
            if spec.subcommands is not None and not positional:
                if w.dynamic:
                    out.unknown.append(f"{form}: the subcommand {w.raw!r} is built at run time")
                    return
                sub = spec.subcommands.get(t)
                rest = words[i + 1:]
                script_names = spec.subcommands[spec.scripts_as].only if spec.scripts_as in spec.subcommands else None
                if (sub is None and spec.scripts_as is not None and ("exec" in spec.subcommands or spec.bins)
                        and not w.glob
                        and (t in self.k.names or _PINNED.fullmatch(t))
                        and not (script_names is not None and policy_regex(script_names).fullmatch(t))):
                    # `pnpm wrangler whoami`, `yarn tsc --noEmit`: a program of the project's node_modules,
                    # run as `pnpm exec` runs it (judged as that program)
                    out.base = ["none"]
                    out.form = f"{form} exec" if "exec" in spec.subcommands else form
                    out.nested.append((words[i:], out.form))
                    return
                if sub is None and spec.scripts_as is not None and spec.scripts_as in spec.subcommands:
                    # `pnpm lint:fix`: the project script of that name, as `pnpm run lint:fix` runs it
                    sub, t, rest = spec.subcommands[spec.scripts_as], spec.scripts_as, words[i:]
                if sub is None:
                    out.unknown.append(f"{form} {t}: not a known {form} subcommand")
                    return
                out.base = list(sub.does)
                out.form = f"{form} {t}"
                out.inline = sub.inline or out.inline
                self.read_into(sub, rest, out.form, out, inherited=spec.flags)
                return
            if command_at is not None and len(positional) == command_at:
                rest = words[i:]
                # `env A=1 B=2 cmd`: assignments before the command
                while rest and _is_assignment(rest[0].text) and not rest[0].dynamic:
                    name, value = rest[0].text.split("=", 1)
                    if self.k.unsafe_setting(name, Word(value, value)):
                        out.unknown.append(f"{form} sets {name}, which changes what programs run")
                        return
                    rest = rest[1:]
                if spec.program_prefix and rest and not rest[0].dynamic and not rest[0].text.startswith(("@", "-")):
                    rest = [Word(spec.program_prefix + rest[0].text, spec.program_prefix + rest[0].raw), *rest[1:]]
                out.nested.append((rest, form))
                break
            positional.append(w)
            i += 1
        if spec.subcommands is not None and out.form == form and not positional:
            if len(words) == 1 and not words[0].dynamic and words[0].text in ("--version", "--help", "-V"):
                out.base = ["read"]  # `cargo --version`, `gh --help`, `pre-commit -V`: every program prints and exits
                return
            if spec.bare is None:
                out.unknown.append(f"{form} with no subcommand is not a known form")
                return
            out.base = list(spec.bare)
        elif spec.subcommands is None and spec.bare is not None and not words:
            out.base = list(spec.bare)  # the program alone (env: prints the environment)
        if spec.max_args is not None and len(positional[:after_dd]) > spec.max_args:
            out.unknown.append(f"{form} with {len(positional[:after_dd])} arguments: not a {form} form the table knows")
            return
        if spec.only is not None:
            named = positional[:after_dd]
            if spec.only_first:  # after the script's name, the files it is given (`src/a.test.tsx`)
                named = named[:1] + [w for w in named[1:] if w.dynamic or not _FILE_ARG.search(w.text)]
            for w in named:  # what follows `--` goes to the script, not the runner
                if w.dynamic or policy_regex(spec.only).fullmatch(w.text) is None:
                    out.unknown.append(f"{form} {w.text}: not a {form} form the table knows")
                    return
        for pat in spec.arg_patterns:
            rx = policy_regex(pat.pattern)
            for n, w in enumerate(positional):
                if not pat.files and n and _NAMES_FILE.search(w.text):
                    continue
                if rx.search(w.text):
                    if pat.unknown:
                        out.unknown.append(f"{form} {w.text}: not a known form of {form}")
                        return
                    out.added.extend(pat.does)
                    if pat.args is not None:
                        roles = list(pat.args)
        if out.find_roots is not None:
            self.find_placeholders(positional, out)
        out.roles.extend(zip(_assign_roles(roles, len(positional)), positional, strict=True))
        for role, w in list(out.roles):
            if role == "code":
                out.code.append(w)
            elif role == "command":
                out.nested.append(([w], form))

    @staticmethod
    def dynamic_text_option(spec: CommandSpec, w: Word) -> bool:
        """A word built at run time that is an option of ``spec`` whose value is plain text, its literal
        name written before the value (``-j$(nproc)``, ``--jobs=$(nproc)``)."""
        raw = w.raw
        if not raw.startswith("-") or len(raw) < 3:
            return False
        name = raw.split("=", 1)[0] if raw.startswith("--") and "=" in raw else raw[:2]
        if not re.fullmatch(r"--?[A-Za-z][\w-]*", name):
            return False
        fs = spec.flags.get(name)
        return fs is not None and fs.value == "text" and not fs.does and not fs.unknown and fs.sets is None

    def find_placeholders(self, roots: list[Word], out: _Args) -> None:
        """``{}`` in a command find runs stands for each file found: a path under its roots whose last
        part is what ``-name`` matched (``./**/__pycache__``), so it is placed and judged like one."""
        base = [w for w in roots if not w.text.startswith(("(", ")", "!"))] or [Word(".", ".")]
        name = out.names[-1] if len(out.names) == 1 else "{}"
        stand_ins = [Word(f"{r.text.rstrip('/')}/**/{name}", "{}", dynamic=r.dynamic, glob=True) for r in base]
        for role in out.found:
            out.roles.extend((role, w) for w in stand_ins)
        nested = []
        for argv, why in out.nested:
            if why == "placeholder":
                for stand_in in stand_ins:
                    nested.append(([stand_in if w.text == "{}" else w for w in argv], "find"))
            else:
                nested.append((argv, why))
        out.nested = nested

    def option(self, spec: CommandSpec, words: list[Word], i: int, form: str, out: _Args,
               roles_out: list[str]) -> int:
        """Read the option at ``words[i]``; returns the index after it (and its value)."""
        w = words[i]
        t = w.text
        odd = lookalike_characters(t)
        if odd:
            out.unknown.append(f"{form} {t}: the option has look-alike characters: {', '.join(odd)}")
            return len(words)
        if t.startswith("--"):
            name, eq, value = t.partition("=")
            fs = spec.flags.get(name)
            if fs is None:
                if spec.strict_flags:
                    out.unknown.append(f"{form} {name}: not a known option of {form}")
                    return len(words)
                return i + 1
            if fs.value is not None and not eq:
                if i + 1 >= len(words):
                    return i + 1
                self.apply_flag(fs, name, words[i + 1], form, out, roles_out)
                return i + 2
            self.apply_flag(fs, name, Word(value, value, dynamic=w.dynamic) if eq else None, form, out, roles_out)
            return i + 1
        fs = spec.flags.get(t)
        if fs is not None:  # a whole short option, or a long option with one dash (find -name)
            if fs.value is not None:
                if fs.value == "command":
                    end = next((j for j in range(i + 1, len(words)) if words[j].text in (";", "+")), len(words))
                    out.nested.append((words[i + 1:end], "placeholder"))
                    if out.find_roots is None:
                        out.find_roots = []
                    out.added.extend(fs.does)
                    return end + 1
                if i + 1 < len(words):
                    self.apply_flag(fs, t, words[i + 1], form, out, roles_out)
                return i + 2
            self.apply_flag(fs, t, None, form, out, roles_out)
            return i + 1
        if spec.single_dash:
            if spec.strict_flags:
                out.unknown.append(f"{form} {t}: not a known option of {form}")
                return len(words)
            return i + 1
        # combined short options (-rf), or an option with its value attached (-n5, -ofile)
        letters = t[1:]
        # a word that is not all options of the table (`killall -KILL`: -K, -I unlisted) is not read as
        # one that lowers what the command does (`-L` lists signals): its other letters may still add
        unlisted = t[1:].isalpha() and any(spec.flags.get("-" + ch) is None for ch in letters)
        for j, ch in enumerate(letters):
            fs = spec.flags.get("-" + ch)
            if fs is not None and unlisted and fs.sets is not None:
                continue
            if fs is None:
                if spec.strict_flags:
                    out.unknown.append(f"{form} -{ch}: not a known option of {form}")
                    return len(words)
                if len(t) > 2 and not t[1:].isalpha():
                    return i + 1  # an unknown option with an attached value
                continue
            if fs.value is not None:
                rest = letters[j + 1:]
                if rest:
                    self.apply_flag(fs, "-" + ch, Word(rest, rest), form, out, roles_out)
                    return i + 1
                if i + 1 < len(words):
                    self.apply_flag(fs, "-" + ch, words[i + 1], form, out, roles_out)
                return i + 2
            self.apply_flag(fs, "-" + ch, None, form, out, roles_out)
        return i + 1

    def apply_flag(self, fs: FlagSpec, name: str, value: Word | None, form: str, out: _Args,
                   roles_out: list[str]) -> None:
        harmless = (fs.harmless_values is not None and value is not None and not value.dynamic
                    and policy_regex(fs.harmless_values, re.I).fullmatch(value.text) is not None)
        if fs.harmless_values is not None and fs.value is None and value is None:
            harmless = True  # an option whose value is optional, given bare: its default (helm's `--dry-run`)
        if fs.unknown and not harmless:
            out.unknown.append(f"{form} {name}: the option makes what {form} does unknowable")
            return
        if fs.found is not None:
            out.found.append(fs.found)
            if out.find_roots is None:
                out.find_roots = []
        if not harmless:
            out.added.extend(fs.does)
        if fs.sets is not None:
            out.base = list(fs.sets)
        if fs.args is not None:
            roles_out[:] = list(fs.args)
        if fs.value is not None and value is not None:
            if fs.value == "code":
                out.code.append(value)
            elif fs.value == "command":
                out.nested.append(([value], form))
            else:
                out.roles.append((fs.value, value))
                if name in ("-name", "-iname") and not value.dynamic:
                    out.names.append(value.text)

    def sends_locally(self, args: _Args, words: list[Word]) -> bool:
        """Whether what the command sends (by an option: a request's method or data) goes only to a service
        the project runs on this machine: every URL it names a ``local_services`` one (none a ``not_local_services`` one, none built at run time),
        no DELETE asked for, no file's contents sent (``-d @.env``, ``-F f=@key``)."""
        urls = [w for role, w in args.roles if role == "url"]
        if "send" in args.base:
            return False  # a program that sends by nature (`nc host port` sends whatever it is given)
        if self.k.local_services is None or not urls or any(w.dynamic for w in urls):
            return False
        if not all(self.k.local_services.search(w.text) and not (
                self.k.not_local_services is not None and self.k.not_local_services.search(w.text)) for w in urls):
            return False
        for i, w in enumerate(words):
            if w.dynamic or w.text.startswith("@") or "=@" in w.text or "DELETE" in w.text.upper().split("=")[-1:]:
                return False
            if w.text in ("-X", "--request") and i + 1 < len(words) and words[i + 1].text.upper() == "DELETE":
                return False
            if w.text.startswith("-X") and w.text[2:].upper() == "DELETE":
                return False
        return True

    # --- placing paths -----------------------------------------------------------------------
    def role(self, role: str, w: Word, cwd: str, stdin_inside: bool) -> tuple[RiskLevel, str, str] | None:
        if role == "url":
            if w.dynamic:
                return ("unknown", f"talks to {w.raw!r}, a host or address built at run time", "dynamic-url")
            if self.k.secret_urls is not None and self.k.secret_urls.search(w.text):
                return (self.k.table.effects.get("secrets", "dangerous"),
                        f"talks to {w.text!r}, where credentials are served", "secret-url")
            return None
        if role == "text" and not w.dynamic:
            self.inert.append(w.raw)
        if role in ("text", "ignore", "code", "command"):
            return None
        if role == "include":
            return self.include_reaches_secrets(w)
        if role == "script":
            if not w.dynamic and _REMOTE_PROGRAM.match(w.text):
                # `deno run https://deno.land/x/tool/mod.ts`, `deno run npm:cowsay`: downloaded, then run
                return (self.k.table.effects.get("code", "unknown"),
                        f"runs {w.text!r}, code fetched from elsewhere (nobody has read it)", "remote-script")
            got = self.placed(w, cwd)
            if got[0] == "inside":
                self.ran[self.key(got[1], got[2])] = w.text
                named = self.named_by_file(w.text)
                return None if named is None else named[:3]
            return (self.k.table.effects.get("code", "unknown"), f"runs {got[1]}, a script outside the project",
                    "script-outside")
        if w.text == "./<stdin>":
            if role in ("read", "names"):
                return None
            return ("unknown", f"{_ROLE_WORDS[role]} the paths piped into it (not shown)", "stdin-paths")
        if w.dynamic:
            if role in ("read", "names") and self.substitution_lists_inside(w, cwd):
                return None  # the paths a path lister prints, reading inside the project
            return ("unknown", f"{_ROLE_WORDS[role]} {w.raw!r}, a path built at run time", "dynamic-path")
        odd = lookalike_characters(w.text)
        if odd and role not in ("read", "names"):
            return ("unknown", f"the path {w.text!r} has look-alike characters", "look-alike")
        if role == "read":
            return self.read_path(w, cwd)
        if role == "names":
            # `ls ~/Projects/other`, `find /opt/app -name '*.conf'`: names and sizes, not what the files
            # hold; a secret place stays what it is (`ls ~/.ssh`)
            listed = self.read_path(w, cwd)
            if listed is not None and listed[2] == "read-secrets" and _names_secret_files_only(w, self.k.secrets):
                return None  # `ls -la .env*`: which env files there are, by name; none is opened
            return None if listed is not None and listed[2] == "read-outside-project" else listed
        if role in ("write", "link", "cwd", "replace"):
            return self.write_path(w, cwd, role)
        if role == "delete":
            return self.delete_path(w, cwd)
        return ("unknown", f"an argument of role {role}", "unknown-role")

    def placed(self, w: Word, cwd: str) -> tuple[str, str, str | None]:
        """(inside | outside | unknown, the path as shown, its real path when looked at live)."""
        if cwd == LOST:
            return "unknown", w.text, None
        path = w.text
        if cwd != self.cwd and not path.startswith(("/", "~")):
            path = posixpath.join(cwd, path)  # after a cd: the same file, named from the project
        where, shown = place(path, self.cwd, self.dirname, screen_text=False)
        real = None
        if self.root is not None and where != "unknown" and self.cwd.startswith("/"):
            real = real_path(self.root, self.cwd, shown if shown.startswith("~") else path)
            if where == "inside" and not inside(self.root, real):
                return "outside", f"{shown} (a link to {real})", real
        return where, shown, real

    def path_rule(self, shown: str, raw: str) -> PathRule | None:
        for rule in self.k.path_rules:
            if rule.pattern.search(shown) is not None or rule.pattern.search(raw) is not None:
                return rule
        return None

    def read_path(self, w: Word, cwd: str) -> tuple[RiskLevel, str, str] | None:
        if w.text in HARMLESS_TARGETS or w.text.startswith("/dev/fd/") or w.text == "-":
            return None
        where, shown, real = self.placed(w, cwd)
        for candidate in (shown, w.text, real or ""):
            if candidate and self.k.secrets is not None and self.k.secrets.search(candidate):
                return ("dangerous", f"reads {shown}, which holds secrets", "read-secrets")
        if w.glob and self.k.secrets is not None:
            hit = self.glob_reaches_secrets(w.text, real)
            if hit:
                return ("dangerous", f"reads {shown}, which can match {hit} (it holds secrets)", "read-secrets")
        if where == "inside":
            return None
        if where == "unknown":
            return ("unknown", f"reads {shown}, which cannot be placed", "read-not-placed")
        target = real or shown
        if self.k.harmless_reads is not None and (self.k.harmless_reads.search(shown)
                                                  or self.k.harmless_reads.search(target)):
            return None
        return ("unknown", f"reads {shown}, outside the project", "read-outside-project")

    def include_reaches_secrets(self, w: Word) -> tuple[RiskLevel, str, str] | None:
        """A pattern of the names of the files a search reads (``--include='*.env*'``): matched against each
        name, hidden ones too (a search's patterns match dot files), it can select where secrets are kept."""
        if w.dynamic:
            return ("unknown", f"reads the files named {w.raw!r}, a pattern built at run time", "dynamic-path")
        pattern = w.text
        if pattern.startswith("!") or self.k.secrets is None:
            return None  # `rg -g '!*.env'`: the files it leaves out
        for name in (*_SECRET_DOT_NAMES, *_SECRET_NAMES):
            matches = fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern.rsplit("/", 1)[-1])
            if matches and (self.k.secrets.search(name) or self.k.secrets.search(name + "/x")):
                return ("dangerous", f"reads the files named {pattern!r}, which can be {name} (it holds secrets)",
                        "read-secrets")
        if self.k.secrets.search(pattern.replace("*", "x").replace("?", "x")):
            return ("dangerous", f"reads the files named {pattern!r}, which hold secrets", "read-secrets")
        return None

    def glob_reaches_secrets(self, pattern: str, real: str | None) -> str:
        """A glob that can match a secret: ``cat .e*`` reads ``.env``, ``~/.ss*/id*`` a key. Each part of
        the pattern is tried against the names secrets are kept under (a hidden part against the hidden
        ones; one with a plain start, ``cred*``, against the others); live, the glob is also expanded and
        what it matches now is looked at. The secret it reaches, or ''."""
        secrets = self.k.secrets
        assert secrets is not None
        parts = pattern.split("/")
        for i, part in enumerate(parts):
            if not any(c in part for c in "*?["):
                continue
            names = _SECRET_DOT_NAMES if part.startswith(".") else (() if part[:1] in "*?[" else _SECRET_NAMES)
            for name in names:
                if fnmatch.fnmatchcase(name, part):
                    reached = "/".join([*parts[:i], name])
                    if secrets.search(reached) or secrets.search(reached + "/x"):
                        return reached
        wild = sum(1 for part in parts if any(c in part for c in "*?["))
        if real is not None and "**" not in real and wild <= _GLOB_LOOK_PARTS:
            # live: the pattern placed through the links that exist (`real`), where expanding it looks
            # into a few folders only (a `**`, or wildcards in many parts, could walk the whole disk)
            import glob as globbing

            for n, found in enumerate(globbing.iglob(real)):
                if n >= _GLOB_LOOK_LIMIT:
                    break
                if secrets.search(found):
                    return found
        return ""

    def write_path(self, w: Word, cwd: str, role: str) -> tuple[RiskLevel, str, str] | None:
        if w.text in HARMLESS_TARGETS:
            return None
        verb = _ROLE_WORDS[role]
        where, shown, real = self.placed(w, cwd)
        if role != "cwd":
            self.written[self.key(shown, real)] = w.text
        rule = self.path_rule(shown, real or w.text)
        if rule is not None:
            return (rule.level, f"{verb} {shown} ({rule.name})", rule.name)
        if where == "inside":
            if role == "replace" and real is not None and self.root is not None and not w.glob:
                lost = self.replaces_unrestorable(real, cwd, w)
                if lost:
                    return ("unknown", f"overwrites {lost}, which nothing can restore", "overwrite-not-recoverable")
            return (self.level("write"), f"{verb} {shown}", "write-inside")
        if where == "unknown":
            return ("unknown", f"{verb} {shown}, which cannot be placed", "write-not-placed")
        if role == "cwd":
            return self.read_path(w, cwd)
        if role in ("write", "replace") and not w.glob and (
                self.scratch(real or shown)
                # `cp notes.txt /tmp/`: a scratch folder itself as the destination gets a new name in it
                or self.scratch(posixpath.join(real or shown, "x"))):
            return (self.level("write"), f"{verb} {shown} (scratch)", "write-scratch")
        if real is not None and shown.startswith("/") and real != posixpath.normpath(shown) and " (a link to " not in shown:
            shown = f"{shown} (a link to {real})"
        return (self.k.outside_level, f"{verb} {shown}, outside the project", "write-outside-project")

    def scratch(self, target: str) -> bool:
        """Whether ``target`` is in one of the policy's scratch places (``/tmp/x.log``) and shares no
        folder there with the project: where the project itself lives under /tmp, its neighbours there
        (``/tmp/ws/other-project/notes.md``) are someone's work, not scratch; where the project's place
        is not known (a screen read without its pane's directory), nothing is."""
        project = self.root or self.cwd
        if self.k.scratch is None or not target.startswith("/") or not project.startswith("/") \
                or not self.k.scratch.search(target):
            return False
        common = posixpath.commonpath([posixpath.normpath(target), posixpath.normpath(project)])
        return common == "/" or self.k.scratch.search(common + "/") is None

    def replaces_unrestorable(self, real: str, cwd: str, w: Word) -> str:
        """For a write that replaces ``real`` (looked at live): the file it would lose, if that file
        exists and neither the policy calls it recoverable nor git could give it back; else ''."""
        import os

        if not os.path.exists(real) or self.root is None:
            return ""
        rel = os.path.relpath(real, self.root)
        if self.k.recoverable is not None and self.k.recoverable.search(rel):
            return ""
        if self.k.table.git_restorable and git_restorable(self.root, real):
            return ""
        return rel

    def delete_path(self, w: Word, cwd: str) -> tuple[RiskLevel, str, str] | None:
        where, shown, real = self.placed(w, cwd)
        rule = self.path_rule(shown, real or w.text)
        if rule is not None:
            return (rule.level, f"deletes {shown} ({rule.name})", rule.name)
        if where == "unknown":
            return ("unknown", f"deletes {shown}, which cannot be placed", "delete-not-placed")
        if where == "outside":
            return ("dangerous", f"deletes {shown}, outside the project", "delete-outside-project")
        base = posixpath.normpath(place(self.cwd, self.cwd, screen_text=False)[1]) if self.cwd else ""
        full = posixpath.normpath(shown)
        if base and full.startswith("~") == base.startswith("~"):
            rel = posixpath.relpath(full, base)
        else:
            rel = posixpath.normpath(posixpath.join(cwd, w.text)) if cwd and not self.cwd else posixpath.normpath(w.text)
        if rel in (".", "") or rel == "./":
            return ("dangerous", "deletes the whole project", "delete-project")
        rel = rel.removeprefix("./")
        if self.k.recoverable is not None and self.k.recoverable.search(rel):
            return (self.level("delete"), f"deletes {rel} (recoverable: build output or a cache)", "delete-recoverable")
        if self.files_only and not w.glob and self.key(shown, real) in self.made:
            # `cmd > out.txt; ...; rm out.txt`, `sed -i.bak ... f && rm f.bak`: an earlier part of the line
            # replaced that file whole; deleting it loses only what the line itself made
            return (self.level("delete"), f"deletes {rel} (a file an earlier part of the line made)", "delete-made")
        if (self.k.table.git_restorable and self.root is not None and real is not None and not w.glob
                and git_restorable(self.root, real)):
            return (self.level("delete"), f"deletes {rel} (tracked by git and unchanged: git can restore it)",
                    "delete-git-restorable")
        return ("unknown", f"deletes {rel}, which nothing can restore", "delete-not-recoverable")

    def redirect(self, text: str, op: str, target: Word, fd_dup: bool, cwd: str) -> None:
        if fd_dup:
            return
        if op.startswith("<") and op not in ("<>",):
            got = self.role("read", target, cwd, False)
        elif op == "truncate":
            got = self.role("delete", target, cwd, False)
        else:
            got = self.role("write" if ">>" in op else "replace", target, cwd, False)
            if ">>" not in op and not target.dynamic and not target.glob and target.text not in HARMLESS_TARGETS:
                where, shown, real = self.placed(target, cwd)
                if where == "inside":
                    self.made.add(self.key(shown, real))
        if got is None:
            self.add(text, "none", f"redirects to {target.text}", "redirect", ["none"])
        else:
            self.add(text, got[0], got[1], got[2], ["write" if not op.startswith("<") else "read"])

    def check_args_read(self, words: Sequence[Word], text: str, cwd: str) -> None:
        """A project program's arguments that name files: none may hide a path built at run time, and one
        that names a path outside the project (``~/.ssh/id_rsa``, ``--in=/etc/x``) is read as by any reader:
        secrets are dangerous, anything not harmless to read is not known safe."""
        for w in words:
            if w.dynamic:
                self.add(text, "unknown", f"an argument {w.raw!r} is built at run time", "dynamic-path")
                return
        self.check_arg_paths(words, text, cwd)

    def check_arg_paths(self, words: Sequence[Word], text: str, cwd: str) -> None:
        """Arguments of a project program or script that name a path outside the project, read as by any
        reader (its secrets dangerous, what is not harmless to read not known safe)."""
        for w in words:
            if w.dynamic:
                continue
            value = w.text.split("=", 1)[1] if w.text.startswith("-") and "=" in w.text else w.text
            if value.startswith(("/", "~", "..")) and "://" not in value:
                got = self.read_path(Word(value, value, glob=w.glob), cwd)
                if got is not None:
                    self.add(text, got[0], f"passes {value}: {got[1]}", got[2])


_TOOLCHAIN = re.compile(r"\+[\w.-]+")
_PATH_APPENDED = re.compile(r'"?\$(PATH|\{PATH\})(:(~|\$HOME|\$\{HOME\})?[\w./+@-]*)+"?')
"""A ``PATH`` that is today's with folders after it."""
_PATH_SYSTEM_FIRST = re.compile(r'"?((/usr/local/go|/usr/lib/go(-[\d.]+)?|/usr/lib/jvm/[\w.-]+|/usr|)/s?bin:)+\$(PATH|\{PATH\})"?')
"""A ``PATH`` with folders of the system's own before today's (``/usr/local/go/bin:$PATH``): only root writes
there, so nothing the agent wrote can be found first."""
_TEST_FILE = re.compile(r"^test_[\w.-]*\.(py|sh|bash)$|_tests?\.py$|\.(test|spec)\.[cm]?[jt]sx?$|_spec\.rb$")
"""Test files by the conventions of pytest, Jest, Vitest, RSpec and shell test scripts (``test_infra.sh``):
named for what they test, they do not do it."""
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_ANCHORED_NAMES = re.compile(r"\^(?:\(([A-Za-z_]\w*(?:\|[A-Za-z_]\w*)*)\)|\\\(([A-Za-z_]\w*(?:\\\|[A-Za-z_]\w*)*)\\\)|([A-Za-z_]\w*))=")
"""``^NAME=``, ``^(A|B)=`` (extended) or ``^\\(A\\|B\\)=`` (basic): lines of the named variables only."""


def _environment_filtered(cmd: SimpleCommand, after: SimpleCommand | None) -> list[str]:
    """``env | grep -E '^(PATH|GOPATH)='``: the environment listed, and only the named variables' lines let
    through (anchored at the line's start and closed by ``=``, none named like a secret). The names, or []
    when the listing may show more (an unanchored pattern matches inside a token's name or value)."""
    lister = [w.text for w in cmd.words]
    if (lister not in (["env"], ["printenv"], ["set"], ["export", "-p"]) or any(w.dynamic for w in cmd.words)
            or cmd.redirects or cmd.assignments or after is None or after.stdin_from_words != cmd.words
            or after.redirects or any(w.dynamic for w in after.words)):
        return []
    words = [w.text for w in after.words]
    if not words or posixpath.basename(words[0]) not in ("grep", "egrep"):
        return []
    flags = [w for w in words[1:] if w.startswith("-")]
    patterns = [w for w in words[1:] if not w.startswith("-")]
    if len(patterns) != 1 or any(f not in ("-E", "-i", "-Ei", "-iE", "--extended-regexp", "--ignore-case") for f in flags):
        return []
    extended = words[0].endswith("egrep") or any("E" in f or f == "--extended-regexp" for f in flags)
    m = _ANCHORED_NAMES.fullmatch(patterns[0])
    if m is None or (m.group(1) and not extended) or (m.group(2) and extended):
        return []
    names = m.group(1).split("|") if m.group(1) else m.group(2).split("\\|") if m.group(2) else [m.group(3)]
    return [] if any(_SECRET_NAME.search(n) for n in names) else names


_DEPLOY_ENV_NAME = re.compile(r"(?i)(^|_)(ENV|ENVIRONMENT|STAGE|MODE)$|^(DJANGO_SETTINGS_MODULE|SPRING_PROFILES_ACTIVE)$")
_PRODUCTION = re.compile(r"(?i)(^|[^a-z])(prod|production|live)([^a-z]|$)")
_DATABASE_ENV_NAME = re.compile(r"(?i)^(\w+_)?(DATABASE_URL|DB_URL|DB_HOST|DSN|DATABASE_HOST|PGHOST|MYSQL_HOST|POSTGRES_HOST|"
                                r"POSTGRES_URL|MONGO(DB)?_UR[IL]|REDIS_URL|REDIS_HOST|CLICKHOUSE_URL)$")
"""Variables that tell a program which database to act on (``DATABASE_URL=... npx prisma db seed``)."""
_LOCAL_DATABASE = re.compile(r"(?i)^(([a-z][\w+.-]*://)?([^@/\s]*@)?(localhost|127\.0\.0\.1|\[::1\]|::1|0\.0\.0\.0|host\.docker\.internal)"
                             r"([:/?]\S*)?|(sqlite3?|file|duckdb):\S*|[\w./-]+\.(db|sqlite3?|duckdb)|:memory:)$")
"""A database on this machine: a URL or host that is localhost, or a file (``sqlite:///dev.db``)."""
_SECRET_NAME = re.compile(r"(?i)key|token|secret|passw|auth|cred|session|cookie|private|signing")
"""Variable names that say the value is a secret (``$API_KEY``, ``$GITHUB_TOKEN``, ``$DB_PASSWORD``)."""
_WHOLE_SUBSTITUTION = re.compile(r"\$\(([^()`$\\]*)\)")
"""A word that is one command substitution and nothing else, with no substitution inside it."""
_SYSTEM_BIN = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"})
_PROGRAM_PATH = re.compile(r"[A-Za-z0-9._+@%:,/~-]+")
"""What a program named by its path may be spelled with: a file name, not text with spaces or quotes."""
_SECRET_DOT_NAMES = (".env", ".env.local", ".env.production", ".envrc", ".ssh", ".aws", ".azure", ".gnupg", ".kube",
                     ".docker", ".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", ".vault-token",
                     ".my.cnf", ".boto", ".s3cfg", ".bash_history", ".zsh_history", ".psql_history")
_SECRET_NAMES = ("credentials", "credentials.json", "secrets", "secrets.json", "secrets.yaml", "secrets.yml",
                 "secret.json", "token.json", "id_rsa", "id_ed25519", "id_ecdsa", "server.key", "private.pem")
"""Where secrets are kept, for telling whether a glob can reach one (each is matched by the policy's
``secrets`` before it counts)."""
_FILE_ARG = re.compile(r"/|\.[A-Za-z]\w{0,5}$")
"""A word that names a file: a ``/`` in it, or an extension."""
_SECRET_FOLDERS = frozenset({".ssh", ".aws", ".azure", ".gnupg", ".kube", ".docker", "credentials", "secrets"})
"""Of those, the ones that are (or may be) folders: listing one shows what is kept in it."""


def _names_secret_files_only(w: Word, secrets: re.Pattern[str] | None) -> bool:
    """Whether a glob given to a lister (``ls .env*``) can reach secrets only as files in its last part: the
    lister prints their names, never their contents. A path that is itself a secret place (``~/.ssh/*``),
    a wildcard before the last part, or one that can reach a folder of secrets (``ls .ss*``) is not."""
    parts = w.text.split("/")
    parent = "/".join(parts[:-1])
    if not w.glob or any(c in p for p in parts[:-1] for c in "*?[") or (
            parent and secrets is not None and secrets.search(parent)):
        return False
    reached = [n for n in (*_SECRET_DOT_NAMES, *_SECRET_NAMES) if fnmatch.fnmatchcase(n, parts[-1])]
    return bool(reached) and not any(n in _SECRET_FOLDERS for n in reached)


_GLOB_LOOK_LIMIT = 2000
_GLOB_LOOK_PARTS = 2
"""Live, at most this many files a glob matches are looked at, for a glob with wildcards in at most
this many of its parts."""


def _bsd_in_place(words: list[Word]) -> list[Word]:
    """``sed -i '' 's/a/b/' f``: BSD sed's in-place option takes its backup suffix as the next word,
    here none. GNU sed would read ``''`` as an empty script and the script as a file name, which writes
    nothing but ``f`` either way; so the empty word is the option's and the script is the script."""
    out = list(words)
    for i in range(len(out) - 1):
        if out[i].text in ("-i", "--in-place") and not out[i].dynamic and out[i + 1].text == "" and not out[i + 1].dynamic:
            return out[:i + 1] + out[i + 2:]
    return out


_NAMES_FILE = re.compile(r"/|\.[A-Za-z][A-Za-z0-9]{0,5}$")
"""A word that names a file: a folder in it, or an extension (``a.test.ts``)."""
_PINNED = re.compile(r"([a-z0-9][\w.-]*)@[\w.^~<>=*-]+")
"""A package's program at a version (``prettier@3``, ``create-next-app@latest``)."""

_SESSION_FLAGS = frozenset({"-l", "--login", "--norc", "--noprofile", "-q", "--quiet", "-u", "-B", "-E", "-s"})
"""Options an interpreter started alone may have and still be a session typed into (``bash -l``, ``python -q``)."""

_REMOTE_PROGRAM = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:|//|@|[^/]*@[^/]*:")
"""A program named as a URL or a package spec (``https://...``, ``github:user/tool``, ``@scope/pkg``,
``git@host:x``): what runs is downloaded, not a file of the project."""

_EFFECT_WORDS = {"none": "does nothing", "read": "reads files", "write": "writes files", "delete": "deletes files",
                 "run": "runs the project's code", "install": "installs packages", "network": "reads from the network",
                 "send": "sends data to a service (one on this machine too)", "secrets": "shows secrets (credentials, the environment)", "publish": "publishes or deploys",
                 "code": "runs code nobody has read", "privilege": "runs with other rights",
                 "destroy": "is destructive by nature", "system": "changes the machine beyond the project"}
_ROLE_WORDS = {"read": "reads", "names": "lists", "write": "writes", "replace": "writes", "delete": "deletes", "link": "links to", "cwd": "works in",
               "script": "runs"}


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_assignment(text: str) -> bool:
    return re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", text) is not None


def _xargs_replace(words: list[Word]) -> str | None:
    """The replace-string of an xargs command line (``-I R``, ``-IR``, ``-i``/``--replace`` for ``{}``)."""
    for i, w in enumerate(words):
        t = w.text
        if t == "-I" and i + 1 < len(words):
            return words[i + 1].text or None
        if t.startswith("-I") and len(t) > 2:
            return t[2:]
        if t in ("-i", "--replace"):
            return "{}"
        if t.startswith(("--replace=", "-i")) and len(t) > 2 and not t.startswith("--"):
            return t[2:]
        if t.startswith("--replace="):
            return t.split("=", 1)[1] or "{}"
        if not t.startswith("-"):
            return None  # the command: what follows are its arguments
    return None


def _command_index(roles: list[str]) -> int | None:
    """Where a ``command`` role starts (only a role list of fixed roles before it can have one)."""
    for i, r in enumerate(roles):
        if r == "command":
            return i if all(not x.endswith("*") for x in roles[:i]) else None
    return None


def _assign_roles(roles: list[str], n: int) -> list[str]:
    """The role of each of ``n`` positional arguments: fixed roles from the left, then the ones after a
    starred role from the right, the starred role in between."""
    star = next((i for i, r in enumerate(roles) if r.endswith("*")), None)
    if star is None:
        out = roles[:n]
        return out + ["text"] * (n - len(out))
    before, star_role, after = roles[:star], roles[star].rstrip("*"), roles[star + 1:]
    if n <= len(before):
        return before[:n]
    rest = n - len(before)
    tail = after[-rest:] if rest <= len(after) else after
    return before + [star_role] * (rest - len(tail)) + tail


# --- inline Python that only looks --------------------------------------------------------------
_SAFE_CALLS = frozenset({"print", "len", "repr", "str", "int", "float", "bool", "list", "dict", "tuple", "set",
                         "sorted", "type", "dir", "hasattr", "isinstance", "min", "max", "sum", "any", "all",
                         "enumerate", "range", "zip", "format", "hex", "abs", "round", "reversed", "frozenset"})
_SAFE_METHODS = frozenset({"keys", "values", "items", "get", "join", "split", "strip", "format", "upper", "lower",
                           "startswith", "endswith", "replace", "count", "index", "find", "version", "dumps",
                           "loads", "python_version", "platform", "system", "machine", "as_posix", "rsplit",
                           "splitlines", "lstrip", "rstrip", "isoformat", "now", "__str__", "get_version",
                           "python_implementation", "release", "getdefaultencoding", "getrecursionlimit",
                           # a machine-learning framework asked which accelerators it sees (`torch.cuda.is_available()`)
                           "is_available", "device_count", "get_device_name", "current_device",
                           "get_device_capability", "list_physical_devices", "is_built"})
_READ_METHODS = frozenset({"read", "readline", "readlines"})
"""Of a file opened to read, or of ``sys.stdin`` (what else could hold one: the program opens no other)."""


_PY_BANNED = frozenset({"os", "subprocess", "shutil", "ctypes", "socket", "pty", "urllib", "http", "requests",
                        "pathlib", "builtins", "importlib", "io", "tempfile", "pickle", "marshal", "multiprocessing",
                        "signal"})
"""Modules whose use the harmless-Python check does not follow: importing one makes the program unknown."""
_PY_REACH = frozenset({"modules", "_getframe", "f_globals", "f_builtins", "gi_frame", "tb_frame", "cr_frame",
                       "popen", "spawnl", "spawnv", "execv", "execl", "fork", "kill", "remove", "unlink", "rmdir",
                       "rmtree", "rename", "chmod", "chown", "symlink", "makedirs", "mkdir", "truncate",
                       "write", "write_text", "write_bytes", "writelines"})
"""Attributes that reach another module (``sys.modules``, a frame's globals) or act on files and processes,
on whatever object they are read from: the check cannot tell what that object is."""
def _before(words: list[Word], word: Word) -> list[Word]:
    """The words before ``word`` (that very object) in ``words``; all of them when it is not there."""
    return next((words[:i] for i, w in enumerate(words) if w is word), words)


_IN_CONTAINER = frozenset({"docker run", "docker exec", "podman run", "podman exec", "kubectl exec", "oc exec", "docker compose exec",
                           "docker-compose exec", "podman compose exec", "docker compose run", "docker-compose run"})
"""The forms that run their command in a container (a pod's)."""
_READ_MODES = frozenset({"r", "rt", "rb"})
_LOADERS = {"json": {"load"}, "tomllib": {"load"}, "yaml": {"safe_load", "safe_load_all"},
            "ast": {"parse", "literal_eval", "dump"},
            "secrets": {"token_urlsafe", "token_hex", "token_bytes", "randbelow"}, "uuid": {"uuid4", "uuid1"}}
"""Modules whose parsers only read (``yaml.load`` builds arbitrary objects: not here), and generators of a
random value that only return it (``secrets.token_urlsafe(64)``: a new key, printed to be pasted)."""
_PY_TRUSTED_NAMES = frozenset({*_SAFE_CALLS, "open", "sys", *_LOADERS})
"""Names the check takes at their word: none may be rebound (an import ``as``, an assignment)."""


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _read_open(node: ast.Call) -> str | None:
    """The path of ``open('x.json')`` / ``open('x', 'r', encoding='utf-8')``: a literal path opened to
    read; None for any other open (a mode that writes, a path built at run time)."""
    if len(node.args) not in (1, 2) or (path := _literal(node.args[0])) is None or not path:
        return None
    mode = _literal(node.args[1]) if len(node.args) == 2 else "r"
    for kw in node.keywords:
        if kw.arg == "mode":
            mode = _literal(kw.value)
        elif kw.arg not in ("encoding", "errors") or _literal(kw.value) is None:
            return None
    return path if mode in _READ_MODES else None


@functools.lru_cache(maxsize=512)
def _os_reads_one_variable(tree: ast.AST) -> bool:
    """Whether a program imports ``os`` (``import os``, no other name) and uses it only to read variables
    of the environment by literal names that do not say secret (``os.environ.get('UV_RUN_ACTIVE')``,
    ``os.getenv('NODE_ENV')``): what ``printenv NAME`` prints. Any other use of ``os`` is not that."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "os"]
    imports = [a for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names]
    if not uses or any((a.asname or a.name) == "os" and a.name != "os" for a in imports) or any(
            isinstance(n, ast.ImportFrom) and n.module == "os" for n in ast.walk(tree)):
        return False
    for use in uses:
        if not isinstance(use.ctx, ast.Load):
            return False
        attr = parents.get(use)
        if not isinstance(attr, ast.Attribute):
            return False
        if attr.attr == "environ":
            attr = parents.get(attr)
            if not (isinstance(attr, ast.Attribute) and attr.attr == "get"):
                return False
        elif attr.attr != "getenv":
            return False
        call = parents.get(attr)
        if not (isinstance(call, ast.Call) and call.func is attr and call.args and not call.keywords
                and len(call.args) <= 2):
            return False
        name = _literal(call.args[0])
        if name is None or _SECRET_NAME.search(name) or any(_literal(a) is None for a in call.args[1:]):
            return False
    return True


def _python_reads(code: str) -> tuple[str, ...] | None:
    """Whether a ``python -c`` program only imports, reads, computes and prints (``import x;
    print(x.__version__)``, ``import sys,json; print(json.load(sys.stdin)['name'])``): it calls nothing
    but a few builtins, read-only methods, a parser that only reads, and ``open`` of a literal path to
    read; no dunder beyond a version or a name. Returns the files it opens (judged like any read: a
    secret or a path outside the project is not harmless), or None when it may do more. Importing runs
    a module's own code: the project's, like its tests."""
    if len(code) > 2000:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    reads: list[str] = []
    os_reads = _os_reads_one_variable(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if os_reads and isinstance(f, ast.Attribute) and f.attr == "getenv" and isinstance(f.value, ast.Name) \
                    and f.value.id == "os":
                continue  # (each use of `os` was checked: a variable by a name that says no secret)
            if isinstance(f, ast.Name) and f.id == "open":
                path = _read_open(node)
                if path is None:
                    return None
                reads.append(path)
                continue
            if isinstance(f, ast.Name) and f.id in _SAFE_CALLS:
                continue
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.attr in _LOADERS.get(f.value.id, ()):
                continue
            if isinstance(f, ast.Attribute) and f.attr == "system":
                if isinstance(f.value, ast.Name) and f.value.id == "platform":
                    continue
                return None  # only platform.system() names the OS; any other .system() may be os.system
            if isinstance(f, ast.Attribute) and (f.attr in _SAFE_METHODS or f.attr in _READ_METHODS) and not (
                    isinstance(f.value, ast.Name) and f.value.id in ("os", "subprocess", "shutil")):
                continue
            return None
        if isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr not in (
                "__version__", "__name__", "__file__", "__path__"):
            return None
        if isinstance(node, ast.Name) and node.id.startswith("__") and node.id not in ("__name__", "__file__"):
            return None
        if isinstance(node, (ast.Delete, ast.Global, ast.Nonlocal, ast.With, ast.AsyncWith, ast.Await, ast.Lambda,
                             ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try, ast.While, ast.Raise)):
            return None
        if isinstance(node, ast.alias) and node.name.split(".")[0] in _PY_BANNED and not (
                os_reads and node.name == "os" and node.asname is None):
            return None  # a module that acts
        if isinstance(node, ast.Import) and any(a.asname in _PY_TRUSTED_NAMES for a in node.names):
            return None  # `import subprocess as json`: a name the checks above trust, bound to something else
        if isinstance(node, ast.ImportFrom) and ((node.module or "").split(".")[0] in _PY_BANNED or any(
                (a.asname or a.name) in _PY_TRUSTED_NAMES for a in node.names)):
            return None  # `from os import system as print`
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in _PY_TRUSTED_NAMES:
            return None  # `json = open`, `print = ...`
        if isinstance(node, ast.Attribute) and (node.attr in _PY_BANNED or node.attr in _PY_REACH):
            return None  # `glob.os.system(...)`, `sys.modules['os']`: a module that acts, reached through another
    return tuple(dict.fromkeys(reads))


_AWK_RISKY = re.compile(r"\bsystem\b|\|\s*\"|\|&|\bgetline\b|>\s*\"|>>|\bclose\b|\bfflush\b|\bENVIRON\b|print[^;}]*\|"
                        r"|\bprintf?\b[^;}\n]*>")
"""What lets an awk program run, read or write beyond its input: ``system()``, pipes, ``getline``, the
environment, and any ``>`` in a print statement (``print > FILENAME``, ``print 1 > f``: output to a file
named at run time; ``$3 > 100`` as a pattern is a comparison)."""
def _sed_command(script: str, i: int) -> tuple[int, str | None] | None:
    """One sed command of ``script`` from ``i``: an optional address (a line, ``$``, ``/re/``; a range of
    two), an optional ``!``, then ``p d q Q = n N g G h H x l { }``, ``s/re/text/flags`` with flags among
    ``gpiIm`` and digits (any delimiter, ``;`` too), ``a``/``i``/``c`` text to the end of the line, or
    ``r FILE`` (reads FILE in). Returns where it ends and the file it reads, or None for any other command
    (``w``, ``e``, an ``s`` flag that writes or runs). Read by hand, left to right (a regex with
    backreferences backtracks on backslashes)."""
    n = len(script)

    def skip(j: int) -> int:
        while j < n and script[j] in " \t":
            j += 1
        return j

    def delimited(j: int, d: str) -> int:
        """Past the next unescaped ``d`` (-1 when it never comes)."""
        while j < n:
            if script[j] == "\\":
                j += 2
                continue
            if script[j] == d:
                return j + 1
            if script[j] == "\n":
                return -1
            j += 1
        return -1

    def address(j: int) -> int:
        if j < n and script[j].isdigit():
            while j < n and script[j].isdigit():
                j += 1
            return j
        if j < n and script[j] == "$":
            return j + 1
        if j < n and script[j] == "/":
            return delimited(j + 1, "/")
        return j

    i = skip(i)
    j = address(i)
    if j < 0:
        return None
    if j > i:
        j = skip(j)
        if j < n and script[j] == ",":
            k = address(skip(j + 1))
            if k < 0 or k == skip(j + 1):
                return None
            j = skip(k)
        if j < n and script[j] == "!":
            j = skip(j + 1)
    if j >= n:
        return None
    c = script[j]
    j += 1
    if c in "pdqQ=nNgGhHxl{}":
        return j, None
    if c in "aic":  # text to the end of the line (GNU's one-line form): nothing runs it
        end = script.find("\n", j)
        return (n if end < 0 else end), None
    if c in "rR":
        end = script.find("\n", j)
        name = script[j:n if end < 0 else end].strip()
        return ((n if end < 0 else end), name) if name else None
    if c != "s" or j >= n or script[j].isalnum() or script[j] in " \\\n":
        return None
    d = script[j]
    j = delimited(j + 1, d)
    if j < 0:
        return None
    j = delimited(j, d)
    if j < 0:
        return None
    while j < n and (script[j] in "gpiIm" or script[j].isdigit()):
        j += 1
    return j, None


def _harmless_awk(code: str) -> bool:
    """An awk program that only reads its input and prints: no ``system()``, pipes, ``getline``,
    output redirections or environment."""
    return len(code) <= 2000 and _AWK_RISKY.search(code) is None


def _sed_reads(code: str) -> tuple[str, ...] | None:
    """A sed script of the commands :func:`_sed_command` reads, separated by ``;`` or newlines: the files
    its ``r`` commands read in (judged like any read), or None when it may write or run something."""
    if len(code) > 2000:
        return None
    reads: list[str] = []
    i, n = 0, len(code)
    while True:
        while i < n and code[i] in " \t\n;":
            i += 1
        if i >= n:
            return tuple(dict.fromkeys(reads))
        got = _sed_command(code, i)
        if got is None:
            return None
        i, name = got
        if name is not None:
            reads.append(name)
        if code[i - 1] == "{":
            continue  # a block's first command follows its brace directly
        while i < n and code[i] in " \t":
            i += 1
        if i < n and code[i] not in ";\n}":
            return None


_PERL_SUB = re.compile(r"\s*(s|tr|y)([/|#,!:%])")
_PERL_INTERPOLATES = re.compile(r"@|\$[{(\[\w:]|\(\?\??\{|\(\*|\\[NEQLUlu]|`")
"""What in a Perl pattern or replacement runs or names code: an array or a variable (``@{[...]}``,
``${\\...}``), a code block in a regex, a named character or case escape. ``$1`` is a capture."""


def _harmless_perl(code: str) -> bool:
    """A Perl program of substitutions only, ``;``-separated: ``s/re/text/flags`` (flags among
    ``gimsxr``: no ``e``, which evaluates the replacement) or ``tr///``/``y///`` (no interpolation at all),
    with nothing in a pattern or replacement that interpolates code (see :data:`_PERL_INTERPOLATES`)."""
    if len(code) > 2000:
        return False
    i, n = 0, len(code)
    seen = False
    while i < n:
        while i < n and code[i] in " \t\n;":
            i += 1
        if i >= n:
            break
        m = _PERL_SUB.match(code, i)
        if m is None:
            return False
        op, d = m.group(1), m.group(2)
        i = m.end()
        parts = []
        for _ in range(2):
            start = i
            while i < n and code[i] != d:
                i += 2 if code[i] == "\\" else 1
            if i >= n:
                return False
            parts.append(code[start:i])
            i += 1
        j = i
        while i < n and code[i].isalpha():
            i += 1
        flags = code[j:i]
        allowed = "gimsxr" if op == "s" else "cdsr"
        if any(f not in allowed for f in flags):
            return False
        if op == "s" and any(_PERL_INTERPOLATES.search(re.sub(r"\$(\d+|&)", "", p)) for p in parts):
            return False
        seen = True
    return seen


_NODE_TOKEN = re.compile(r"\s*(console\.log|JSON\.stringify|Object\.keys|process\.versions?|require|\.[A-Za-z_$][\w$]*"
                         r"|\[\s*(?:'[^'\\]*'|\"[^\"\\]*\"|\d+)\s*\]|'[^'\\]*'|\"[^\"\\]*\"|\d+|null|[(),;])")


_NODE_RANDOM = frozenset({".randomBytes", ".randomUUID", ".randomInt"})


def _node_reads(code: str) -> tuple[str, ...] | None:
    """A Node program that only prints (``-e``, or ``-p`` an expression): ``console.log`` of a JSON file's field (``require('./package.json')
    .version``: a relative ``.json`` path, no ``..``), the versions of Node, literals, ``JSON.stringify`` and
    ``Object.keys`` of those: the JSON files it reads (judged like any read: ``./secrets.json`` holds secrets), or
    None. Anything else, a call of any other name included, is code."""
    reads: list[str] = []
    if len(code) > 500:
        return None
    tokens: list[str] = []
    i = 0
    while i < len(code):
        m = _NODE_TOKEN.match(code, i)
        if m is None:
            if code[i:].strip() == "":
                break
            return None
        tokens.append(m.group(1))
        i = m.end()
    if not tokens or tokens[0] not in ("console.log", "require", "process.version", "process.versions",
                                       "JSON.stringify", "Object.keys"):
        return None  # (`node -p EXPR` prints EXPR itself)
    for k, t in enumerate(tokens):
        if t == "require":
            arg = tokens[k + 2] if k + 3 < len(tokens) and tokens[k + 1] == "(" and tokens[k + 3] == ")" else ""
            path = arg[1:-1] if arg[:1] in "'\"" else ""
            if path in ("crypto", "node:crypto") and k + 4 < len(tokens) and tokens[k + 4] in _NODE_RANDOM:
                continue  # `require('crypto').randomBytes(32).toString('hex')`: a new random value, printed
            if not (path.startswith("./") and path.endswith(".json") and ".." not in path):
                return None
            reads.append(path)
        if t.startswith(".") and t[1:] in ("constructor", "prototype", "__proto__", "call", "apply", "bind"):
            return None
    return tuple(dict.fromkeys(reads))


# --- SQL that only reads ----------------------------------------------------------------------------
_SQL_READ_STARTS = frozenset({"select", "with", "show", "explain", "values", "table"})
_SQL_WRITES = frozenset({
    "insert", "update", "delete", "drop", "alter", "create", "truncate", "grant", "revoke", "copy", "into", "merge",
    "call", "do", "execute", "prepare", "vacuum", "cluster", "reindex", "lock", "set", "reset", "comment", "security",
    "refresh", "listen", "notify", "import", "load", "attach", "detach", "pragma", "replace", "upsert", "begin",
    "commit", "rollback", "savepoint", "release", "discard", "checkpoint", "reassign", "owned", "unlisten"})
_SQL_KEYWORDS_BEFORE_PAREN = frozenset({
    "in", "exists", "over", "filter", "any", "all", "some", "values", "as", "from", "join", "on", "and", "or", "not",
    "where", "select", "when", "then", "else", "using", "lateral", "with", "within", "by", "cast", "row", "array",
    "distinct", "case", "is", "like", "ilike", "between", "having", "union", "except", "intersect", "limit", "offset",
    "explain", "analyze", "verbose", "format", "coalesce", "nullif", "greatest", "least", "extract", "interval"})
_SQL_FUNCTIONS = frozenset({
    "count", "sum", "avg", "min", "max", "now", "lower", "upper", "length", "char_length", "date_trunc", "date_part",
    "to_char", "to_date", "to_timestamp", "array_agg", "string_agg", "json_agg", "jsonb_agg", "row_number", "rank",
    "dense_rank", "round", "abs", "floor", "ceil", "concat", "substring", "substr", "trim", "btrim", "ltrim", "rtrim",
    "left", "right", "position", "strpos", "replace_text", "split_part", "regexp_replace", "regexp_matches",
    "version", "current_database", "current_user", "current_schema", "current_setting", "pg_size_pretty",
    "pg_database_size", "pg_total_relation_size", "pg_relation_size", "pg_table_size", "pg_indexes_size",
    "jsonb_pretty", "json_build_object", "jsonb_build_object", "to_json", "to_jsonb", "json_extract_path_text",
    "jsonb_array_length", "json_array_length", "jsonb_object_keys", "array_length", "unnest", "generate_series",
    "age", "md5", "typeof", "ifnull", "date", "datetime", "strftime", "julianday", "printf", "total", "group_concat",
    "sqlite_version", "lag", "lead", "first_value", "last_value", "ntile", "percentile_cont", "stddev", "variance",
    "bool_and", "bool_or", "every", "cardinality", "format_type", "obj_description", "col_description",
    "pg_get_indexdef", "pg_get_viewdef", "pg_get_constraintdef", "pg_table_is_visible", "has_table_privilege",
    "quote_ident", "quote_literal", "initcap", "reverse", "repeat", "lpad", "rpad", "encode", "decode", "sign",
    "mod", "power", "sqrt", "exp", "ln", "log", "random", "uuid", "gen_random_uuid", "current_time",
    "localtimestamp", "clock_timestamp", "statement_timestamp", "make_interval", "justify_interval", "json_typeof",
    "jsonb_typeof", "array_to_string", "string_to_array", "exists_", "char", "hex", "instr", "iif", "json_extract"})
_SQL_PRAGMA_READ = re.compile(
    r"(?i)pragma\s+(\w+\.)?("
    r"(table_info|table_xinfo|table_list|index_list|index_info|index_xinfo|foreign_key_list|foreign_key_check|"
    r"integrity_check|quick_check)(\s*\(\s*(_string_|\w+)\s*\))?|"
    r"database_list|collation_list|function_list|module_list|pragma_list|compile_options|journal_mode|"
    r"user_version|application_id|schema_version|page_count|page_size|freelist_count|encoding|foreign_keys|"
    r"synchronous|auto_vacuum|cache_size|busy_timeout|data_version|max_page_count|mmap_size|temp_store|"
    r"wal_autocheckpoint|locking_mode|recursive_triggers)")
"""SQLite pragmas that only read: a setting asked without a value (``PRAGMA journal_mode = WAL`` and
``PRAGMA journal_mode(WAL)`` set it), or the schema of a table or index named in parentheses; the ones that
act (``optimize``, ``wal_checkpoint``, ``incremental_vacuum``, ``shrink_memory``) are not among them."""
_SQL_META = re.compile(r"\\(d[a-zA-Z]*\+?|l\+?|x|timing|conninfo|encoding|\?)(\s+[\w.\"*]+)*\s*")
"""psql's commands that only describe (``\\dt``, ``\\d+ users``, ``\\l``); ``\\!``, ``\\copy``, ``\\o``, ``\\i``,
``\\g``, ``\\gexec``, ``\\c`` and the rest run, write or connect elsewhere."""
_SQLITE_DOT = re.compile(r"\.(tables|schema|indexes|indices|headers|mode|databases|dbinfo|show|width|nullvalue|help)"
                         r"(\s+[\w.%*-]+)*\s*")
"""sqlite3's dot commands that only describe or format (``.output``, ``.shell``, ``.import``, ``.read``, ``.load``
and the rest write, run or open)."""
_SQL_STRING = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_SQL_WORD = re.compile(r"[A-Za-z_][\w$]*")


_SQL_CREATE_EMPTY = re.compile(r'(\s*create\s+(database|schema)\s+(if\s+not\s+exists\s+)?("[\w-]+"|\w+)\s*;?\s*)+', re.I)
"""A new, empty database or schema made (``CREATE DATABASE app_test``): it changes nothing that was there."""


@functools.lru_cache(maxsize=512)
def _harmless_sql(code: str) -> bool:
    """SQL that only reads: every statement a ``SELECT`` / ``WITH`` / ``SHOW`` / ``EXPLAIN`` (``EXPLAIN
    ANALYZE`` runs the statement: of a read, a read) / ``VALUES``, with no word that writes anywhere
    (a ``WITH`` may hold a ``DELETE``; ``SELECT ... INTO`` makes a table; ``FOR UPDATE`` locks rows), and
    no function but the standard ones that compute (a function of the database may do anything); or
    psql's and sqlite3's describing commands; or only new, empty databases or schemas made. Strings are data; dollar quoting, comments and psql variables are not read."""
    if len(code) > 2000 or "$$" in code or "--" in code or "/*" in code or ":'" in code:
        return False
    if _SQL_CREATE_EMPTY.fullmatch(code):
        return True
    lines = [ln.strip() for ln in code.splitlines() if ln.strip()]
    sql_lines = []
    for ln in lines:
        if ln.startswith("\\"):
            if not _SQL_META.fullmatch(ln):
                return False
        elif ln.startswith("."):
            if not _SQLITE_DOT.fullmatch(ln):
                return False
        else:
            sql_lines.append(ln)
    text = _SQL_STRING.sub(" _string_ ", " ".join(sql_lines))
    if "'" in text or "\\" in text or '"' in text:
        return False  # an unclosed string, or a psql command after SQL on one line
    for stmt in text.split(";"):
        words = [m.group(0).lower() for m in _SQL_WORD.finditer(stmt)]
        if not words:
            continue
        if _SQL_PRAGMA_READ.fullmatch(stmt.strip()):
            continue  # `PRAGMA journal_mode`, `PRAGMA table_info(users)`: a setting or the schema, read
        if words[0] not in _SQL_READ_STARTS or _SQL_WRITES & set(words):
            return False
        if "analyze" in words and words[:2] not in (["explain", "analyze"], ["explain", "verbose"]):
            return False
        for m in re.finditer(r"([A-Za-z_][\w$.]*)\s*\(", stmt):
            name = m.group(1).lower().rsplit(".", 1)[-1]
            if name not in _SQL_FUNCTIONS and name not in _SQL_KEYWORDS_BEFORE_PAREN:
                return False
    return True


_READERS: dict[str, Callable[[str], tuple[str, ...] | None]] = {"python": _python_reads, "sed": _sed_reads,
                                                               "node": _node_reads}
"""Inline languages whose harmless programs may read files: the files they read, judged like any read."""
_HARMLESS: dict[str, Callable[[str], bool]] = {"awk": _harmless_awk, "perl": _harmless_perl, "sql": _harmless_sql}
"""The other inline languages: a program that only reads its input and prints (or substitutes)."""
