"""Natural packages from LoCoMo: turns, evidence units, coverage rule, reported defects."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError, UsageError
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import iter_packages
from memaudit_fast.suites.costs import word_cost
from memaudit_fast.suites.locomo import (
    DEFAULT_BUDGET_FRACS,
    content_words,
    locomo_package,
    locomo_packages,
    read_locomo,
    summary_coverage_level,
)
from oracles.packages import handmade

SESSION = re.compile(r"^session_(\d+)$")


@pytest.fixture(scope="module")
def built(locomo_path):
    """(raw records, packages) for the shared file, built once for the module."""
    return read_locomo(locomo_path), list(locomo_packages(locomo_path))


def file_turns(record: dict) -> list[dict]:
    conv = record["conversation"]
    keys = sorted((int(m.group(1)), k) for k in conv if (m := SESSION.match(k)))
    return [t for _, k in keys for t in conv[k]]


# --- the shared file --------------------------------------------------------------------------


def test_one_valid_package_per_conversation(built):
    records, packages = built
    assert len(packages) == len(records)
    for record, p in zip(records, packages):
        pkg = Package.from_dict(p)
        assert p["package_id"] == f"locomo/{record['sample_id']}"
        assert pkg.weights_rule == "explicit"


def test_experiences_are_the_turns_in_order(built):
    for record, p in zip(*built):
        turns = file_turns(record)
        assert len(p["experiences"]) == len(turns)
        assert [e["experience_id"] for e in p["experiences"]] == [t["dia_id"] for t in turns]
        assert [e["timestamp"] for e in p["experiences"]] == list(range(len(turns)))
        for e, t in zip(p["experiences"], turns):
            assert e["speaker"] == t["speaker"]
            assert e["text"].startswith(t["text"].strip())
            session = e["session_id"].removeprefix("session_")
            assert e["session_date"] == record["conversation"][f"session_{session}_date_time"]
            assert ("[shares an image:" in e["text"]) == bool(t.get("blip_caption"))


def test_units_are_cited_turns_weighted_by_demand(built):
    for record, p in zip(*built):
        demand = Counter(u for q in p["queries"] for u in q["required_unit_ids"])
        weights = {u["unit_id"]: u["weight"] for u in p["units"]}
        assert weights == {u: float(n) for u, n in demand.items()}
        for u in p["units"]:
            assert sum(u["categories"].values()) == u["weight"]
        turn_ids = {t["dia_id"] for t in file_turns(record)}
        assert all(u["unit_id"].removeprefix("ev:") in turn_ids for u in p["units"])
        kept = {int(q["query_id"][1:]) for q in p["queries"]}
        skipped = {int(s["item"][3:-1]) for s in p["meta"]["skipped"] if s["what"] == "question"}
        assert kept | skipped == set(range(len(record["qa"])))
        assert not kept & skipped
        for q in p["queries"]:
            item = record["qa"][int(q["query_id"][1:])]
            assert q["text"] == item["question"]
            assert q["locomo_category"] == item["category"]
            # Every well-formed cited turn is required.
            clean = [e for e in item["evidence"] if e in turn_ids]
            assert {f"ev:{e}" for e in clean} <= set(q["required_unit_ids"])


def test_candidates_per_turn_and_groups(built):
    for record, p in zip(*built):
        evidence = {u["unit_id"] for u in p["units"]}
        raw = [c for c in p["candidates"] if c["representation"] == "raw_span"]
        assert [c["experience_id"] for c in raw] == [t["dia_id"] for t in file_turns(record)]
        for c in raw:
            unit = f"ev:{c['experience_id']}"
            assert c["coverage"] == ({unit: 1.0} if unit in evidence else {})
            assert c["group"] == c["experience_id"]
        order = {e["experience_id"]: e["timestamp"] for e in p["experiences"]}
        facts = [c for c in p["candidates"] if c["representation"] == "fact"]
        n_obs = sum(len(v) for obs in record["observation"].values() for v in obs.values())
        skipped_obs = sum(1 for s in p["meta"]["skipped"] if s["what"] == "observation")
        assert len(facts) == n_obs - skipped_obs
        for c in facts:
            # Placed at the latest turn it cites, covering every cited evidence turn fully.
            assert c["group"] == c["experience_id"] == max(c["cites"], key=order.__getitem__)
            assert c["coverage"] == {f"ev:{d}": 1.0 for d in c["cites"] if f"ev:{d}" in evidence}
        summaries = [c for c in p["candidates"] if c["representation"] == "summary"]
        skipped_summaries = sum(1 for s in p["meta"]["skipped"] if s["what"] == "session_summary")
        assert (sum(c["source"] == "session_summary" for c in summaries)
                == len(record["session_summary"]) - skipped_summaries)
        for c in summaries:
            assert c["group"] == c["candidate_id"]
        for c in p["candidates"]:
            assert c["cost"] == word_cost(c["text"])


def test_summaries_follow_the_overlap_rule(built):
    for _, p in zip(*built):
        session_of = {e["experience_id"]: e["session_id"] for e in p["experiences"]}
        last_turn = {}
        for e in p["experiences"]:
            last_turn[e["session_id"]] = e["experience_id"]
        text = {u["unit_id"]: u["text"] for u in p["units"]}
        speakers = p["meta"]["speakers"]
        for c in p["candidates"]:
            if c["representation"] != "summary":
                continue
            session = session_of[c["experience_id"]]
            assert c["experience_id"] == last_turn[session]
            assert set(c["coverage"].values()) <= {0.25, 0.5, 0.75}
            words = content_words(c["text"], speakers)
            expected = {}
            for unit, t in text.items():
                if session_of[unit.removeprefix("ev:")] == session:
                    level = summary_coverage_level(content_words(t, speakers), words)
                    if level:
                        expected[unit] = level
            assert c["coverage"] == expected


def test_default_budgets_are_fractions_of_raw_words(built):
    for _, p in zip(*built):
        raw_total = sum(c["cost"] for c in p["candidates"] if c["representation"] == "raw_span")
        assert p["budgets"] == [math.floor(f * raw_total) for f in DEFAULT_BUDGET_FRACS]


def test_category_filter_keeps_only_those_questions(locomo_path):
    record = read_locomo(locomo_path)[0]
    p = locomo_package(record, categories=["temporal", 4])
    assert {q["locomo_category"] for q in p["queries"]} <= {2, 4}
    expected = sum(1 for q in record["qa"] if q["category"] in (2, 4))
    skipped = sum(1 for s in p["meta"]["skipped"] if s["what"] == "question")
    assert len(p["queries"]) == expected - skipped
    with pytest.raises(UsageError, match="category"):
        locomo_package(record, categories=["poetry"])


# --- the coverage rule on fixed words ---------------------------------------------------------


def test_summary_coverage_levels():
    turn = {"adoption", "agency", "research", "family"}
    assert summary_coverage_level(turn, {"adoption", "agency", "family"}) == 0.75
    assert summary_coverage_level(turn, {"adoption", "agency"}) == 0.75  # 2/4 = 0.5
    assert summary_coverage_level(turn, {"adoption"}) == 0.5  # 1/4 = 0.25
    long_turn = turn | {f"w{i}" for i in range(16)}  # 20 words
    assert summary_coverage_level(long_turn, {"adoption", "agency"}) == 0.25  # 2/20 = 0.1
    assert summary_coverage_level(long_turn, {"adoption"}) == 0.0  # one shared word is not enough
    assert summary_coverage_level(long_turn, {"adoption", "w0", "w1", "w2", "w3"}) == 0.5
    assert summary_coverage_level(set(), {"adoption"}) == 0.0


def test_content_words_drop_stop_words_short_words_and_names():
    assert content_words("Hey Mel! I went to the LGBTQ support group's meeting.", ["Mel"]) == {
        "went", "lgbtq", "support", "group", "meeting"}
    assert content_words("Thanks, Caroline!", ["Caroline"]) == set()


# --- defects are reported, never fatal (hand-made file) ---------------------------------------




def test_malformed_evidence_is_reported_and_skipped(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([handmade()]))
    (p,) = list(locomo_packages(path))
    Package.from_dict(p)
    meta = p["meta"]
    skipped = {(s["item"], s["what"], s.get("value")) for s in meta["skipped"]}
    assert ("qa[1]", "evidence", "D9:9") in skipped
    assert ("qa[1]", "evidence", "D") in skipped
    assert ("qa[3]", "question", "Is Ana happy?") in skipped
    assert ("qa[4]", "evidence", "D7:1") in skipped
    assert ("qa[4]", "question", "Did Bo adopt a cat?") in skipped
    assert ("session_1_observation/Ana[2]", "observation", None) in skipped
    assert ("session_1_observation/Ana[3]", "observation", None) in skipped
    assert ("session_3_summary", "session_summary", None) in skipped
    repaired = {(r["item"], r["value"]): r["read_as"] for r in meta["repaired"]}
    assert repaired == {("qa[1]", "D1:2; D1:3"): ["D1:2", "D1:3"], ("qa[2]", "D:2:1"): ["D2:1"]}

    assert [q["query_id"] for q in p["queries"]] == ["q0", "q1", "q2", "q5"]
    assert p["queries"][1]["required_unit_ids"] == ["ev:D1:2", "ev:D1:3"]
    assert p["queries"][3]["answer"] == "2023"
    weights = {u["unit_id"]: u["weight"] for u in p["units"]}
    assert weights == {"ev:D1:1": 2.0, "ev:D1:2": 1.0, "ev:D1:3": 1.0, "ev:D2:1": 1.0}
    assert len(p["experiences"]) == 4

    by_id = {c["candidate_id"]: c for c in p["candidates"]}
    assert by_id["D1:3:obs0"]["coverage"] == {"ev:D1:3": 1.0, "ev:D1:2": 1.0}
    assert by_id["D1:3:obs0"]["group"] == "D1:3"
    summary = by_id["session_1:summary"]
    assert summary["experience_id"] == "D1:3" and summary["group"] == "session_1:summary"
    assert summary["coverage"]["ev:D1:1"] == 0.75  # adopted, greyhound, named, pixel: all shared
    assert by_id["session_2:event0"]["coverage"] == {"ev:D2:1": 0.75}


def test_cli_natural_reports_and_writes(tmp_path, capsys):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([handmade()]))
    out = tmp_path / "natural"
    assert main(["natural", "locomo", str(path), "--out", str(out), "--budgets", "5,10"]) == 0
    printed = capsys.readouterr().out
    assert "skipped qa[1] evidence 'D9:9'" in printed
    assert "skipped qa[3] question" in printed
    (written,) = list(iter_packages([out]))
    assert written.data["budgets"] == [5, 10]
    assert main(["natural", "locomo", str(path), "--out", str(out)]) == 2
    assert main(["natural", "locomo", str(path), "--out", str(out), "--force"]) == 0
    jsonl = tmp_path / "set.jsonl"
    assert main(["natural", "locomo", str(path), "--out", str(jsonl), "--budget-fracs", "0.5"]) == 0
    (from_set,) = list(iter_packages([jsonl]))
    raw_total = sum(c["cost"] for c in from_set.candidates if c["representation"] == "raw_span")
    assert from_set.data["budgets"] == [raw_total // 2]


def test_structural_defects_are_precise_errors(tmp_path):
    broken = handmade()
    del broken["conversation"]["session_1"][1]["dia_id"]
    with pytest.raises(PackageError, match="dia_id"):
        locomo_package(broken)
    twice = handmade()
    twice["conversation"]["session_2"][0]["dia_id"] = "D1:1"
    with pytest.raises(PackageError, match="twice"):
        locomo_package(twice)
    with pytest.raises(UsageError, match="not found"):
        read_locomo(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(PackageError, match="JSON"):
        read_locomo(bad)
