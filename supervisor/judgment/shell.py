"""Shell text into simple commands, with a real shell grammar (tree-sitter-bash).

A command line an agent proposes is parsed, never grepped: :func:`parse_command` walks the syntax
tree through pipelines, ``&&``/``||``/``;`` lists, subshells and ``{ }`` groups, ``if``/``for``/
``while``/``case`` bodies, function bodies, command and process substitutions, and returns every
simple command that can run, each with its words resolved the way the shell would resolve them
(quotes and backslashes removed: ``r''m``, ``\\rm`` and ``"rm"`` are all ``rm``), its redirections,
and the ``cd`` steps before it in the same list (``( cd ..; rm -rf build )`` deletes ``../build``).

What cannot be known from the text is marked, never guessed: a word whose value is built at run
time (``$VAR`` other than the known ones, ``${!x}``, ``$(...)``, ``$'\\x72m'``, brace expansion) is
*dynamic*; a subject that does not parse, or whose words hide zero-width, bidi or non-ASCII
look-alike characters, gets a ``problem``. The caller (:mod:`supervisor.judgment.judge`) decides
what each means; this module only reads. Wrappers (``env``, ``xargs``, ``sh -c`` ...) are the
policy's data, so they are unwrapped by the judge, not here.
"""

from __future__ import annotations

import functools
import posixpath
import re
import threading
import unicodedata
from dataclasses import dataclass, field

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

_LANGUAGE = Language(tree_sitter_bash.language())

# Characters that make a word read differently from how it runs or looks.
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w-]*)\1")
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Co", "Cn", "Cs", "Zl", "Zp"})


@dataclass(frozen=True)
class Word:
    """One word of a command as the shell would see it after quote removal."""

    text: str
    """The resolved text; for a dynamic word, its literal parts with ``$…`` where a value is built."""
    raw: str
    """The word as written."""
    dynamic: bool = False
    """Part of its value is built at run time (an unknown variable, a substitution, an ANSI-C string)."""
    glob: bool = False
    """It has an unquoted glob (``*``, ``?``, ``[``): it may name any number of files."""


@dataclass(frozen=True)
class Redirect:
    """A redirection of a simple command: ``>``/``>>``/``&>`` write ``target``, ``<`` reads it."""

    op: str
    target: Word
    fd_dup: bool = False
    """``2>&1``, ``>&2``: to another descriptor, no file."""


@dataclass(frozen=True)
class SimpleCommand:
    """One program run with its arguments."""

    words: tuple[Word, ...]
    """The command name first, then its arguments (leading assignments excluded)."""
    assignments: tuple[tuple[str, Word], ...] = ()
    """``NAME=value`` words before the command, or a bare assignment / ``export`` (then ``words`` is empty)."""
    redirects: tuple[Redirect, ...] = ()
    cd: tuple[Word, ...] = ()
    """The ``cd`` arguments run before this command in the same list and scope, in order (a bare ``cd``
    is ``~``); the judge places paths against the pane's directory moved by each."""
    text: str = ""
    """The command's own source text (for reasons a person reads)."""
    substituted: bool = False
    """It runs inside a command or process substitution."""
    stdin_from: str | None = None
    """The program name of the command piped into this one, if any (``find . | xargs rm``)."""
    stdin_from_words: tuple[Word, ...] = ()
    stdin_chain: tuple[tuple[Word, ...], ...] = ()
    """The words of every command earlier in its pipeline, the nearest last (``git diff --name-only |
    grep '\\.py$' | xargs ruff check``: xargs's chain is git's words, then grep's)."""
    stdin_text: bool = False
    """Its standard input is text written in the command itself (a heredoc or a here-string)."""


