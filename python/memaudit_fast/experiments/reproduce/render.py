"""The ``reproduce.md`` report: tables and findings in prose, from a finished run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .config import (
    PAPER_DENSITY_ONLY,
    PAPER_INVALIDATION,
    PAPER_LABEL_MAD,
    PAPER_NO_TOMBSTONE,
    PAPER_STRESS_NO_TOMBSTONE_B6,
    PARTIAL_LEVEL,
    RANKED_WRITERS,
    TABLE_WRITERS,
    WEIGHT_SIGMA_PER_P,
    Reproduction,
    _level_key,
)
from .summary import _mean, comparison_rows


def _f(x: float | None, digits: int = 4) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _label(b: float, fraction: bool) -> str:
    return f"{b:g} of raw" if fraction else f"B={b:g}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _suite_sections(s: dict[str, Any], title: str, fraction: bool, paper: bool) -> list[str]:
    labels = s["labels"]
    heads = [_label(b, fraction) for b in labels]
    lines: list[str] = []
    groups = list(s["writers"])
    headline = "base" if "base" in groups else groups[0]
    un = s["unproven"]
    unproven = sum(v for k, v in un.items() if k != "solves")
    counts = ", ".join(f"{g}: {n}" for g, n in s["groups"].items() if g != "overall")
    plural = "s" if s["packages"] != 1 else ""
    lines += [f"## {title}", "",
              (f"{s['packages']} package{plural} ({counts}); {un['solves']} exact solves, "
               f"{unproven} of them stopped by the time limit before proving optimality."), ""]

    lines += [f"### Writers as a fraction of OPT ({headline}, words)", ""]
    rows = [[w] + [_f(x) for x in s["writers"][headline][w]] for w in TABLE_WRITERS]
    if paper and headline == "base":
        rows.append(["density_only (paper)"] + [_f(PAPER_DENSITY_ONLY.get(b)) for b in labels])
        rows.append(["gvt (paper)"] + ["near OPT" for _ in labels])
    lines += _table(["writer"] + heads, rows) + [""]

    if s["invalidation"] and s["invalidation_units"][headline]:
        inv = s["invalidation"][headline]
        held = _f(s["invalidation_units"][headline], 2)
        lines += [f"Invalidation units covered (mean; {headline} packages hold {held} on average):",
                  ""]
        rows = [[w] + [_f(x, 2) for x in inv[w]] for w in ("density_only", "greedy", "gvt")]
        if paper and headline == "base":
            rows += [[f"{w} (paper)"] + [_f(v.get(b), 2) for b in labels]
                     for w, v in PAPER_INVALIDATION.items()]
        lines += _table(["writer"] + heads, rows) + [""]

    if len(groups) > 1:
        lines += ["### Per distribution (words): density_only / greedy / gvt", ""]
        rows = [[g] + [" / ".join(_f(s["writers"][g][w][k], 3) for w in ("density_only", "greedy", "gvt"))
                       for k in range(len(labels))] for g in groups]
        lines += _table(["distribution"] + heads, rows) + [""]

    lines += ["### No-tombstone OPT as a fraction of full OPT", ""]
    rows = [[g] + [_f(x) for x in s["ablation"][g]] for g in groups]
    if paper:
        rows.append(["paper (base)"] + [_f(PAPER_NO_TOMBSTONE.get(b)) for b in labels])
    lines += _table(["distribution"] + heads, rows) + [""]
    if paper and 6.0 in labels:
        lines += ["Paper at B=6: " + ", ".join(f"{d} {v}" for d, v in PAPER_STRESS_NO_TOMBSTONE_B6.items()), ""]

    lines += [f"### Rank stability: words vs bytes cost model (Kendall tau-b over {len(RANKED_WRITERS)} writers)", ""]
    rows = [[g] + [_f(x, 3) for x in s["cost_tau"][g]] + [_f(_mean(s["cost_tau"][g]), 3)] for g in groups]
    lines += _table(["distribution"] + heads + ["mean"], rows) + [""]
    lines += _cost_table(s, fraction)

    for key, block in s["noise"].items():
        lines += [(f"### Annotation noise p = {float(key):g}: Kendall tau-b (clean vs noisy "
                   "ranking) and mean |ratio change|"), ""]
        rows = [[g] + [f"{_f(t, 3)} / {_f(m, 3)}" for t, m in zip(block["tau"][g], block["mad"][g])]
                for g in groups]
        lines += _table(["distribution"] + heads, rows) + [""]
    lines += _findings(s, [float(k) for k in s["noise"]], fraction)
    return lines


def _stability_word(tau: float | None) -> str:
    if tau is None:
        return "undefined"
    if tau >= 0.8:
        return "largely preserved"
    if tau >= 0.5:
        return "partly preserved"
    return "not preserved"


def _span(values: dict[str, float | None]) -> str:
    """'lo (where) to hi (where)' over the defined values."""
    kept = {k: v for k, v in values.items() if v is not None}
    if not kept:
        return "n/a"
    lo = min(kept, key=kept.__getitem__)
    hi = max(kept, key=kept.__getitem__)
    return f"{_f(kept[lo], 3)} ({lo}) to {_f(kept[hi], 3)} ({hi})"


def _ranks(means: dict[str, list[float | None]], k: int) -> dict[str, int]:
    """Rank of each writer at budget k (1 = best; ties share the better rank)."""
    vals = {w: x for w, v in means.items() if (x := v[k]) is not None}
    return {w: 1 + sum(o > x + 1e-12 for o in vals.values()) for w, x in vals.items()}


def _rank_moves(a: dict[str, list[float | None]], b: dict[str, list[float | None]],
                labels: Sequence[float], fraction: bool) -> str:
    parts = []
    for k, label in enumerate(labels):
        ra, rb = _ranks(a, k), _ranks(b, k)
        moved = [f"{w} {ra[w]}->{rb[w]}" for w in ra if w in rb and abs(ra[w] - rb[w]) >= 2]
        if moved:
            parts.append(f"{_label(label, fraction)}: {', '.join(moved)}")
    return "; ".join(parts)


def _best(means: dict[str, list[float | None]]) -> str:
    """Writers ranked first at every budget (or 'varies')."""
    n = len(next(iter(means.values())))
    firsts = [{w for w, r in _ranks(means, k).items() if r == 1} for k in range(n)]
    common = set.intersection(*firsts) if firsts else set()
    return ", ".join(sorted(common)) if common else "varies"


def _findings(s: dict[str, Any], noise_levels: Sequence[float], fraction: bool) -> list[str]:
    """The paper's claims, each restated with the figures this run measured."""
    labels = s["labels"]
    dists = [g for g in s["writers"] if g != "overall"]
    pooled = "overall" if "overall" in s["writers"] else dists[0]
    # The paper's tight budgets are B = 2, 4, 8 words; budget fractions have no such cut.
    tight = list(range(len(labels))) if fraction else [k for k, b in enumerate(labels) if b <= 8]
    every = list(range(len(labels)))

    def cells(table: Callable[[str], list[float | None]], ks: list[int]) -> dict[str, float | None]:
        return {f"{g}, {_label(labels[k], fraction)}": table(g)[k] for g in dists for k in ks}

    lines = ["### Findings, as measured", ""]
    dens = cells(lambda g: s["writers"][g]["density_only"], tight or every)
    gvt = cells(lambda g: s["writers"][g]["gvt"], every)
    where = "at B <= 8" if tight and not fraction else "at every budget"
    lines.append(f"- density-only {where}: mean ratio from {_span(dens)}; GVT at every budget: "
                 f"from {_span(gvt)}.")
    if s["ablation_removed"]:
        abl = cells(lambda g: s["ablation"][g], every)
        lines.append(f"- no-tombstone OPT / full OPT: from {_span(abl)}.")
    tau = _mean(s["cost_tau"][pooled])
    moves = _rank_moves(s["writers"][pooled], s["bytes_writers"][pooled], labels, fraction)
    lines.append(f"- words vs bytes: Kendall tau of the pooled rankings "
                 f"{', '.join(_f(t, 3) for t in s['cost_tau'][pooled])} per budget (mean "
                 f"{_f(tau, 3)}): rankings {_stability_word(tau)}. Best writer(s) under words / "
                 f"bytes: {_best(s['writers'][pooled])} / {_best(s['bytes_writers'][pooled])}. "
                 f"Moves of two places or more (rank under words -> bytes): {moves or 'none'}.")
    for p in noise_levels:
        block = s["noise"][_level_key(p)]
        tau = _mean(block["tau"][pooled])
        lines.append(f"- annotation noise p = {p:g}: Kendall tau {_f(tau, 3)} (mean over budgets), "
                     f"mean |ratio change| {_f(_mean(block['mad'][pooled]), 3)}: rankings "
                     f"{_stability_word(tau)}.")
    return lines + [""]


