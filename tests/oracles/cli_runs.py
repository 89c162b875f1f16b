"""Running commands in tests, and what they left: shared by the guard tests of the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit code of ``memaudit ARGV`` and what it said on stderr."""
    code = main(argv)
    return code, capsys.readouterr().err


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a directory): compared before and after."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def locomo(path: Path, *sample_ids: str) -> Path:
    """A LoCoMo file at ``path`` of the small sample conversation, once per sample id."""
    from memaudit_fast.writers.sample import mini_locomo

    convs = []
    for sid in sample_ids:
        conv = mini_locomo()
        conv["sample_id"] = sid
        convs.append(conv)
    path.write_text(json.dumps(convs))
    return path
