"""Batch durability: one right record per (content, options, budget), whatever the user does.

Resume with other options, an edited set, the same set twice, relative and absolute paths,
duplicate budgets, a second writer, a file that is not a results file, a link or an existing
Parquet file at the output: each is either done exactly once or refused before anything is
touched.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.cli.main import main
from memaudit_fast.experiments.batch import BatchOptions, member_digest, read_done, run_batch
from memaudit_fast.model.sets import iter_raw_members, write_package_set
from memaudit_fast.solve.exact import solve
from memaudit_fast.suites.small import generate_package
from oracles.batch_runs import locked

DISTS = ["base", "density_trap", "update_chain", "summary_tradeoff", "scope_shift"]


def packages(count: int, first_seed: int = 0) -> list[dict]:
    return [generate_package(DISTS[k % len(DISTS)], seed=first_seed + k) for k in range(count)]


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def keys(records: list[dict], by: str = "budget") -> Counter:
    return Counter((r["member_digest"], r["options_digest"], r.get(by)) for r in records)


def batch(*args: str | Path) -> int:
    return main(["batch", *map(str, args), "--quiet"])


@pytest.fixture
def small_set(tmp_path: Path) -> Path:
    path = tmp_path / "set.jsonl"
    write_package_set(packages(6), path)
    return path


@pytest.mark.parametrize(("first", "second", "what"), [
    (["--budgets", "2,4"], ["--budgets", "2,4,8"], "budgets 2,4 in the file, 2,4,8 now"),
    (["--budgets", "2,4"], ["--budget-fracs", "0.1"], "budget_fracs none in the file, 0.1 now"),
    (["--budgets", "2", "--writers", "gvt"], ["--budgets", "2", "--writers", "gvt,greedy"],
     "writers gvt in the file, greedy,gvt now"),
    (["--budgets", "2"], ["--budgets", "2", "--node-limit", "100"], "node_limit none in the file, 100 now"),
    ([], ["--budgets", "2"], "budgets none in the file, 2 now"),
    (["--budgets", "2"], ["--budgets", "2", "--group-capacity", "2"], "group_capacity none in the file, 2 now"),
    (["--budgets", "2"], ["--budgets", "2", "--certify", "highs"], "certify none in the file, highs now"),
])
def test_resume_with_other_options_is_refused_and_the_file_untouched(tmp_path, small_set, capsys, first, second, what):
    out = tmp_path / "out.jsonl"
    assert batch(small_set, "--out", out, "--workers", "1", *first) == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert batch(small_set, "--out", out, "--workers", "1", *second, "--resume") == 2
    assert out.read_bytes() == before
    err = capsys.readouterr().err
    assert what in err and "other options" in err and "not modified" in err


def test_resume_accepts_the_same_options_in_another_order_and_solves_nothing(tmp_path, small_set, capsys):
    out = tmp_path / "out.jsonl"
    assert batch(small_set, "--out", out, "--budgets", "2,4", "--writers", "gvt,greedy", "--workers", "1") == 0
    before = out.read_bytes()
    assert batch(small_set, "--out", out, "--budgets", "4,2", "--writers", "greedy,gvt", "--workers", "1", "--resume") == 0
    assert out.read_bytes() == before
    assert "6 already done" in capsys.readouterr().err


def test_an_edited_set_resolves_what_changed_and_only_that(tmp_path):
    members = packages(6)
    path = tmp_path / "set.jsonl"
    write_package_set(members, path)
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budgets=(2, 4, 8))
    run_batch([path], out, options, workers=1, backend="serial")
    # Remove line 2, change the costs of one package, add a new one: sources now point at
    # other lines than before.
    changed = json.loads(json.dumps(members[4]))
    for candidate in changed["candidates"]:
        candidate["cost"] = candidate["cost"] + 1
    edited = [members[0], members[2], members[3], changed, members[5], packages(1, first_seed=50)[0]]
    write_package_set(edited, path, overwrite=True)
    summary = run_batch([path], out, options, workers=1, backend="serial", resume=True)
    assert summary.skipped == 4 and summary.packages == 2 and summary.stale == 2
    records = read(out)
    assert set(keys(records).values()) == {1}
    now = {member_digest(m): m for m in iter_raw_members([path])}
    current = [r for r in records if r["member_digest"] in now]
    # The records of the removed and the changed member were moved aside: the file holds the set.
    assert current == records and len(current) == 6 * 3
    assert {r["source"] for r in records} == {m[0] for m in now.values()}
    assert all(r["source"] == now[r["member_digest"]][0] for r in records)
    aside = read(tmp_path / "out.superseded.jsonl")
    assert len(aside) == 2 * 3 and not {r["member_digest"] for r in aside} & now.keys()
    for package in edited:
        digest = next(d for d, m in now.items() if json.loads(m[2])["package_id"] == package["package_id"]
                      and json.loads(m[2])["candidates"] == package["candidates"])
        expected = [r.value for r in solve(package, budgets=[2, 4, 8])]
        got = [r["opt"] for r in current if r["member_digest"] == digest]
        assert got == pytest.approx(expected, rel=1e-12)


def test_relative_then_absolute_path_adds_nothing(tmp_path, small_set, monkeypatch):
    out = tmp_path / "out.jsonl"
    monkeypatch.chdir(tmp_path)
    assert batch("set.jsonl", "--out", "out.jsonl", "--budgets", "2,4", "--workers", "1") == 0
    before = out.read_bytes()
    assert batch(small_set.resolve(), "--out", out.resolve(), "--budgets", "2,4", "--workers", "1", "--resume") == 0
    assert out.read_bytes() == before


def test_the_same_set_twice_and_duplicate_budgets_give_one_record_per_key(tmp_path, small_set, capsys):
    out = tmp_path / "out.jsonl"
    assert batch(small_set, small_set, "--out", out, "--budgets", "2,2,4", "--workers", "2") == 0
    records = read(out)
    assert len(records) == 6 * 2 and set(keys(records).values()) == {1}
    assert "6 repeated members scored once" in capsys.readouterr().err


def test_one_package_as_a_line_a_json_file_and_a_json_gz_file_is_one_member(tmp_path, small_set, capsys):
    """Keyed by JSON content: the whitespace between tokens (a pretty-printed file against a
    compact line) and gzip do not make another member; a changed value does."""
    import gzip

    package = packages(1)[0]
    directory = tmp_path / "dir"
    directory.mkdir()
    (directory / "a.json").write_text(json.dumps(package, indent=2) + "\n")
    with gzip.open(directory / "b.json.gz", "wt") as handle:
        handle.write(json.dumps(package, separators=(",", ":")))
    (directory / "c.jsonl").write_text(json.dumps(package) + "\n")
    other = json.loads(json.dumps(package))
    other["candidates"][0]["cost"] += 1
    (directory / "d.json").write_text(json.dumps(other, indent=2))
    digests = {member_digest(m) for m in iter_raw_members(directory)}
    assert len(digests) == 2
    out = tmp_path / "out.jsonl"
    assert batch(directory, "--out", out, "--budgets", "2,4", "--workers", "2") == 0
    records = read(out)
    assert len(records) == 2 * 2 and set(keys(records).values()) == {1}
    assert "2 repeated members scored once" in capsys.readouterr().err
    # Resumed with the same package given as a line of a set: nothing to do.
    line_set = tmp_path / "line.jsonl"
    line_set.write_text(json.dumps(package, separators=(", ", ": ")) + "\n")
    before = read(out)
    assert batch(line_set, "--out", out, "--budgets", "2,4", "--workers", "1", "--resume") == 0
    # Nothing solved; the other package, not in this set, was moved aside.
    assert "0 packages scored" in capsys.readouterr().err
    def plain(records: list[dict]) -> list[tuple]:
        return [(r["member_digest"], r["budget"], r["opt"]) for r in records]

    kept = read(out)
    assert len(kept) == 2 and set(plain(kept)) < set(plain(before))
    assert {r["source"] for r in kept} == {f"{line_set} line 1"}
    assert len(read(tmp_path / "out.superseded.jsonl")) == 2


_ESCAPED = {0x22: b'\\"', 0x5C: b"\\\\", 8: b"\\b", 12: b"\\f", 10: b"\\n", 13: b"\\r", 9: b"\\t"}
_SIMPLE = {ord("/"): 0x2F, ord("b"): 8, ord("f"): 12, ord("n"): 10, ord("r"): 13, ord("t"): 9, ord('"'): 0x22,
           ord("\\"): 0x5C}


def _hex4(text: bytes, k: int) -> int | None:
    digits = text[k + 2:k + 6]
    if text[k:k + 2] != b"\\u" or len(digits) < 4 or any(d not in b"0123456789abcdefABCDEF" for d in digits):
        return None
    return int(digits, 16)


def _escape_reference(text: bytes, k: int) -> tuple[bytes, int]:
    """The one spelling of the escape at text[k] (a backslash), and where it ends."""
    if k + 1 >= len(text):
        return b"\\", k + 1
    if text[k + 1] in _SIMPLE:
        cp, end = _SIMPLE[text[k + 1]], k + 2
    elif (cp := _hex4(text, k)) is not None:  # type: ignore[assignment]
        end = k + 6
        low = _hex4(text, end) if 0xD800 <= cp < 0xDC00 else None
        if low is not None and 0xDC00 <= low < 0xE000:
            cp, end = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00), end + 6
    else:
        return text[k:k + 2], k + 2
    if cp in _ESCAPED:
        return _ESCAPED[cp], end
    if cp < 0x20 or 0xD800 <= cp < 0xE000:
        return b"\\u%04x" % cp, end
    return chr(cp).encode("utf-8"), end


def _compact_reference(text: bytes) -> bytes:
    out, in_string, k = bytearray(), False, 0
    while k < len(text):
        c = text[k]
        if in_string and c == ord("\\"):
            spelt, k = _escape_reference(text, k)
            out += spelt
            continue
        if in_string:
            out.append(c)
            in_string = c != ord('"')
        elif c not in b" \n\r\t":
            out.append(c)
            in_string = c == ord('"')
        k += 1
    return bytes(out)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=60) | st.lists(st.sampled_from([b" ", b"\n", b"\t", b"\r", b'"', b"\\", b"a", b"{", b":", b",",
                                                          b"u", b"0", b"00e9", b"d83d", b"de00", b"/", b"n"]),
                                         max_size=40).map(b"".join))
def test_the_compact_form_drops_whitespace_between_tokens_only(text):
    # ... and spells each escaped character one way (see _escape_reference)
    from memaudit_fast import _core

    assert _core.compact_json(text) == _compact_reference(text)


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                    max_leaves=12),
       st.sampled_from([None, 1, 2]))
def test_the_compact_form_of_json_is_msgspecs(value, indent):
    import msgspec

    from memaudit_fast import _core

    # json.dumps escapes every non-ASCII character by default; unescaped, its strings are
    # spelt as the compact form spells them.
    text = json.dumps(value, indent=indent).encode()
    plain = json.dumps(value, indent=indent, ensure_ascii=False).encode()
    assert _core.compact_json(text) == _core.compact_json(plain) == msgspec.json.format(plain, indent=-1)


def test_a_file_keyed_by_an_older_digest_is_refused_untouched(tmp_path, small_set, capsys):
    import hashlib

    out = tmp_path / "out.jsonl"
    assert batch(small_set, "--out", out, "--budgets", "2", "--workers", "1") == 0
    records = read(out)
    older = BatchOptions(budgets=(2,)).identity()
    del older["member_digest"]  # what a batch that keyed packages by their bytes recorded
    digest = hashlib.sha256(json.dumps(older, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
    for record in records:
        record["options_digest"] = digest
        if "options" in record:
            record["options"] = older
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    before = out.read_bytes()
    capsys.readouterr()
    assert batch(small_set, "--out", out, "--budgets", "2", "--workers", "1", "--resume") == 2
    assert out.read_bytes() == before
    err = capsys.readouterr().err
    assert "older memaudit batch" in err and "another --out" in err and "not modified" in err


def test_a_package_with_repeated_own_budgets_gets_one_record_per_budget(tmp_path):
    package = dict(generate_package("base", seed=3), budgets=[8, 8, 8.0, 2])
    path = tmp_path / "set.jsonl"
    write_package_set([package], path)
    run_batch([path], tmp_path / "out.jsonl", workers=1, backend="serial")
    assert [r["budget"] for r in read(tmp_path / "out.jsonl")] == [8, 2]


def test_budget_fractions_are_keyed_by_the_fraction(tmp_path):
    zero_cost = generate_package("base", seed=1)
    for candidate in zero_cost["candidates"]:
        candidate["cost"] = 0  # every fraction gives budget 0: still one record per fraction
    path = tmp_path / "set.jsonl"
    write_package_set([zero_cost, generate_package("base", seed=2)], path)
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budget_fracs=(0.1, 0.2, 0.1))
    run_batch([path], out, options, workers=1, backend="serial")
    run_batch([path], out, options, workers=1, backend="serial", resume=True)
    records = read(out)
    assert [r["budget_frac"] for r in records] == [0.1, 0.2, 0.1, 0.2]
    assert set(keys(records, by="budget_frac").values()) == {1}


def test_a_second_writer_is_refused_while_the_first_holds_the_file(tmp_path, small_set, capsys):
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"")
    with out.open("rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        for extra in ([], ["--resume"], ["--force"]):
            assert batch(small_set, "--out", out, "--budgets", "2", *extra) == 2
            assert "another batch run" in capsys.readouterr().err
        assert out.read_bytes() == b""
    assert batch(small_set, "--out", out, "--budgets", "2", "--workers", "1") == 0


def test_the_lock_is_held_for_the_whole_run(tmp_path, small_set):
    out = tmp_path / "out.jsonl"
    seen: list[bool] = []

    class Probe:
        """A progress display that tries to lock the output while the batch runs."""

        total = None

        def set_total(self, total: int | None) -> None:
            self.total = total

        def update(self, n: int = 1, *, failed: int = 0) -> None:
            seen.append(locked(out))

    run_batch([small_set], out, BatchOptions(budgets=(2,)), workers=1, backend="serial", progress=Probe())  # type: ignore[arg-type]
    assert seen and all(seen)


@pytest.mark.parametrize("content", [
    b"precious notes\nno line end at the end",
    b'{"format": "memaudit.result/1", "package_id": "p", "budget": 2, "status": "optimal"}\n',
    b'{"format": "other/1"}\n{"format": "memaudit.result/1", "pa',
    b"not json at all\n",
    b"\xff\xfe binary",
])
def test_resume_on_a_file_that_is_not_batch_results_is_refused_untouched(tmp_path, small_set, capsys, content):
    out = tmp_path / "notes.jsonl"
    out.write_bytes(content)
    assert batch(small_set, "--out", out, "--budgets", "2", "--resume") == 2
    assert out.read_bytes() == content
    assert "notes.jsonl" in capsys.readouterr().err


def test_resume_drops_only_an_incomplete_record_at_the_end(tmp_path, small_set):
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budgets=(2, 4))
    run_batch([small_set], out, options, workers=1, backend="serial")
    full = out.read_bytes()
    lines = full.split(b"\n")
    out.write_bytes(b"\n".join(lines[:5]) + b"\n" + lines[5][:40])
    summary = run_batch([small_set], out, options, workers=1, backend="serial", resume=True)
    assert summary.truncated_tail
    done, errored, torn = read_done(out, options)
    assert not torn and not errored and sum(len(v) for v in done.values()) == 12
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in read(out)]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in json_lines(full)]


def json_lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def test_failed_members_are_retried_on_resume_without_a_second_error_record(tmp_path):
    path = tmp_path / "set.jsonl"
    good = json.dumps(generate_package("base", seed=1))
    path.write_text(good + "\n{broken\n")
    out = tmp_path / "out.jsonl"
    assert batch(path, "--out", out, "--budgets", "2", "--workers", "1") == 3
    before = out.read_bytes()
    # An error record is no budget key: the member is scored again, fails again (exit 3) and
    # its error record is not repeated.
    assert batch(path, "--out", out, "--budgets", "2", "--workers", "1", "--resume") == 3
    assert out.read_bytes() == before


def test_a_link_or_a_directory_at_out_is_refused(tmp_path, small_set, capsys):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    for extra in ([], ["--force"], ["--resume"]):
        assert batch(small_set, "--out", link, "--budgets", "2", *extra) == 2
        assert "symbolic link" in capsys.readouterr().err
    assert target.read_text() == "keep\n"
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "missing.jsonl")
    assert batch(small_set, "--out", dangling, "--budgets", "2") == 2
    assert not (tmp_path / "missing.jsonl").exists()
    assert batch(small_set, "--out", tmp_path, "--budgets", "2", "--force") == 2


def test_an_input_under_another_name_is_refused_as_out(tmp_path, small_set, capsys):
    # A hard link is the input itself: --force would have emptied it, --resume appended to it.
    before = small_set.read_bytes()
    other = tmp_path / "same.jsonl"
    os.link(small_set, other)
    for extra in ([], ["--force"], ["--resume"]):
        assert batch(small_set, "--out", other, "--budgets", "2", *extra) == 2
        assert "same file" in capsys.readouterr().err
        assert small_set.read_bytes() == before
    for extra in (["--force"], ["--resume"]):
        assert batch(small_set, "--out", small_set, "--budgets", "2", *extra) == 2
        assert "over an input" in capsys.readouterr().err
    assert small_set.read_bytes() == before


def test_results_inside_the_set_directory_are_not_read_as_members(tmp_path):
    # `batch runs/ --out runs/results.jsonl`: the results file is in the directory the batch
    # reads; it is not a member (resumed, it would be read as three malformed packages).
    directory = tmp_path / "runs"
    directory.mkdir()
    write_package_set(packages(3), directory / "a.jsonl")
    out = directory / "results.jsonl"
    assert batch(directory, "--out", out, "--budgets", "2") == 0
    assert batch(directory, "--out", out, "--budgets", "2", "--resume") == 0
    assert batch(directory, "--out", out, "--budgets", "2,4", "--force") == 0
    records = read(out)
    assert len(records) == 6 and all(r["status"] == "optimal" for r in records)
    assert max(keys(records).values()) == 1


def test_run_batch_takes_one_path_as_one_set(tmp_path, small_set):
    # A str is one set, not an iterable of one-character paths ('.' would be the directory).
    for path in (str(small_set), small_set):
        out = tmp_path / f"one-{type(path).__name__}.jsonl"
        summary = run_batch(path, out, BatchOptions(budgets=(2.0,)), workers=1)
        assert (summary.packages, summary.failed) == (6, 0)
        assert len(read(out)) == 6


def test_a_set_on_stdin_is_scored_and_resumed_by_content(tmp_path, small_set, monkeypatch, capsys):
    import io
    import types

    def pipe(data: bytes) -> None:
        monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BufferedReader(io.BytesIO(data))))

    out = tmp_path / "out.jsonl"
    lines = small_set.read_bytes().splitlines(keepends=True)
    pipe(b"".join(lines[:4]))
    assert batch("-", "--out", out, "--budgets", "2", "--workers", "1") == 0
    assert len(read(out)) == 4
    # The whole set on stdin, resumed: the four done are known by their content.
    pipe(small_set.read_bytes())
    assert batch("-", "--out", out, "--budgets", "2", "--resume", "--workers", "1") == 0
    records = read(out)
    assert len(records) == 6 and max(keys(records).values()) == 1
    # The same keys and values as the set read from its file.
    expected = tmp_path / "from-file.jsonl"
    assert batch(small_set, "--out", expected, "--budgets", "2", "--workers", "1") == 0
    assert keys(read(expected)) == keys(records)
    assert sorted(r["opt"] for r in read(expected)) == sorted(r["opt"] for r in records)
    # A gzip set piped in is read as a .jsonl.gz file is.
    import gzip

    pipe(gzip.compress(small_set.read_bytes()))
    assert batch("-", "--out", tmp_path / "gz.jsonl", "--budgets", "2", "--workers", "1") == 0
    assert keys(read(tmp_path / "gz.jsonl")) == keys(records)
    assert batch(small_set, "--out", "-", "--budgets", "2") == 2
    assert "not standard output" in capsys.readouterr().err

    class Terminal(io.BytesIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=terminal, isatty=terminal.isatty))
    assert batch("-", "--out", tmp_path / "tty.jsonl", "--budgets", "2") == 2
    assert "standard input is a terminal" in capsys.readouterr().err
    assert not (tmp_path / "tty.jsonl").exists()
    assert not (Path.cwd() / "-").exists()


def test_a_full_disk_stops_with_what_was_written_kept_and_resume_finishes(tmp_path, small_set, monkeypatch, capsys):
    import errno

    import memaudit_fast.experiments.batch as batch_module

    real = batch_module.write_all
    calls = []

    def fills_up(fd: int, data: bytes) -> None:
        calls.append(len(data))
        if len(calls) == 4:  # the fourth package: half of its bytes fit, then the disk is full
            real(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(batch_module, "write_all", fills_up)
    out = tmp_path / "out.jsonl"
    assert batch(small_set, "--out", out, "--budgets", "2,4", "--workers", "1") == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "3 packages written before are kept" in err and "--resume" in err
    monkeypatch.setattr(batch_module, "write_all", real)
    assert batch(small_set, "--out", out, "--budgets", "2,4", "--workers", "1", "--resume") == 0
    records = read(out)
    assert len(records) == 12 and max(keys(records).values()) == 1
    expected = tmp_path / "expected.jsonl"
    assert batch(small_set, "--out", expected, "--budgets", "2,4", "--workers", "1") == 0
    assert keys(read(expected)) == keys(records)


def test_an_out_below_a_file_is_a_clear_usage_error(tmp_path, small_set, capsys):
    assert batch(small_set, "--out", small_set / "results.jsonl", "--budgets", "2") == 2
    err = capsys.readouterr().err
    assert "cannot create its directory" in err and "--out" in err
    assert small_set.is_file()


def test_a_gzip_name_at_out_is_refused_before_any_work(tmp_path, small_set, capsys):
    out = tmp_path / "results.jsonl.gz"
    assert batch(small_set, "--out", out, "--budgets", "2") == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "not gzip" in err and "results.jsonl" in err


def test_an_existing_parquet_file_is_refused_before_any_work(tmp_path, small_set, capsys):
    pytest.importorskip("pyarrow")
    parquet = tmp_path / "r.parquet"
    parquet.write_bytes(b"old export")
    out = tmp_path / "out.jsonl"
    assert batch(small_set, "--out", out, "--budgets", "2", "--parquet", parquet) == 2
    assert not out.exists() and parquet.read_bytes() == b"old export"
    assert "--parquet" in capsys.readouterr().err
    assert batch(small_set, "--out", out, "--budgets", "2", "--parquet", out) == 2
    assert not out.exists()
    assert batch(small_set, "--out", out, "--budgets", "2", "--parquet", parquet, "--force", "--workers", "1") == 0
    import pyarrow.parquet as pq

    assert pq.read_table(parquet).num_rows == 6


@pytest.mark.parametrize("name", ["r.csv", "r.TSV", "r.feather", "r.jsonl"])
def test_a_parquet_name_of_another_format_is_refused_before_any_work(tmp_path, small_set, capsys, name):
    out = tmp_path / "out.jsonl"
    assert batch(small_set, "--out", out, "--budgets", "2", "--parquet", tmp_path / name) == 2
    assert not out.exists() and not (tmp_path / name).exists()
    err = capsys.readouterr().err
    assert "writes Parquet" in err and ".parquet" in err and "memaudit export" in err


def test_resume_and_force_together_are_a_usage_error(tmp_path, small_set):
    assert batch(small_set, "--out", tmp_path / "o.jsonl", "--resume", "--force") == 2
    assert not (tmp_path / "o.jsonl").exists()


def test_bad_options_are_refused_before_the_output_is_created(tmp_path, small_set):
    out = tmp_path / "o.jsonl"
    for bad in (["--writers", "nosuchwriter"], ["--workers", "0"], ["--chunk-size", "0"],
                ["--time-limit", "-1"], ["--ray-address", "auto"]):
        assert batch(small_set, "--out", out, "--budgets", "2", *bad) == 2, bad
        assert not out.exists()


def test_bad_options_name_what_to_give(tmp_path, small_set, capsys):
    out = tmp_path / "o.jsonl"
    cores = os.cpu_count() or 1
    assert batch(small_set, "--out", out, "--budgets", "2", "--workers", str(8 * cores + 1)) == 2
    assert f"give at most {8 * cores}" in capsys.readouterr().err
    assert batch(small_set, "--out", out, "--budgets", "9007199254740993") == 2  # 2^53 + 1 is no float
    assert "2^53" in capsys.readouterr().err
    assert batch(small_set, "--out", f"{tmp_path}/newdir/", "--budgets", "2") == 2
    assert "names a directory" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "newdir").exists()
    # A number left out between commas, or Python's 1_000, is not guessed at.
    assert batch(small_set, "--out", out, "--budgets", "4,,8") == 2
    assert "empty entry" in capsys.readouterr().err
    assert batch(small_set, "--out", out, "--budgets", "2,4,") == 2
    assert batch(small_set, "--out", out, "--budgets", "1_000") == 2
    assert "not 1_000" in capsys.readouterr().err
    assert not out.exists()


def test_minus_zero_is_zero_and_its_resume_command_resumes(tmp_path, small_set):
    out = tmp_path / "o.jsonl"
    assert batch(small_set, "--out", out, "--budgets=-0,2", "--workers", "1") == 0
    assert batch(small_set, "--out", out, "--budgets", "0,2", "--workers", "1", "--resume") == 0
    assert all(r["budget"] in (0, 2) and str(r["budget"]) != "-0.0" for r in read(out))
    assert len(read(out)) == 12  # nothing twice


def test_force_does_not_replace_a_package_of_a_set_directory(tmp_path):
    folder = tmp_path / "sd"
    folder.mkdir()
    write_package_set(packages(2), folder / "part.jsonl")
    before = (folder / "part.jsonl").read_bytes()
    assert batch(folder, "--out", folder / "part.jsonl", "--budgets", "2", "--force") == 2
    assert (folder / "part.jsonl").read_bytes() == before
    # A results file there is the run's own: written, skipped as a member, and replaced by --force.
    assert batch(folder, "--out", folder / "res.jsonl", "--budgets", "2", "--workers", "1") == 0
    assert batch(folder, "--out", folder / "res.jsonl", "--budgets", "2", "--workers", "1", "--force") == 0
    assert len(read(folder / "res.jsonl")) == 2


def test_a_resume_with_own_budgets_keeps_members_a_lower_limit_refuses_now(tmp_path, small_set, monkeypatch):
    # It appended an error record beside each member's records and ended with exit 3.
    out = tmp_path / "o.jsonl"
    assert batch(small_set, "--out", out, "--workers", "1") == 0
    before = out.read_bytes()
    monkeypatch.setenv("MEMAUDIT_MAX_CANDIDATES", "5")
    assert batch(small_set, "--out", out, "--workers", "1", "--resume") == 0
    assert out.read_bytes() == before
    assert batch(small_set, "--out", tmp_path / "new.jsonl", "--workers", "1") == 3  # a new file says why


def test_a_run_that_fails_before_writing_leaves_no_file(tmp_path, small_set, monkeypatch):
    # An unreadable set directory (exit 2) left an empty --out behind.
    from memaudit_fast.errors import PackageError
    from memaudit_fast.experiments import readahead

    def unreadable(*args, **kwargs):
        raise PackageError("cannot read the set", source=str(small_set))
        yield  # a generator, as the reader is

    monkeypatch.setattr(readahead, "iter_raw_members", unreadable)
    out = tmp_path / "new" / "deeper" / "o.jsonl"
    with pytest.raises(PackageError):
        run_batch([small_set], out, BatchOptions(budgets=(2.0,)), workers=1)
    assert not out.exists() and not (tmp_path / "new").exists()  # nor the directories made for it


def test_progress_streams_plain_lines_when_stderr_is_not_a_terminal(tmp_path, small_set, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(small_set), str(small_set), "--out", str(out), "--budgets", "2", "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert "batch: 12" in err and "packages" in err and "done" in err


@pytest.mark.parametrize("budgets", [(2.0, 4.0, 8.0), None], ids=["given-budgets", "own-budgets"])
def test_a_member_cut_short_anywhere_in_the_file_is_completed(tmp_path, small_set, budgets):
    # A kill can cut a package's write at a line end; later runs may have appended after it
    # (an interrupted run writes the chunks that finished, not only the first ones).
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budgets=budgets)
    run_batch([small_set], out, options, workers=1, backend="serial")
    full = read(out)
    lines = out.read_bytes().split(b"\n")[:-1]
    cut = [k for k, r in enumerate(full) if r["package_id"] == full[len(full) // 2]["package_id"]][-1]
    out.write_bytes(b"".join(line + b"\n" for k, line in enumerate(lines) if k != cut))
    summary = run_batch([small_set], out, options, workers=1, backend="serial", resume=True)
    assert summary.packages == 1 and summary.records == 1 and summary.skipped == 5
    records = read(out)
    assert set(keys(records).values()) == {1} and len(records) == len(full)
    assert sorted(json.dumps({k: v for k, v in r.items() if k != "seconds"}, sort_keys=True) for r in records) == \
        sorted(json.dumps({k: v for k, v in r.items() if k != "seconds"}, sort_keys=True) for r in full)


def test_workers_that_cannot_start_leave_the_output_as_it_was(tmp_path, small_set, monkeypatch):
    from memaudit_fast.errors import UsageError
    from memaudit_fast.experiments import batch as batch_module

    def unreachable(*args: object, **kwargs: object) -> None:
        raise UsageError("cannot start or reach Ray (head:6379): connection refused")

    monkeypatch.setattr(batch_module, "make_runner", unreachable)
    existing = tmp_path / "old.jsonl"
    existing.write_bytes(b"old results\n")
    with pytest.raises(UsageError, match="reach Ray"):
        run_batch([small_set], existing, backend="ray", overwrite=True)
    assert existing.read_bytes() == b"old results\n"
    with pytest.raises(UsageError, match="reach Ray"):
        run_batch([small_set], tmp_path / "new.jsonl", backend="ray")
    assert not (tmp_path / "new.jsonl").exists()


def test_the_printed_resume_command_and_the_refusal_keep_every_digit(tmp_path, small_set, capsys):
    # Budgets in bytes run to seven digits and fractions to more than six: the resume command
    # printed on an interruption must give back the run's options (with %g it said 1.23457e+06
    # and was refused), and a refusal must not show two different values as the same.
    from memaudit_fast.cli.batch import resume_command
    from memaudit_fast.cli.main import build_parser

    for flags in (["--budgets", "1234567,2.5"], ["--budget-fracs", "0.1234567"]):
        args = build_parser().parse_args(["batch", str(small_set), "--out", str(tmp_path / "o.jsonl"), *flags])
        again = build_parser().parse_args(shlex.split(resume_command(args))[1:])
        assert again.budgets == args.budgets and again.budget_fracs == args.budget_fracs
    out = tmp_path / "out.jsonl"
    assert batch(small_set, "--out", out, "--workers", "1", "--budgets", "1234567") == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert batch(small_set, "--out", out, "--workers", "1", "--budgets", "1234568", "--resume") == 2
    assert out.read_bytes() == before
    assert "budgets 1234567 in the file, 1234568 now" in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"not json at all\n", b"\xff\xfe binary", b'[1, 2]\n'])
def test_a_refused_resume_says_what_to_do(tmp_path, small_set, capsys, content):
    out = tmp_path / "notes.jsonl"
    out.write_bytes(content)
    assert batch(small_set, "--out", out, "--budgets", "2", "--resume") == 2
    assert out.read_bytes() == content
    err = capsys.readouterr().err
    assert "choose another --out" in err and "not modified" in err


def test_a_set_that_does_not_exist_is_a_usage_error_before_any_work(tmp_path, small_set, capsys):
    # A mistyped SET is a bad argument (exit 2, nothing written), as in every other command;
    # it used to be scored as a failed member: exit 3, an error record, and on a resume every
    # member of the file counted as no longer in the set.
    out = tmp_path / "out.jsonl"
    assert batch(small_set, tmp_path / "typo.jsonl", "--out", out, "--budgets", "2") == 2
    assert not out.exists()
    assert "typo.jsonl" in capsys.readouterr().err
    assert batch(small_set, "--out", out, "--budgets", "2") == 0
    before = out.read_bytes()
    assert batch(tmp_path / "typo.jsonl", "--out", out, "--budgets", "2", "--resume") == 2
    assert out.read_bytes() == before


@pytest.mark.parametrize("content", [b"\n", b"\n\n\n", b"  \n\t\n", b"   "])
def test_resume_refuses_a_file_of_blank_lines_and_leaves_it(tmp_path, capsys, content):
    path = tmp_path / "set.jsonl"
    write_package_set([generate_package("base", seed=0)], path)
    out = tmp_path / "out.jsonl"
    out.write_bytes(content)
    capsys.readouterr()
    assert main(["batch", str(path), "--out", str(out), "--budgets", "2", "--resume", "--quiet"]) == 2
    assert "holds only blank lines" in capsys.readouterr().err
    assert out.read_bytes() == content


@pytest.mark.parametrize("kind", ["empty file", "blank lines", "empty folder", "stdin"])
def test_a_set_without_packages_is_refused_and_leaves_no_results_file(tmp_path, capsys, monkeypatch, kind):
    import io

    if kind == "empty folder":
        source = tmp_path / "folder"
        source.mkdir()
    elif kind == "stdin":
        source = Path("-")
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    else:
        source = tmp_path / "set.jsonl"
        source.write_bytes(b"" if kind == "empty file" else b"\n\n")
    out = tmp_path / "new" / "out.jsonl"
    capsys.readouterr()
    assert main(["batch", str(source), "--out", str(out), "--budgets", "2", "--quiet"]) == 2
    assert f"no packages in SET {source}" in capsys.readouterr().err
    assert not out.exists() and not out.parent.exists()
