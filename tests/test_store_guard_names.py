"""memaudit write: a store's directory is named by its own sample id alone, and --force never
replaces the store of another conversation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("faiss")

from memaudit_fast.cli.main import main
from memaudit_fast.writers.store import MANIFEST, store_dir_name
from oracles.cli_runs import locomo


def write(src: Path, out: Path, *extra: str) -> int:
    return main(["write", "flat", "--locomo", str(src), "--out", str(out), "--embedder", "hashing:64", *extra])


def owners(out: Path) -> dict[str, str]:
    return {d.name: json.loads((d / MANIFEST).read_text())["sample_id"] for d in sorted(out.iterdir())}


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("sample_id", ["conv-26", "a_b", "A_B", "x" * 120, "item"])
def test_a_plain_short_id_is_its_own_name(sample_id):
    assert store_dir_name(sample_id) == sample_id


@pytest.mark.parametrize("ids", [("a/b", "a_b"), ("a b", "a_b"), ("", "conversation"), (".", "conversation"),
                                 ("x" * 121, "x" * 100), ("../..", "_..")])
def test_ids_that_sanitise_alike_get_distinct_stable_names(ids):
    names = [store_dir_name(sid) for sid in ids]
    assert len(set(names)) == 2
    assert names == [store_dir_name(sid) for sid in ids]  # a function of the id alone
    for name in names:
        assert "/" not in name and name not in (".", "..") and not name.startswith(".") and len(name) <= 120


def test_names_do_not_depend_on_order_or_subset(tmp_path, capsys):
    forward = locomo(tmp_path / "f.json", "a/b", "a_b")
    backward = locomo(tmp_path / "b.json", "a_b", "a/b")
    assert write(forward, tmp_path / "one") == 0
    assert write(backward, tmp_path / "two") == 0
    assert write(forward, tmp_path / "three", "--sample-id", "a_b") == 0
    assert owners(tmp_path / "one") == owners(tmp_path / "two") == {"a_b": "a_b", store_dir_name("a/b"): "a/b"}
    assert owners(tmp_path / "three") == {"a_b": "a_b"}
    capsys.readouterr()


def test_force_on_one_id_leaves_the_colliding_ids_store_alone(tmp_path, capsys):
    src = locomo(tmp_path / "two.json", "a/b", "a_b")
    out = tmp_path / "st"
    assert write(src, out) == 0
    other = out / store_dir_name("a/b")
    before = snapshot(other)
    assert write(src, out, "--sample-id", "a_b", "--force") == 0
    assert owners(out) == {"a_b": "a_b", other.name: "a/b"}
    assert snapshot(other) == before
    capsys.readouterr()


def test_force_refuses_a_store_whose_manifest_names_another_id(tmp_path, capsys):
    # The layout of earlier versions: 'a/b' written first took OUT/a_b.
    src = locomo(tmp_path / "two.json", "a/b", "a_b")
    built = tmp_path / "built"
    assert write(src, built, "--sample-id", "a/b") == 0
    out = tmp_path / "st"
    out.mkdir()
    shutil.copytree(built / store_dir_name("a/b"), out / "a_b")
    before = snapshot(out)
    capsys.readouterr()
    assert write(src, out, "--sample-id", "a_b", "--force") == 2
    err = capsys.readouterr().err
    assert "'a/b'" in err and "'a_b'" in err and str(out / "a_b") in err
    assert snapshot(out) == before
    # Stores of the old layout are still read by directory.
    assert main(["retrieve", str(out / "a_b"), "support group", "--budget", "50"]) == 0
    assert "a/b" in capsys.readouterr().out


def test_force_refuses_a_store_whose_manifest_cannot_be_read(tmp_path, capsys):
    src = locomo(tmp_path / "one.json", "conv")
    out = tmp_path / "st"
    assert write(src, out) == 0
    (out / "conv" / MANIFEST).write_text("{not json")
    before = snapshot(out)
    capsys.readouterr()
    assert write(src, out, "--force") == 2
    assert "cannot tell which conversation" in capsys.readouterr().err
    assert snapshot(out) == before


def test_force_still_replaces_the_same_conversations_store(tmp_path, capsys):
    src = locomo(tmp_path / "two.json", "a/b", "a_b")
    out = tmp_path / "st"
    assert write(src, out) == 0
    assert write(src, out, "--force") == 0
    assert owners(out) == {"a_b": "a_b", store_dir_name("a/b"): "a/b"}
    capsys.readouterr()
