"""Reports draw their figures from a small result set; Parquet export keeps every record."""

from __future__ import annotations

import json

import pytest

from memaudit_fast.cli.main import main


def records() -> list[dict]:
    rows = []
    for dist in ("base", "density_trap"):
        for seed in range(2):
            for budget in (2, 4, 8):
                rows.append({
                    "format": "memaudit.result/1", "package_id": f"small/{dist}/s{seed}", "source": f"x line {seed}",
                    "budget": budget, "opt": 3.0, "upper_bound": 3.0, "status": "optimal", "proven_optimal": True,
                    "selected": ["c1"], "cost": budget, "nodes": 3, "seconds": 0.001 * budget,
                    "size": {"candidates": 10 * budget},
                    "writers": {"gvt": {"value": 2.9, "ratio": 0.97}, "density_only": {"value": 1.0, "ratio": 0.3 + 0.05 * budget}},
                    "ablation": {"tombstone+update": {"opt": 2.0, "fraction_of_opt": 0.5 + 0.04 * budget}},
                    "certificate": {"solver": "highs", "value": 3.0, "agrees": True},
                })
    rows.append({"format": "memaudit.result/1", "package_id": None, "source": "x line 9", "budget": None,
                 "status": "error", "error": "bad"})
    return rows


def test_report_writes_figures_and_html(tmp_path):
    pytest.importorskip("matplotlib")
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in records()))
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 0
    names = sorted(p.name for p in (tmp_path / "rep").iterdir())
    assert names == ["ablation.png", "heatmap.png", "index.html", "solver_time.png", "sweep.png"]
    for name in names:
        if name.endswith(".png"):
            data = (tmp_path / "rep" / name).read_bytes()
            assert data.startswith(b"\x89PNG") and len(data) > 5000
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "heatmap.png" in page and "error 1" in page


def test_parquet_export_round_trip(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    results = tmp_path / "r.jsonl"
    rows = records()
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["export", str(results), str(tmp_path / "r.parquet")]) == 0
    table = pq.read_table(tmp_path / "r.parquet").to_pylist()
    assert len(table) == len(rows)
    assert table[0]["writer_gvt_ratio"] == pytest.approx(0.97)
    assert table[0]["selected"] == ["c1"]
    assert table[-1]["status"] == "error" and table[-1]["error"] == "bad"
    assert main(["export", str(results), str(tmp_path / "r.parquet")]) == 2  # never overwrites
    # Every field is kept: the blocks the old export dropped are columns now.
    assert table[0]["ablation_tombstone+update_fraction_of_opt"] == pytest.approx(0.58)
    assert table[0]["size_candidates"] == 20 and table[0]["distribution"] == "base"
    assert table[0]["budget"] == 2.0 and table[0]["certificate_agrees"] is True


def test_long_layout_has_one_row_per_writer(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    results = tmp_path / "r.jsonl"
    rows = records()
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["export", str(results), str(tmp_path / "r.parquet"), "--layout", "long"]) == 0
    table = pq.read_table(tmp_path / "r.parquet").to_pylist()
    # One row per (package, budget, writer); the error record, which has no writer, keeps one row.
    assert len(table) == 2 * (len(rows) - 1) + 1
    gvt = [t for t in table if t["writer"] == "gvt"]
    assert len(gvt) == len(rows) - 1 and gvt[0]["writer_ratio"] == pytest.approx(0.97)
    assert table[-1]["status"] == "error" and table[-1]["writer"] is None


def test_a_pretty_printed_package_is_refused_as_a_package_not_as_bad_json(tmp_path):
    import shutil

    from memaudit_fast.cli.main import main
    from memaudit_fast.model.examples import example_package_path

    pkg = tmp_path / "p.json"
    shutil.copy(example_package_path(), pkg)
    for argv in (["export", str(pkg), str(tmp_path / "x.parquet")], ["report", str(pkg), "--out", str(tmp_path / "r")]):
        assert main(argv) == 2
    assert not (tmp_path / "x.parquet").exists() and not (tmp_path / "r").exists()


def test_a_cut_last_line_says_how_to_complete_the_file(tmp_path, capsys):
    text = "".join(json.dumps(r) + "\n" for r in records())
    path = tmp_path / "r.jsonl"
    path.write_text(text[: len(text) - 40])  # a batch stopped while writing its last record
    assert main(["export", str(path), str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "cut off" in err and "--resume" in err