def _differences(run: Reproduction) -> list[str]:
    rows = comparison_rows(run)
    if not rows:
        return []
    s = run.summary["small"]
    labels = s["labels"]
    lines = ["## Where the figures differ from the paper", ""]
    lines += _table(["finding", "distribution", "budget", "paper", "ours", "ours - paper"],
                    [[r["finding"], r["distribution"], f"{r['budget']:g}", _f(r["paper"]),
                      _f(r["ours"]), f"{r['difference']:+.4f}"] for r in rows]) + [""]
    far = [r for r in rows if abs(r["difference"]) > 0.05]
    inv = s["invalidation_units"].get("base")
    dens_inv = " / ".join(_f(x, 2) for x in s["invalidation"]["base"]["density_only"])
    total = s["total_cost"].get("base")
    share = 100.0 * max(labels) / total if total else None
    abl = s["ablation"]["base"]
    trend = (f" The no-tombstone fraction goes from {_f(abl[0], 3)} to {_f(abl[-1], 3)} across "
             "the budgets here, from 0.523 to 0.815 in the paper." if len(abl) > 1 else "")
    lines += [
        (f"{len(far)} of {len(rows)} figures differ from the paper's by more than 0.05. The "
         "packages come from this project's own MEMAUDIT-Small generator, written from the "
         "paper's description, not from the artifact's generator, so the findings are measured "
         "again rather than the artifact's numbers copied; the generator was not tuned to match "
         "them. What differs:"),
        "",
        ("- **Package shape.** The artifact's base package has a fixed shape (three ordinary "
         "facts and two updates), so every package holds exactly two invalidation units (GVT's "
         "2.00 above). Here attributes change at random: base packages hold "
         f"{_f(inv, 2)} invalidation units on average; a package without updates gives "
         "tombstones nothing to add (its no-tombstone fraction is 1), one with several updates "
         "loses more."),
        ("- **Costs and arrival order.** Costs are word counts of this generator's compact texts "
         "(tombstone 1 word, fact 2, update 3, summary 2-4, raw span 4-8). Density-only commits "
         "to each experience as it arrives, so a small budget goes to the first experiences "
         "(first values, context) before updates arrive; it covers "
         f"{dens_inv} invalidation units on average at "
         f"{', '.join(f'B={b:g}' for b in labels)} (the paper's: none at B = 2, 4, 8)."),
        ("- **Weights.** Units carry explicit kind weights (invalidation and changed current "
         "values 2-2.5, other current values 1-1.4, context 0.3-0.4, stale values 0.1-0.2) "
         "instead of the artifact's, which sets how much a lost invalidation unit costs."),
        ("- **Budget scale.** Both use absolute word budgets, but the paper's B = 16 is 20% of "
         f"its average package cost; here base packages cost {_f(total, 1)} words on average "
         f"(B = {max(labels):g} is {_f(share, 1)}% of it).{trend}"),
        ("- **Cost-model check.** The paper checks cost-model stability on its natural packages "
         f"and exported systems (a few systems, qualitative order); here all {len(RANKED_WRITERS)} "
         "baseline writers are ranked on synthetic packages, where the bytes model's 8-unit record "
         "overhead makes compact candidates (tombstones, facts) almost as expensive as raw "
         "spans, which changes what a budget can hold."),
    ]
    if any(r["distribution"] != "base" for r in rows):
        lines.append(
            "- **Stress distributions.** These are this generator's own (`KNOBS` in "
            "`suites/small.py`). The artifact's update_chain is one value corrected three times; "
            "here two values change 3-5 times each, so more invalidation units depend on "
            "tombstones and updates and the no-tombstone fraction is lower.")
    return lines + [""]