@dataclass
class ParsedCommand:
    """A whole command line: its simple commands and what stops it from being read fully."""

    text: str
    commands: list[SimpleCommand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Why the text cannot be read as a shell command (parse errors, hidden characters, a function
    called by name ...). Any problem makes the whole command unknown."""
    functions: set[str] = field(default_factory=set)
    here_strings: list[Word] = field(default_factory=list)
    """The words of its here-strings (``<<<'text'``): standard input written in the command."""


def hidden_characters(text: str) -> list[str]:
    """The characters in ``text`` that render as nothing or as something else (zero-width, bidi
    controls, other format and control characters except tab), as ``U+XXXX NAME``."""
    out = []
    for ch in text:
        if ch in "\t\n":
            continue
        if unicodedata.category(ch) in _INVISIBLE_CATEGORIES:
            out.append(f"U+{ord(ch):04X} {unicodedata.name(ch, 'control character')}")
    return out


def lookalike_characters(word: str) -> list[str]:
    """Non-ASCII letters and digits in ``word`` (a Cyrillic ``о`` in ``--fоrce``)."""
    return [f"{ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, '?')})" for ch in word
            if ord(ch) > 127 and (ch.isalnum() or unicodedata.category(ch).startswith(("L", "N", "P", "S")))]


_LOCAL = threading.local()
_ASCII_ONLY = bytes(b if b < 0x80 else ord("x") for b in range(256))
"""What tree-sitter is given: every byte of a non-ASCII character as ``x``. tree-sitter-bash's parse
reads out of bounds on some characters (``{`` then U+EEF72 crashed the process now and then); no shell
metacharacter is outside ASCII, so a non-ASCII character is a word character either way, and with the
byte length kept every node's offsets still slice the real text (what the walker reads)."""


def _parser() -> Parser:
    """This thread's parser: a tree-sitter Parser must never be used by two threads at once (pane
    workers judge commands concurrently; sharing one crashed the process)."""
    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = Parser(_LANGUAGE)
    return parser


@functools.lru_cache(maxsize=4096)
def parse_command(text: str, known_vars: tuple[tuple[str, str], ...] = ()) -> ParsedCommand:
    """Parse ``text`` (one command line, or several lines of a script) into its simple commands.

    ``known_vars`` maps variable names whose value is known (``HOME`` -> ``~``) to that value; any
    other expansion makes its word dynamic. Cached by text: judging the same command again costs a
    dictionary look-up."""
    parsed = ParsedCommand(text=text)
    hidden = hidden_characters(text)
    if hidden:
        parsed.problems.append("hidden characters in the command: " + ", ".join(dict.fromkeys(hidden)))
    if not text.strip():
        parsed.problems.append("no command text")
        return parsed
    data = text.encode("utf-8", "surrogatepass")
    tree = _parser().parse(data.translate(_ASCII_ONLY))
    root = tree.root_node
    if root.has_error and "<<" in text:
        # A dialog shows a heredoc's first line only (`cat > f <<'EOF'`): with a quoted delimiter the
        # body is data and cannot run anything, so the command is read as if the body were empty.
        # An unquoted one would expand `$(...)` in the body nobody has seen: that stays unreadable.
        delims = _HEREDOC.findall(text)
        if delims and all(q for q, _ in delims):
            closed = text + "".join(f"\n{d}" for _, d in delims)
            retry = _parser().parse(closed.encode("utf-8", "surrogatepass").translate(_ASCII_ONLY))
            # (`tree` stays referenced: a node must never outlive its tree, or reading it reads freed memory)
            if not retry.root_node.has_error:
                tree, data, root = retry, closed.encode("utf-8", "surrogatepass"), retry.root_node
        elif delims:
            parsed.problems.append("a heredoc whose body is not shown and may run commands (unquoted delimiter)")
            return parsed
    if root.has_error:
        bad = _first_error(root)
        where = data[bad.start_byte:bad.end_byte + 20].decode("utf-8", "replace").strip() if bad else ""
        parsed.problems.append("does not parse as a shell command" + (f" (near {where[:40]!r})" if where else ""))
        return parsed
    walker = _Walker(data, dict(known_vars), parsed)
    walker.block(root, ())
    del tree  # the walk is done: only now may the tree its nodes point into go
    return parsed


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        if child.has_error or child.is_missing or child.type == "ERROR":
            found = _first_error(child)
            if found is not None:
                return found
    return None


class _Walker:
    """Walks a bash syntax tree into :class:`SimpleCommand` records."""

    def __init__(self, data: bytes, known_vars: dict[str, str], out: ParsedCommand) -> None:
        self.data = data
        self.known = known_vars
        self.out = out
        self.substituted = 0
        self.stdin_text = False
        self.defining: list[str] = []
        self.loop: dict[str, Word] = {}
        """A for loop's variable, inside its body, bound to the value being walked (see :meth:`for_each`)."""
        self.loop_bodies = 0

    def src(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    # --- statements ------------------------------------------------------------------------
    def block(self, node: Node, cd: tuple[Word, ...]) -> tuple[Word, ...]:
        """Statements in sequence (a program, a subshell's or group's body): a ``cd`` moves the
        directory for the statements after it; returns the directory moves at the end."""
        for child in node.named_children:
            cd = self.statement(child, cd)
        return cd

    def statement(self, node: Node, cd: tuple[Word, ...], redirects: tuple[Redirect, ...] = (),
                  stdin: SimpleCommand | None = None, tail: tuple[Redirect, ...] = ()) -> tuple[Word, ...]:
        """``tail``: redirections that belong to the last command of ``node`` alone (see below)."""
        t = node.type
        if t in ("comment", "heredoc_body", "heredoc_end", "heredoc_start"):
            return cd
        if tail and t not in ("list", "pipeline"):
            redirects = redirects + tail
        if t == "command":
            return self.command(node, cd, redirects, stdin)
        if t == "redirected_statement":
            body = node.child_by_field_name("body")
            kinds = [c.type for c in node.children_by_field_name("redirect")]
            self.stdin_text = any(k in ("heredoc_redirect", "herestring_redirect") for k in kinds)
            reds = redirects + tuple(r for c in node.children_by_field_name("redirect") for r in self.redirect(c, cd))
            if body is None:  # a bare redirection (`> file`): truncates the file
                self.emit(SimpleCommand(words=(), redirects=reds, cd=cd, text=self.src(node),
                                        substituted=self.substituted > 0))
                return cd
            if body.type in ("list", "pipeline"):
                # tree-sitter-bash hangs the redirections of `cd sub && make > out.txt` and `a | b > f`
                # on the whole list, but the shell gives them to the last command alone, which runs
                # where that command runs (after the `cd`)
                return self.statement(body, cd, redirects, stdin, tail=reds[len(redirects):])
            return self.statement(body, cd, reds, stdin)
        if t == "list":  # a && b, a || b, a ; b on one level
            children = [c for c in node.named_children if c.type != "comment"]
            for i, child in enumerate(children):
                cd = self.statement(child, cd, redirects, tail=tail if i == len(children) - 1 else ())
            return cd
        if t == "pipeline":
            prev: SimpleCommand | None = None
            children = [c for c in node.named_children if c.type != "comment"]
            for i, child in enumerate(children):
                before = len(self.out.commands)
                self.statement(child, cd, redirects, prev, tail=tail if i == len(children) - 1 else ())
                added = self.out.commands[before:]
                prev = added[-1] if added else None
            return cd  # each part of a pipeline runs in a subshell
        if t == "subshell":
            self.block(node, cd)
            return cd
        if t in ("compound_statement", "do_group"):
            return self.block(node, cd)
        if t == "negated_command":
            for child in node.named_children:
                cd = self.statement(child, cd, redirects)
            return cd
        if t == "for_statement" and self.for_each(node, cd, redirects):
            return cd
        if t in ("if_statement", "elif_clause", "else_clause", "while_statement", "for_statement",
                 "c_style_for_statement", "case_statement", "case_item"):
            # every branch may run: each is judged, in the directory the statement starts in
            for child in node.named_children:
                if child.type in ("variable_name",):
                    continue
                if child.type in ("word", "string", "raw_string", "concatenation", "simple_expansion",
                                  "expansion", "number", "extglob_pattern"):
                    self.word(child)  # the values a for loop iterates over: substitutions in them run
                    continue
                self.statement(child, cd, redirects)
            return cd
        if t == "function_definition":
            name = node.child_by_field_name("name")
            fname = self.src(name) if name is not None else ""
            if fname:
                self.out.functions.add(fname)
            body = node.child_by_field_name("body")
            if body is not None:
                self.defining.append(fname)
                try:
                    self.statement(body, cd)
                finally:
                    self.defining.pop()
            return cd
        if t == "variable_assignment":
            self.assignment_only(node, cd, redirects)
            return cd
        if t == "variable_assignments":
            for child in node.named_children:
                self.assignment_only(child, cd, redirects)
            return cd
        if t in ("declaration_command", "unset_command"):
            words: list[Word] = [Word(self.src(node.children[0]), self.src(node.children[0]))]
            assigns: list[tuple[str, Word]] = []
            for child in node.named_children:
                if child.type == "variable_assignment":
                    assigns.append(self.assign(child))
                else:
                    words.append(self.word(child))
            self.emit(SimpleCommand(words=tuple(words), assignments=tuple(assigns), redirects=redirects, cd=cd,
                                    text=self.src(node), substituted=self.substituted > 0))
            return cd
        if t in ("test_command",):
            self.expression(node)
            self.emit(SimpleCommand(words=(Word("[[", "[["),), redirects=redirects, cd=cd, text=self.src(node),
                                    substituted=self.substituted > 0))
            return cd
        if t in ("arithmetic_expansion", "binary_expression", "unary_expression", "parenthesized_expression"):
            self.expression(node)
            return cd
        self.out.problems.append(f"a shell construct the judgment does not read: {t} ({self.src(node)[:40]!r})")
        return cd

    def expression(self, node: Node) -> None:
        """Expressions (``[[ ]]``, ``$(( ))``): only the substitutions inside them run anything."""
        for child in node.named_children:
            if child.type in ("command_substitution", "process_substitution"):
                self.word(child)
            else:
                self.expression(child)

    def assignment_only(self, node: Node, cd: tuple[Word, ...], redirects: tuple[Redirect, ...]) -> None:
        self.emit(SimpleCommand(words=(), assignments=(self.assign(node),), redirects=redirects, cd=cd,
                                text=self.src(node), substituted=self.substituted > 0))

    def assign(self, node: Node) -> tuple[str, Word]:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        key = self.src(name) if name is not None else "?"
        return key, (self.word(value) if value is not None else Word("", ""))

    def command(self, node: Node, cd: tuple[Word, ...], redirects: tuple[Redirect, ...],
                stdin: SimpleCommand | None) -> tuple[Word, ...]:
        stdin_text = self.stdin_text
        self.stdin_text = False
        assigns: list[tuple[str, Word]] = []
        words: list[Word] = []
        reds = list(redirects)
        for child in node.named_children:
            if child.type == "variable_assignment":
                assigns.append(self.assign(child))
            elif child.type == "command_name":
                words.append(self.word(child.named_children[0] if child.named_children else child))
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                stdin_text = stdin_text or child.type != "file_redirect"
                reds.extend(self.redirect(child, cd))
            elif child.type == "comment":
                continue
            else:
                words.extend(self.words(child))
        cmd = SimpleCommand(words=tuple(words), assignments=tuple(assigns), redirects=tuple(reds), cd=cd,
                            text=self.src(node), substituted=self.substituted > 0,
                            stdin_from=(stdin.words[0].text if stdin is not None and stdin.words else None),
                            stdin_from_words=(stdin.words if stdin is not None else ()),
                            stdin_chain=((*stdin.stdin_chain, stdin.words) if stdin is not None else ()),
                            stdin_text=stdin_text)
        if words and not words[0].dynamic and words[0].text in self.defining:
            self.out.problems.append(f"the function {words[0].text} calls itself (it may never end: a fork bomb)")
        self.emit(cmd)
        if words and not words[0].dynamic and words[0].text == "cd" and not self.substituted:
            return cd + (words[1] if len(words) > 1 else Word("~", "~"),)
        if words and not words[0].dynamic and words[0].text in ("pushd", "popd"):
            return cd + (Word("$" + words[0].text, words[0].text, dynamic=True),)
        return cd

    def redirect(self, node: Node, cd: tuple[Word, ...]) -> list[Redirect]:
        if node.type == "heredoc_redirect":
            out: list[Redirect] = []
            for child in node.named_children:  # `cat <<EOF > file`: the file redirect sits inside
                if child.type == "file_redirect":
                    out.extend(self.redirect(child, cd))
                elif child.type == "heredoc_body":
                    for sub in child.named_children:  # an unquoted heredoc's substitutions run
                        if sub.type in ("command_substitution", "expansion", "simple_expansion"):
                            self.word(sub)
            return out
        if node.type == "herestring_redirect":
            for child in node.named_children:
                self.out.here_strings.append(self.word(child))
            return []
        op = ""
        for child in node.children:
            if not child.is_named:
                op += self.src(child)
        dest = node.child_by_field_name("destination")
        if dest is None:
            named = [c for c in node.named_children if c.type != "file_descriptor"]
            dest = named[-1] if named else None
        if dest is None:
            return []
        target = self.word(dest)
        dup = op in (">&", "<&", ">&-", "<&-") and (target.text.isdigit() or target.text == "-")
        return [Redirect(op=op or ">", target=target, fd_dup=dup)]

    def for_each(self, node: Node, cd: tuple[Word, ...], redirects: tuple[Redirect, ...]) -> bool:
        """``for f in src/*.jsx; do mv "$f" "${f%.jsx}.tsx"; done``: the body is walked once per value,
        the variable standing for that value (a glob stays one: any file it matches), so each command
        is judged with the paths it will really be given. Only when every value is written out (no
        expansion builds one), there are at most :data:`MAX_LOOP_VALUES` of them, and nothing in the
        command line can give the variable another value; otherwise False, and the loop is walked with
        the variable unknown."""
        var = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        values_nodes = node.children_by_field_name("value")
        if var is None or body is None or not values_nodes:
            return False
        name = self.src(var)
        emitted = len(self.out.commands)
        values = [w for v in values_nodes for w in self.words(v)]
        if (len(values) > MAX_LOOP_VALUES or any(w.dynamic for w in values)
                or self.loop_bodies + len(values) > MAX_LOOP_BODIES
                or sum(1 for _ in _REBINDS(name).finditer(self.data.decode("utf-8", "replace"))) > 1):
            # (the loop's own `for f` is one; anything else anywhere in the line, a function that
            # assigns it included, may give it another value). The walk the loop gets instead reads
            # the values' substitutions again: what reading them here found is taken back.
            del self.out.commands[emitted:]
            return False
        saved = self.loop.get(name)
        try:
            for value in values:
                self.loop_bodies += 1
                self.loop[name] = value
                self.statement(body, cd, redirects)
        finally:
            if saved is None:
                self.loop.pop(name, None)
            else:
                self.loop[name] = saved
        return True

    def emit(self, cmd: SimpleCommand) -> None:
        self.out.commands.append(cmd)

    # --- words ---------------------------------------------------------------------------
    def words(self, node: Node) -> list[Word]:
        """An argument's words: one, or those a brace expansion makes of it (``src/{a,b}``)."""
        raw = self.src(node)
        if "{" in raw and _BRACE_WORD.fullmatch(raw):
            expanded = brace_expand(raw)
            if expanded is not None and len(expanded) > 1:
                self.word(node)  # nothing in it runs, but read it as any word is read
                return [Word(text=x, raw=x, glob=any(c in x for c in "*?[")) for x in expanded]
        return [self.word(node)]

    def word(self, node: Node) -> Word:
        raw = self.src(node)
        text, dynamic, glob = self.resolve(node)
        return Word(text=text, raw=raw, dynamic=dynamic, glob=glob)

    def resolve(self, node: Node) -> tuple[str, bool, bool]:
        t = node.type
        raw = self.src(node)
        if t == "word":
            return _unescape_word(raw)
        if t == "number":
            return raw, False, False
        if t == "raw_string":
            return raw[1:-1], False, False
        if t == "string":
            parts: list[str] = []
            dynamic = glob = False
            pos = node.start_byte + 1
            for child in node.named_children:
                if child.start_byte > pos:
                    parts.append(_unescape_dq(self.data[pos:child.start_byte].decode("utf-8", "replace")))
                if child.type == "string_content":
                    parts.append(_unescape_dq(self.src(child)))
                else:
                    txt, dyn, g = self.resolve(child)
                    parts.append(txt)
                    dynamic = dynamic or dyn
                    glob = glob or g  # only a loop's variable bound to a glob ("$f") is one here
                pos = child.end_byte
            end = node.end_byte - 1
            if end > pos:
                parts.append(_unescape_dq(self.data[pos:end].decode("utf-8", "replace")))
            return "".join(parts), dynamic, glob
        if t == "ansi_c_string":
            body = raw[2:-1]
            return body, "\\" in body, False
        if t == "translated_string":
            return self.resolve(node.named_children[0]) if node.named_children else ("", False, False)
        if t == "concatenation":
            texts: list[str] = []
            dynamic = glob = False
            brace = False
            for child in node.named_children:
                txt, dyn, g = self.resolve(child)
                texts.append(txt)
                dynamic = dynamic or dyn
                glob = glob or g
            joined = "".join(texts)
            # brace expansion (`{a,b}`, `{1..3}`) makes several words of one
            brace = "{" in raw and ("," in raw or ".." in raw) and not raw.startswith(("'", '"'))
            return joined, dynamic or brace, glob
        if t == "simple_expansion":
            name = raw[1:]
            if name in self.loop:
                return self.loop[name].text, False, self.loop[name].glob
            if name in self.known:
                return self.known[name], False, False
            return raw, True, False
        if t == "expansion":
            inner = raw[2:-1]
            if inner in self.loop:
                return self.loop[inner].text, False, self.loop[inner].glob
            strip = _STRIP_SUFFIX.fullmatch(inner)
            if strip and strip.group(1) in self.loop:
                # `${f%.jsx}`: the value with an ending taken off, still a file in the value's folder
                folder = posixpath.dirname(self.loop[strip.group(1)].text)
                return posixpath.join(folder, "*") if folder else "*", False, True
            if inner in self.known:
                return self.known[inner], False, False
            for child in node.named_children:  # ${x:-$(cmd)}: the substitution still runs
                if child.type in ("command_substitution", "process_substitution"):
                    self.word(child)
            return raw, True, False
        if t in ("command_substitution", "process_substitution"):
            self.substituted += 1
            try:
                self.block(node, ())
            finally:
                self.substituted -= 1
            if t == "process_substitution":
                return "/dev/fd/63", False, False
            if _DATE_STAMP.fullmatch(raw):
                # `backup-$(date +%Y%m%d).tgz`: the date's digits, letters, `-` and `_`, never a `/` or
                # a `.`: one name in the folder written, placed as if the stamp were `0`
                return "0", False, False
            return raw, True, False
        if t == "arithmetic_expansion":
            self.expression(node)
            return raw, True, False
        if t in ("extglob_pattern", "regex"):
            return raw, False, True
        if t == "brace_expression":
            return raw, True, False
        return raw, True, False


_DATE_STAMP = re.compile(r"\$\(\s*date(\s+-u)?\s+\+['\"]?(%[YmdHMSsyjFTuwNVGgCIR]|[A-Za-z0-9_-])+['\"]?\s*\)")
"""``$(date +%Y%m%d-%H%M)``: a time stamp made of ``date``'s digit fields and plain characters (not
``date`` alone, nor ``%c``, ``%D``, ``%e``: spaces split the word, a ``/`` makes folders)."""
MAX_LOOP_VALUES = 16
MAX_LOOP_BODIES = 64
"""A for loop's body is walked once per value: at most this many walks in one command line."""
_STRIP_SUFFIX = re.compile(r"([A-Za-z_]\w*)%%?[\w.*?-]+")
"""``${f%.jsx}``: an ending of plain characters taken off a variable (no ``/``: it stays in its folder)."""


def _REBINDS(name: str) -> re.Pattern[str]:
    """What in a loop's body can give its variable another value."""
    n = re.escape(name)
    return re.compile(rf"(?<![\w$]){n}\+?=|\b(read|declare|typeset|local|export|readonly|unset|mapfile|readarray|"
                      rf"getopts|let|eval|source)\b|\bprintf\s+-v|(^|[\s;&|(]|\bdo)\.\s|\(\(|\b(for|select)\s+{n}\b")


_BRACE_WORD = re.compile(r"[A-Za-z0-9_./,{}*?+@%:=~-]+")
"""A word whose braces can be expanded as written: no quotes, expansions or escapes in it."""
MAX_BRACE_WORDS = 64


def brace_expand(raw: str) -> list[str] | None:
    """Bash's brace expansion of a plain word (``a{b,c}d`` -> ``abd acd``; ``{1..3}``; nested), or None
    when it makes more than :data:`MAX_BRACE_WORDS` words or is not well formed."""
    def split_top(body: str) -> list[str] | None:
        parts, depth, cur = [], 0, ""
        for ch in body:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth < 0:
                    return None
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        return parts if depth == 0 else None

    def expand(word: str) -> list[str] | None:
        depth, start = 0, -1
        for i, ch in enumerate(word):
            if ch == "{":
                if depth == 0:
                    start = i
                depth += 1
            elif ch == "}" and depth:
                depth -= 1
                if depth == 0:
                    body = word[start + 1:i]
                    head, tail = word[:start], word[i + 1:]
                    seq = re.fullmatch(r"(-?\d+)\.\.(-?\d+)|([A-Za-z])\.\.([A-Za-z])", body)
                    if seq and seq.group(1) is not None:
                        a, b = int(seq.group(1)), int(seq.group(2))
                        if abs(b - a) >= MAX_BRACE_WORDS:
                            return None
                        items = [str(x) for x in (range(a, b + 1) if a <= b else range(a, b - 1, -1))]
                    elif seq:
                        a, b = ord(seq.group(3)), ord(seq.group(4))
                        items = [chr(x) for x in (range(a, b + 1) if a <= b else range(a, b - 1, -1))]
                    else:
                        parts = split_top(body)
                        if parts is None or len(parts) < 2:  # `{a}` stays as it is: look further on
                            rest = expand(tail)
                            return None if rest is None else [word[:i + 1] + r for r in rest]
                        items = parts
                    out: list[str] = []
                    for item in items:
                        for x in expand(head + item + tail) or []:
                            out.append(x)
                            if len(out) > MAX_BRACE_WORDS:
                                return None
                    return out
        return [word]

    return expand(raw)


def _unescape_word(raw: str) -> tuple[str, bool, bool]:
    """An unquoted word: backslashes quote the next character; unquoted ``* ? [`` are globs."""
    out: list[str] = []
    glob = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        if ch in "*?[":
            glob = True
        out.append(ch)
        i += 1
    text = "".join(out)
    dynamic = text.startswith("~") and not (text == "~" or text.startswith("~/"))  # ~user
    return text, dynamic, glob


def _unescape_dq(text: str) -> str:
    """Inside double quotes a backslash quotes only ``$ ` " \\`` and a newline."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
