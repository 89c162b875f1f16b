"""memaudit write: store directories made from data stay inside --out, need --force to be
replaced, and are never written through links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("faiss")

from memaudit_fast.cli.main import main
from oracles.cli_runs import locomo as locomo_file


def write(src: Path, out: Path, *extra: str) -> int:
    return main(["write", "flat", "--locomo", str(src), "--out", str(out), "--embedder", "hashing:64", *extra])


def test_sample_ids_never_leave_out(tmp_path, capsys):
    src = locomo_file(tmp_path / "locomo.json", "../../escape", "/abs/path", "a/b", ".hidden")
    out = tmp_path / "deep" / "out"
    assert write(src, out) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep", "locomo.json"]
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 4 and all("/" not in n and not n.startswith(".") for n in names)
    for name in names:
        assert (out / name / "memories.jsonl").is_file()
    capsys.readouterr()


def test_existing_store_needs_force_and_links_inside_are_not_followed(tmp_path, capsys):
    src = locomo_file(tmp_path / "locomo.json", "conv")
    out = tmp_path / "out"
    assert write(src, out) == 0
    assert write(src, out) == 2
    assert "--force" in capsys.readouterr().err
    victim = tmp_path / "victim.jsonl"
    victim.write_text("precious")
    (out / "conv" / "memories.jsonl").unlink()
    os.symlink(victim, out / "conv" / "memories.jsonl")
    assert write(src, out, "--force") == 0
    assert victim.read_text() == "precious"
    assert not (out / "conv" / "memories.jsonl").is_symlink()
    capsys.readouterr()


def test_a_directory_that_is_not_a_store_is_never_replaced(tmp_path, capsys):
    src = locomo_file(tmp_path / "locomo.json", "conv")
    (tmp_path / "out" / "conv").mkdir(parents=True)
    (tmp_path / "out" / "conv" / "mine.txt").write_text("keep")
    assert write(src, tmp_path / "out", "--force") == 2
    assert (tmp_path / "out" / "conv" / "mine.txt").read_text() == "keep"
    capsys.readouterr()


def test_force_replaces_a_store_only_while_it_holds_nothing_but_its_own_files(tmp_path, capsys):
    src = locomo_file(tmp_path / "locomo.json", "conv")
    out = tmp_path / "out"
    assert write(src, out) == 0
    (out / "conv" / "notes.txt").write_text("keep")
    assert write(src, out, "--force") == 2
    assert "notes.txt" in capsys.readouterr().err
    assert (out / "conv" / "notes.txt").read_text() == "keep"
    (out / "conv" / "notes.txt").unlink()
    assert write(src, out, "--force") == 0
    capsys.readouterr()
