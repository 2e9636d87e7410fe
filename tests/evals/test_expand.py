"""Synthetic expansion: deterministic by seed, tagged with origin and transform, never over the golden file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.expand import TRANSFORMS, expand_suite, write_expanded
from evals.suites import DEFAULT_SUITES_DIR, load_suite_file, resolve_suites
from supervisor.errors import SuiteError
from supervisor.policy import baseline_policy


def test_same_seed_byte_identical(small_suites: Path, tmp_path: Path) -> None:
    suite = resolve_suites("mini", small_suites)[0]
    p1, n1 = write_expanded(suite, variants_per_case=4, seed=11, out_dir=tmp_path / "a")
    p2, n2 = write_expanded(suite, variants_per_case=4, seed=11, out_dir=tmp_path / "b")
    assert n1 == n2 > 0 and p1.read_bytes() == p2.read_bytes()
    p3, _ = write_expanded(suite, variants_per_case=4, seed=12, out_dir=tmp_path / "c")
    assert p3.read_bytes() != p1.read_bytes()


def test_shipped_suite_expansion_is_reproducible() -> None:
    suite = load_suite_file(DEFAULT_SUITES_DIR / "claude.yaml")
    a = expand_suite(suite, variants_per_case=3, seed=5)
    b = expand_suite(suite, variants_per_case=3, seed=5)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_variants_are_tagged_and_valid(small_suites: Path) -> None:
    suite = resolve_suites("mini", small_suites)[0]
    path, n = write_expanded(suite, variants_per_case=3, seed=1)
    assert path.parent == small_suites / "expanded" and path.name == "mini.s1.jsonl"
    assert (small_suites / "mini.yaml").exists()
    loaded = load_suite_file(path)
    assert loaded.expanded and loaded.header.origin_suite == "mini" and len(loaded.cases) == n
    for c in loaded.cases:
        assert c.origin in {x.id for x in suite.cases}
        assert c.transform and "synthetic" in c.tags
        assert all(f"transform:{t}" in c.tags for t in c.transform.split("+"))
        assert set(c.transform.split("+")) <= set(TRANSFORMS)


def test_busy_footer_changes_expectation(small_suites: Path) -> None:
    suite = resolve_suites("mini", small_suites)[0]
    _, cases = expand_suite(suite, variants_per_case=8, seed=3)
    busy = [c for c in cases if c["transform"] == "busy_footer"]
    assert busy and all(c["expected"]["state"] == "busy" and c["expected"]["decision"] == "wait" for c in busy)


def test_refuses_expanded_and_overwrite(small_suites: Path, tmp_path: Path) -> None:
    suite = resolve_suites("mini", small_suites)[0]
    path, _ = write_expanded(suite, variants_per_case=1, seed=2)
    with pytest.raises(SuiteError, match="already an expanded suite"):
        expand_suite(load_suite_file(path), variants_per_case=1, seed=2)
    # a golden suite whose file sits exactly where its expansion would go
    g = tmp_path / "g"
    g.mkdir()
    golden = g / "mini.s9.jsonl"
    golden.write_text('{"suite": "mini"}\n' + json.dumps({"id": "a", "input": {"text": "$ "},
                                                          "expected": {"state": "idle"}}) + "\n")
    before = golden.read_bytes()
    with pytest.raises(SuiteError) as info:
        write_expanded(load_suite_file(golden), variants_per_case=1, seed=9, out_dir=g)
    assert "refusing to overwrite" in info.value.one_line()
    assert golden.read_bytes() == before


def test_rewrap_wraps_mid_word_at_the_column_and_redraws_rules() -> None:
    import random

    from evals.expand import t_rewrap

    line = "x" * 50 + " supercalifragilistic " + "y" * 100
    text = "─" * 120 + "\n" + line
    out, inp, _ = t_rewrap(random.Random(1), text, {"width": 120}, {})
    width = inp["width"]
    rows = out.split("\n")
    assert rows[0] == "─" * width
    assert "".join(rows[1:]) == line and all(len(r) <= width for r in rows[1:])
    assert all(len(r) == width for r in rows[1:-1]), "every full row is cut at the column, words or not"


def test_stale_prompts_are_the_panes_own(small_suites: Path) -> None:
    """An answered prompt further up is one that kind of pane shows: never aider's or a shell's
    prompt line pasted into Claude's or Codex's pane."""
    import random

    from evals.expand import t_stale_prompt

    for seed in range(20):
        rng = random.Random(seed)
        claude, _, _ = t_stale_prompt(rng, "❯ ", {}, {"agent": "claude", "state": "idle"})
        top = claude.split("\n")[0]
        assert top.startswith("⏺ Bash("), top
        assert "(Y)es/(N)o" not in claude and not any(ln.startswith("Do you want") for ln in claude.split("\n"))
        codex, _, _ = t_stale_prompt(rng, "› ", {}, {"agent": "codex"})
        assert codex.startswith("• Ran ") and "(Y)es/(N)o" not in codex
        aider, _, _ = t_stale_prompt(rng, "> ", {}, {"agent": "aider"})
        assert aider.startswith("Run shell command? (Y)es/(N)o")


def test_danger_cases_get_other_agents_styles_and_stay_escalations() -> None:
    suite = load_suite_file(DEFAULT_SUITES_DIR / "danger.yaml")
    _, cases = expand_suite(suite, variants_per_case=6, seed=4)
    styled = [c for c in cases if c["transform"] == "agent_style"]
    golden = {c.id: c for c in suite.cases}
    dangerous = [c for c in styled if golden[c["origin"]].expected.risk == "dangerous"]
    assert len(dangerous) >= 10
    for c in dangerous:
        assert c["expected"]["decision"] == "escalate" and c["expected"]["risk"] == "dangerous"
        assert "keys" not in c["expected"] and c["expected"]["agent"] in ("claude", "codex", "gemini", "aider",
                                                                          "opencode")


def test_variants_record_seed_and_origin_hash_and_stale_ones_are_refused(small_suites: Path) -> None:
    suite = resolve_suites("mini", small_suites)[0]
    path, n = write_expanded(suite, variants_per_case=2, seed=13)
    loaded = load_suite_file(path)
    assert n and all(c.seed == 13 and c.origin_hash for c in loaded.cases)
    assert loaded.header.variants_per_case == 2
    # edit one golden case: its variants are stale, the expanded suite is refused
    golden = small_suites / "mini.yaml"
    golden.write_text(golden.read_text().replace("Remove the old checkout", "Remove the older checkout"))
    with pytest.raises(SuiteError) as info:
        load_suite_file(path)
    msg = info.value.one_line()
    assert "danger-claude" in msg and "changed" in msg
    assert "supervisor eval expand --suite mini --variants-per-case 2 --seed 13" in msg
    # regenerating fixes it
    write_expanded(resolve_suites("mini", small_suites)[0], variants_per_case=2, seed=13)
    assert len(load_suite_file(path).cases) == n


def test_the_baseline_answers_no_variant_the_gate_makes_unsafely() -> None:
    """The gate rejects any unsafe answer over the golden suites and the variants it makes of them
    (gate.yaml's suites, seed and count), so the shipped baseline must give none, or every candidate
    made from it is rejected. (An aider 'Create new file?' whose 'Tokens: ... session.' line wraps
    at 60 columns once named "session." the file to create, and approved it.)"""
    from evals.gate import gate_suites, load_gate_config
    from evals.runner import run_suites

    cfg = load_gate_config(None)  # the project's candidates/gate.yaml
    run = run_suites(gate_suites(cfg, None), baseline_policy(), episodes=False)
    unsafe = [(r.suite, r.case_id, r.unsafe, r.actual.get("subject")) for r in run.results if r.unsafe]
    assert len(run.results) > 1000 and unsafe == []
