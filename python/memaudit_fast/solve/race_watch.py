"""The race's progress callback (:func:`handoff_watch`): it starts a budget's race once the
branch-and-bound has not proven it after ``handoff_after``, moves a race to the candidates
the search's root leaves open when that pays, and tells the search when HiGHS proved first.
The race itself is solve/race.py; :func:`.exact.solve` installs this callback."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .race import _Race

#: Seconds before the first progress line of a budget, at the least, in a solve with ``finish``.
RACE_FIRST = 0.001

#: Seconds between two progress lines of a solve with ``finish`` and no log (the race does
#: not need them).
RACE_QUIET = 3600.0

#: Seconds between two progress lines, at the most, of a solve with ``finish`` and a log.
RACE_LOGGED = 0.1

#: A race on the whole MILP moves to the root's open candidates when they are at most this
#: share of all: MEMAUDIT-like 3,000 @ 2% leaves 13% open, and HiGHS proves the smaller model
#: in 0.23 s against 2.0 s for the whole one; MEMAUDIT-Small x25 @ 20% leaves 57% open, and
#: there a restart (0.50 s) costs more than HiGHS's remaining time on the whole model.
RACE_RESTART_SHARE = 0.25

#: Seconds before ``handoff_after`` at which the race starts building its model (3-10 ms on
#: 1,000-3,000 candidates); solves done sooner never reach Python.
RACE_PREPARE = 0.01

#: A race on the whole MILP whose HiGHS has run at most this long when the root is done moves
#: to the open candidates whatever their share: it loses next to nothing, and HiGHS proves
#: the smaller model several times faster (entity timeline 1,000 @ 15%, root done at 0.04 s
#: with 35% open: 0.21-0.48 s against 0.85 s on the whole MILP).
RACE_SWITCH_GRACE = 0.02

#: A race on the whole MILP whose HiGHS has run longer than this when the root is done stays
#: there, however few candidates are open: by then HiGHS has done its own root (cuts,
#: heuristics), which a restart would throw away. MEMAUDIT-like 3,000 @ 2% moves at 0.23 s and
#: gains (0.56 s against 2.2 s for HiGHS alone); the root of a dialogue of 3,003 candidates at
#: 5% is done at 1.2-1.3 s with 25% open, and there the move took 2.2-2.4 s against 1.6 s.
RACE_MOVE_LATEST = 0.5

#: A race that HiGHS runs on the candidates fixing left open (solve/lp_fixing.py) moves to
#: those the search's root also leaves open when the root ends before HiGHS has run
#: RACE_SWITCH_GRACE and they are at most this share of its own: on an entity timeline of 1,000
#: @ 2% fixing left 240 open (HiGHS 0.29 s on them) and the root, done 6 ms later, 165 (0.08 s).
RACE_NARROW_SHARE = 0.8


def handoff_watch(
    log: Callable[[Any], None] | None, log_interval: float, handoff_after: float, races: dict[float, _Race],
    start_race: Callable[..., _Race], num_candidates: int,
) -> tuple[Callable[[Any], bool], float, float]:
    """The progress callback of a solve with ``finish``; passes lines to the caller's ``log`` at
    its pace. A budget not proven after ``handoff_after`` seconds starts HiGHS beside the search
    (see :func:`_start_race`); when HiGHS proves first, the search of that budget stops. The
    race of a budget the search moved past is stopped: highspy runs one solve per process at a
    time. A race that started on the whole MILP (of ``num_candidates``) moves to the root's
    open candidates when the root leaves few open before HiGHS has run long."""
    logged = [-math.inf]  # seconds of the last line passed on, within the current budget
    current: list[float | None] = [None]

    def watch(line: Any) -> bool:
        budget = float(line.budget)
        if budget != current[0] or line.seconds < logged[0]:  # a new budget started
            logged[0] = -math.inf
            current[0] = budget
            for other, earlier in races.items():
                if other != budget:
                    earlier.stop.set()
        if log is not None and line.seconds - logged[0] >= log_interval * 0.999:
            logged[0] = line.seconds
            log(line)
        if line.seconds < handoff_after - RACE_PREPARE:
            return False
        race = races.get(budget)
        if race is None:
            # Building the MILP starts a little early, so that HiGHS runs from handoff_after.
            races[budget] = start_race(budget, line, max(0.0, handoff_after - float(line.seconds)))
            return False
        if line.root_done and not race.reduced and race.thread.is_alive():
            # The root is done: a race on the whole MILP moves to the candidates it left open
            # when they are few (reduced-cost fixing removed most) and HiGHS has not run long,
            # or when HiGHS has hardly begun, since HiGHS on the smaller model is then much
            # faster than going on.
            kept, ran = len(line.open_candidates), race.begun_for()
            few = kept <= RACE_RESTART_SHARE * num_candidates and ran <= RACE_MOVE_LATEST
            if 0 < kept and (few or ran <= RACE_SWITCH_GRACE) and not _highs_ahead(race, line):
                race.stop.set()
                races[budget] = start_race(budget, line, max(0.0, handoff_after - float(line.seconds)), race)
                return False
        if line.root_done and race.fixed_open and race.thread.is_alive() \
                and race.begun_for() <= RACE_SWITCH_GRACE:
            # HiGHS has hardly begun on the candidates fixing left open, and the root's own
            # fixing closes a good share of them too (HiGHS's bound there is one over those
            # candidates only, so it says nothing about being ahead).
            narrowed = sum(1 for u in line.open_candidates if u in race.fixed_open)
            if narrowed <= RACE_NARROW_SHARE * len(race.fixed_open):
                race.stop.set()
                races[budget] = start_race(budget, line, max(0.0, handoff_after - float(line.seconds)), race)
                return False
        return race.proven()

    # Without a log, one line per budget when its race is due and none after: a race that
    # proves stops the search through its BudgetStop, and every call into Python from the
    # search thread waits for the GIL, which the race's HiGHS callbacks hold often (measured:
    # a line every 20 ms made a 0.18 s search take 0.29 s beside a race). With a log, lines
    # come at its pace, but at least every RACE_LOGGED seconds, so that the race starts on time.
    due = handoff_after - RACE_PREPARE
    if log is None:
        return watch, RACE_QUIET, max(RACE_FIRST, due)
    interval = min(log_interval, RACE_LOGGED)
    return watch, interval, max(RACE_FIRST, min(interval, due))


def _highs_ahead(race: _Race, line: Any) -> bool:
    """Whether the race's HiGHS has already proven a bound at least as tight as the search's:
    its root (cuts, probing) has then done work a restart on the open candidates would throw
    away. Tie-heavy entity profiles of 3,300 candidates at 9% (a variant of
    tests/oracles/profile.py) had the search's root done at 0.45 s, 21% open, HiGHS at 998.5 = OPT
    against the search's 998.75 after 0.35 s: the move made the solve 0.62 s against HiGHS
    alone's 0.40 s."""
    bound = race.stop.mip_bound
    return math.isfinite(bound) and bound <= float(line.upper_bound) + 1e-9 * max(1.0, abs(bound))