def _cost_table(s: dict[str, Any], fraction: bool) -> list[str]:
    """Pooled mean ratio of every writer under both cost models."""
    pooled = "overall" if "overall" in s["writers"] else next(iter(s["writers"]))
    heads = [f"{_label(b, fraction)} words / bytes" for b in s["labels"]]
    rows = [[w] + [f"{_f(a, 3)} / {_f(b, 3)}" for a, b in
                   zip(s["writers"][pooled][w], s["bytes_writers"][pooled][w])]
            for w in RANKED_WRITERS]
    return [f"Mean ratio per writer under each cost model ({pooled}):", ""] + \
        _table(["writer"] + heads, rows) + [""]


def render_markdown(run: Reproduction) -> str:
    """The ``reproduce.md`` report."""
    cfg = run.config
    s = run.summary.get("small")
    split = (f" ({run.small_seconds:.1f} s synthetic, {run.seconds - run.small_seconds:.1f} s "
             "LoCoMo)" if cfg.locomo else "")
    lines = [
        "# MEMAUDIT: reproducing the paper's findings",
        "",
        (f"Command: `{run.command or 'memaudit reproduce'}`; {run.seconds:.1f} s{split} "
         f"with {cfg.workers} process{'es' if cfg.workers > 1 else ''}. "
         f"MEMAUDIT-Small: {cfg.seeds} seeds x {len(cfg.distributions)} distributions, budgets "
         f"{', '.join(f'{b:g}' for b in cfg.budgets)} words; every package solved exactly "
         "(branch-and-bound), once per cost model, once without tombstone/update candidates and "
         f"once per noise level ({', '.join(f'{p:g}' for p in cfg.noise_levels) or 'none'})."),
        "",
        ("Aggregation: the **mean of per-package ratios** F(X)/OPT (OPT = 0 scores 1, the "
         "artifact's convention); 'overall' pools all packages (equal seeds per distribution). "
         "The paper's headline figures are over its 500 base packages; compare them with the "
         "'base' rows. Rankings are compared with Kendall's tau-b over the mean ratios of "
         f"{len(RANKED_WRITERS)} writers ({', '.join(RANKED_WRITERS)}). Noise: each non-zero "
         f"coverage label flips full <-> partial ({PARTIAL_LEVEL}) with probability p, weights are "
         f"multiplied by exp({WEIGHT_SIGMA_PER_P} p z); the writers' clean stores are re-scored "
         "against the noisy labels and their own exact OPT (the paper reports a mean ratio "
         f"change of {PAPER_LABEL_MAD} between human and model labels, rankings preserved). "
         "Cells of noise tables read 'tau / mean |ratio change|'; tau is n/a when every writer "
         "ties."),
        "",
    ]
    if s:
        lines += _suite_sections(s, "MEMAUDIT-Small", fraction=False, paper=True)
        lines += _differences(run)
    loc = run.summary.get("locomo")
    if loc:
        lines += _suite_sections(loc, "LoCoMo natural packages", fraction=True, paper=False)
        lines += [
            ("LoCoMo packages hold raw turns, observations (facts) and session summaries only, "
             "so the no-tombstone ablation removes nothing there (fraction 1 by construction). "
             "Budgets are fractions of each conversation's total raw-turn cost, under each cost "
             f"model; unproven solves (time limit {cfg.locomo_time_limit} s per budget) are scored "
             "against the best store found."),
            "",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"
