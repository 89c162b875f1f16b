"""The race beside the search: a second thread that solves the root LP with the search's cuts
(solve/root_lp.py), hands the search its bound, looks for a store that meets it (solve/rins.py)
or proves the search's store optimal by a few nodes of LP branching (solve/lp_branching.py),
else closes candidates by the LP's reduced costs (solve/lp_fixing.py), then runs HiGHS on the
MILP or on the candidates left open, stopping it once its bound is within a lattice step of
the best store known (HiGHS's, the search's or the held one: solve/handoff.py). On the whole
MILP, after RACE_LATTICE_AFTER a second HiGHS, in a process of its own (solve/race_lattice.py),
takes the MILP with each y counted in its unit's lattice steps, while the search keeps a tenth
of its core; on the open candidates, after RACE_CUTOFF_AFTER, a second HiGHS takes them
pruning by the best store known from the start; the first proof wins. :func:`.exact.solve`
starts it (``finish="highs"``, the default); the search reaches it through its progress
callback (solve/race_watch.py) and a ``_core.BudgetStop``."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import _core
from .backends import HighsStop
from .handoff import HandoffOutcome
from .milp import lattice_floor
from .race_lattice import after_plain, beside_plain, either
from .rins import RINS_SECONDS
from .root_lp import root_lp, size_factor

#: Seconds for solving the root LP again before fixing by reduced costs (warm: it is usually
#: at its optimum already, unless the LP tree moved it).
FIX_LP_SECONDS = 0.05

#: The neighbourhood search before fixing ends once its store leaves at most this share of
#: the candidates open; a store that only just leaves few enough (LP_FIX_SHARE) is worth
#: improving on: HiGHS on 33% of a dialogue of 3,000 @ 5% took 0.75 s, on 19% 0.47 s.
FIX_ENOUGH_SHARE = 0.2

#: Seconds for the neighbourhood search before fixing, up to 3,000 candidates (scaled with the
#: package beyond, like the root LP's stage): on seed 2's large-budget suite its stores came
#: within 0.003-0.03 s (once 0.085 s), and one that finds none delays HiGHS by as much: an
#: entity timeline of 3,000 @ 9% (seed 12) has 59 free candidates there, and HiGHS takes 936
#: nodes (0.4 s) to show that none holds a store worth enough.
FIX_NEAR_SECONDS = 0.05

#: The neighbourhood searched for HiGHS's floor (_better_near) may leave this share of the
#: candidates free: on MEMAUDIT-Small x70 @ 20% (seed 0) the search's store at 0.12 s leaves
#: 10.3% free, and that neighbourhood holds OPT.
FLOOR_FREE_SHARE = 0.2

#: Seconds for that neighbourhood, whatever the package's size: on MEMAUDIT-Small x210 @ 20%
#: (10,221 candidates) a third of a second found a store 8 steps under OPT, which proves
#: nothing, and delayed HiGHS by as much (4.53 s against 4.35 s with 0.1 s). MEMAUDIT-Small
#: x70 @ 20% (seed 0) finds its store within 0.04 s; where the neighbourhood holds none better,
#: its time delays HiGHS on the whole MILP: long dialogues at 10% (seeds 11, 14) took 0.38 s
#: and 0.58 s with 0.05 s, against 0.43 s and 0.63 s with 0.1 s.
FLOOR_SECONDS = 0.05

#: Seconds HiGHS runs on the whole MILP as written before a second HiGHS, in a process of its
#: own, takes the MILP with each y counted in steps of its unit's lattice (milp.on_unit_lattice;
#: solve/race_lattice.py); the first still runs. There HiGHS's trees are often several times shorter
#: (entity timeline 1,000 @ 10%, HiGHS alone over random seeds 0-2: 1.4-2.3 s against 4.8-9.5 s;
#: long dialogue 1,002 @ 10%: 1.0-1.2 s against 1.9-2.4 s), but its root costs more (dialogue
#: 1,002 @ 5%, proven at the root: 0.46-0.56 s against 0.37-0.42 s), so the roots that prove in
#: time need only the plain model. Where the lattice model took the plain one's place at this
#: point, packages whose plain run would have ended soon after lost: long dialogue 1,001 @ 5%
#: (seed 2) 3.2-3.3 s against HiGHS alone's 1.7 s, MEMAUDIT-Small x70 @ 20% (seed 2) 1.3 s
#: against 0.74 s; with both models, 2.0 s and 1.0 s.
RACE_LATTICE_AFTER = 0.5

#: Candidates at most for that move: at 10,000 candidates (55 cases) it shortened no HiGHS
#: tree on the bench, and MEMAUDIT-Small x210 @ 20% (seed 0) took 5.4-5.7 s against 4.0 s
#: (HiGHS on the lattice model alone: 4.9-5.3 s against 4.0-4.9 s plain).
RACE_LATTICE_MAX_CANDIDATES = 5000

#: Seconds HiGHS runs on the candidates left open (by fixing or the search's root) before a
#: second HiGHS, in a process of its own, takes the same candidates pruning from the start by
#: the best store known (its objective limit half a lattice step above that store's worth;
#: handoff.finish_with_highs' ``cutoff``): that changes HiGHS's path, by several times either
#: way. Entity timeline 3,000 @ 5% (seed 8; HiGHS alone 0.60 s), 914 open: 0.2-0.4 s with the
#: limit, 0.9-1.8 s without; @ 10%, 1,455 open: 2.1 s with it, 1.05 s without.
RACE_CUTOFF_AFTER = 0.1

#: The share of its core the search keeps meanwhile: a search that proves then is slowed less
#: than beside the lattice run (entity profiles 3,000 @ 20%, seed 2, search-won: 0.68 s with a
#: tenth, 0.32 s with half, 0.35 s with all), at some cost to HiGHS where it proves (timeline
#: 3,000 @ 5%, seed 8: 0.56, 0.66 and 0.62 s; HiGHS alone 0.60 s).
RACE_CUTOFF_SEARCH_SHARE = 0.5

#: The share of its core the search keeps while HiGHS runs on both models (race_lattice.py):
#: two HiGHS and the search at full speed share two cores three ways, and the plain run (the
#: one HiGHS alone makes) takes longer. Long dialogue 1,001 @ 5% (seed 2; HiGHS alone 1.7 s):
#: 2.7 s with the whole core, 2.2 s with a quarter, 2.0 s with a tenth; MEMAUDIT-Small x70 @ 20%
#: (0.78 s): 1.10, 0.99, 0.97 s. A search that proves meanwhile pays: dense 1,000 @ 2% (seed 0;
#: HiGHS alone 22 s) 2.1, 2.6, 3.1 s.
RACE_SEARCH_SHARE = 0.1


@dataclass
class _Race:
    """HiGHS in a thread of its own (the machine's other core does the work), racing the
    branch-and-bound on one budget: the first to prove wins."""

    stop: HighsStop
    thread: threading.Thread
    outcome: Any = None  # the HandoffOutcome once HiGHS returns (None for log1p packages)
    reduced: bool = False  # on the root's open candidates (else on the whole MILP)
    runs_at: float = 0.0  # time.monotonic() at which HiGHS is due to start
    model: Any = None  # the MILP once built (a race that replaces this one reuses it)
    lp_bound: float | None = None  # the root LP's proven bound (solve/root_lp.py), once known
    lp_proof: tuple[tuple[int, ...], float] | None = None  # a store of HiGHS's that meets it
    held: tuple[tuple[int, ...], float] | None = None  # the store fixing by reduced costs kept to
    fixed_open: frozenset[int] | None = None  # the candidates HiGHS was given after fixing
    found: tuple[tuple[int, ...], float] | None = None  # the best store of the LP's neighbourhood
    granularity: float | None = None  # the objective's lattice step, once read (_granularity)

    def begun_for(self) -> float:
        """Seconds HiGHS has been running (at most; 0 while it waits)."""
        return max(0.0, time.monotonic() - self.runs_at)

    def proven(self) -> bool:
        return not self.thread.is_alive() and isinstance(self.outcome, HandoffOutcome) and self.outcome.proven


def _start_race(compiled: Any, budget: float, line: Any, time_limit: float | None, start_after: float = 0.0,
                budget_stop: Any = None, previous: _Race | None = None) -> _Race:
    """HiGHS beside the search: on the candidates the root left open once the root is done (OPT
    is the search's incumbent's value or a store of those), else on the whole MILP. Its model
    is built at once; ``start_after`` seconds later the first race of a budget solves the root
    LP (solve/root_lp.py) and hands its bound to the search through ``budget_stop``, then HiGHS
    runs, after the ``previous`` race (stopped by the caller) has returned. A proof stops the
    search of ``budget`` through ``budget_stop`` (an atomic the search reads; no call into Python)."""
    from .handoff import finish_with_highs
    from .milp import build_milp, on_unit_lattice
    from .rins import search_lp_neighbourhood

    reduced = bool(line.root_done)
    race = _Race(HighsStop(), threading.Thread(), reduced=reduced, runs_at=time.monotonic() + start_after)
    # HiGHS starts from no store, as it does alone: from the search's store it was slower as
    # often as faster, and up to ten times (timeline 1,000 @ 2%, 165 candidates open: 0.64 s
    # against 0.07 s; 3,300 @ 4%, whole MILP: 0.77 s against 0.48 s). On the open candidates
    # it proves OPT over them, and OPT is that or the incumbent's value (see _merge).
    candidates = list(line.open_candidates) if reduced else range(compiled.num_candidates)
    if previous is not None and previous.fixed_open is not None and reduced:
        # Replacing a race on the candidates fixing left open: a better store than both the
        # held one and the search's is made of candidates open under both fixings.
        candidates = [u for u in candidates if u in previous.fixed_open]
        race.held = previous.held
    if previous is not None:
        race.found, race.granularity = previous.found, previous.granularity
    left = None if time_limit is None else max(0.0, time_limit - float(line.seconds) - start_after)
    incumbent = tuple(int(u) for u in getattr(line, "incumbent_store", ()))

    def run() -> None:
        try:
            if not reduced and previous is None and compiled.num_candidates <= RACE_LATTICE_MAX_CANDIDATES:
                from .highs_process import warm

                warm()  # the process HiGHS runs the lattice model in (race_lattice.py), loading meanwhile
            if previous is not None:
                previous.thread.join()  # one HiGHS solve at a time in a process
                if isinstance(previous.outcome, HandoffOutcome) and previous.outcome.proven:
                    # The race this one replaced proved first (its HiGHS, or a store of it at
                    # the root LP's bound) and stopped the search: the proof is the budget's.
                    race.outcome = previous.outcome
                    return
            if race.stop.is_set():
                return
            built = previous.model if previous is not None else None
            # HiGHS gets the MILP spelt plainly (see build_milp): its path through it is HiGHS
            # alone's. The root LP takes the model without what cannot count (a tighter LP).
            race.model = built if built is not None else build_milp(compiled, budget, plain=True)
            lp = None
            if previous is not None:
                race.lp_bound = previous.lp_bound
            elif budget_stop is not None:
                # First the root LP with the search's cuts (solve/root_lp.py): its bound goes to
                # the search, which prunes with it, and every store HiGHS finds is held up to it.
                # It starts with the model, before handoff_after (on the other core), so that
                # HiGHS runs that much sooner.
                def known() -> float | None:
                    latest = budget_stop.incumbent_of(budget)
                    return None if latest is None else float(latest[0])

                lp = root_lp(compiled, build_milp(compiled, budget), stop=race.stop,
                             on_bound=lambda bound: budget_stop.bound(budget, bound), target=known)
                if lp is not None:
                    race.lp_bound = lp.bound
                    budget_stop.bound(budget, lp.bound)
            heard = _held_to_lp_bound(compiled, budget, race, budget_stop) if race.lp_bound is not None else None
            if lp is not None and heard is not None and budget_stop is not None:
                # The search's store may meet the bound already: its own root, still running on
                # large packages, reads the bound only when it is done (entity profiles of
                # 10,000 candidates at 40%: the LP proves the store at 0.2 s, the search at 0.45 s).
                latest = budget_stop.incumbent_of(budget)
                if latest is not None:
                    heard(tuple(int(u) for u in latest[1]))
            if lp is not None and heard is not None and budget_stop is not None:
                # Where the LP looks like OPT, a store at its bound is looked for next to it and
                # to the search's stores, at the start and its best by now (solve/rins.py),
                # before HiGHS takes the whole MILP.
                latest = budget_stop.incumbent_of(budget)
                stores = [incumbent] + ([latest[1]] if latest is not None else [])
                search_lp_neighbourhood(race.model, lp, stores, _granularity(compiled, race),
                                        stop=race.stop, on_store=heard,
                                        seconds=neighbourhood_seconds(compiled.num_candidates, left))
                if race.lp_proof is None and not race.stop.is_set():
                    _branch_below_lp(compiled, budget, race, lp, budget_stop)
            on = candidates
            if lp is not None and budget_stop is not None and not reduced and race.lp_proof is None \
                    and not race.stop.is_set():
                fixed = _fix_by_lp(compiled, budget, race, lp, budget_stop, heard, left)
                if fixed is not None:
                    on, race.reduced = fixed, True
                    race.fixed_open = frozenset(fixed)
                    race.runs_at = max(race.runs_at, time.monotonic())  # HiGHS on them starts now
            # On the whole MILP, HiGHS that has not proved within RACE_LATTICE_AFTER is joined
            # by one with each y counted in steps of its unit's lattice (see race_lattice.py).
            lattice = None if race.reduced or compiled.num_candidates > RACE_LATTICE_MAX_CANDIDATES \
                else on_unit_lattice(race.model)
            if lattice is race.model:
                lattice = None  # no unit on a lattice: nothing to move to
            floor = _best_known(compiled, budget, race, budget_stop)
            granularity = _granularity(compiled, race)

            def checked(store: Sequence[int]) -> tuple[tuple[int, ...], float] | None:
                return _checked(compiled, budget, store)

            if lattice is not None:
                beside = beside_plain(budget, race, lattice, heard, floor, granularity, checked, budget_stop,
                                      RACE_LATTICE_AFTER, RACE_SEARCH_SHARE)
            elif race.reduced and race.model is not None and compiled.num_candidates <= RACE_LATTICE_MAX_CANDIDATES:
                # On the open candidates, a second HiGHS prunes by the best store known from
                # the start (see RACE_CUTOFF_AFTER).
                from .handoff import restrict_to

                beside = beside_plain(budget, race, restrict_to(race.model, on), heard, floor, granularity, checked,
                                      budget_stop, RACE_CUTOFF_AFTER, RACE_CUTOFF_SEARCH_SHARE, cutoff=True)
            else:
                beside = None
            first = left if lattice is None or beside is not None \
                else RACE_LATTICE_AFTER if left is None else min(left, RACE_LATTICE_AFTER)
            try:
                race.outcome = finish_with_highs(compiled, budget, on, None, time_limit=first,
                                                 stop=race.stop, model=race.model, on_store=heard,
                                                 start_after=max(0.0, race.runs_at - time.monotonic()),
                                                 granularity=granularity, floor=floor)
            finally:
                if beside is not None:
                    beside.close()
            if beside is not None:
                race.outcome = either(race.outcome, beside.outcome)
            elif lattice is not None:
                race.outcome = after_plain(compiled, budget, race, lattice, race.outcome, heard, floor, left,
                                           granularity, checked)
            for kept in (race.held, race.found):
                if kept is not None and race.outcome is not None:
                    race.outcome = _with_held(compiled, race.outcome, *kept)
            if race.lp_proof is not None and race.outcome is not None:
                store, value = race.lp_proof
                race.outcome = HandoffOutcome(True, store, value, race.outcome.milp, proved_by="root_lp")
            if budget_stop is not None and race.outcome is not None and race.outcome.proven:
                budget_stop.stop(budget)
        except Exception as exc:  # noqa: BLE001 - the branch-and-bound goes on without it
            race.outcome = exc

    # Not a daemon: at exit Python waits for it (its flag is set by then) rather than killing
    # HiGHS mid-solve, which aborts the process.
    race.thread = threading.Thread(target=run, name="memaudit-highs-race", daemon=False)
    race.thread.start()
    return race


def _granularity(compiled: Any, race: _Race) -> float:
    """The objective's lattice step (``_core.objective_granularity``), read once per race: it
    scans the coverage (about 2 ms at 10,000 candidates), and every stage of the race asks."""
    if race.granularity is None:
        race.granularity = float(_core.objective_granularity(compiled.problem))
    return race.granularity


def neighbourhood_seconds(num_candidates: int, left: float | None) -> float:
    """Seconds for each of the race's neighbourhood searches (solve/rins.py) on a package of
    ``num_candidates``, at most ``left``: RINS_SECONDS, scaled like the root LP's stage. On a
    dialogue of 10,002 candidates at 10% the LP is OPT at 0.37 s, and HiGHS finds a store at
    its bound in the neighbourhood of the search's in 0.21 s; with a flat 0.1 s the proof
    waited for the whole MILP's HiGHS (1.73 s against 0.81 s; HiGHS alone 1.21 s)."""
    seconds = RINS_SECONDS * size_factor(num_candidates)
    return seconds if left is None else min(seconds, left)


def lp_bound_proves(value: float, bound: float, granularity: float) -> bool:
    """Whether a store worth ``value`` is optimal given ``bound`` >= OPT, with the search's
    tolerance (OPT <= value + 1e-9 max(1, |value|)); on a lattice (F in granularity * Z) the
    bound is first brought down to the lattice point below it, with room for rounding (only
    upwards: a lattice point a hair above the bound is kept)."""
    tol = 1e-9 * max(1.0, abs(value))
    if granularity > 1e3 * tol:
        bound = lattice_floor(bound, granularity)
    return bound <= value + tol


def _branch_below_lp(compiled: Any, budget: float, race: _Race, lp: Any, budget_stop: Any) -> None:
    """Where the search's store is a lattice step or two under the root LP's bound, a few nodes
    of LP branch-and-cut (solve/lp_branching.py) may prove it optimal before HiGHS starts: on
    a long dialogue of 3,000 candidates at 20% the LP ends at 1308.80, the store is worth
    1308.75, and three nodes prove it (0.013 s; HiGHS takes 0.17 s). Further under it, trees
    proving the bound down a step at a time (handed to the search) were tried on the 12 cases
    of seed 6 that HiGHS wins: one ended sooner, the other 11 only started HiGHS 8-25 ms later."""
    from .lp_branching import LP_BRANCH_STEPS, prove_at_most

    granularity = _granularity(compiled, race)
    held = _search_store(compiled, budget, budget_stop)
    if held is None or lp.rows is None:
        return
    store, value = held
    tol = 1e-9 * max(1.0, abs(value))
    if granularity <= 1e3 * tol or lattice_floor(lp.bound, granularity) - value > (LP_BRANCH_STEPS + 0.5) * granularity:
        return  # off a lattice the LP's bound never meets a store; far under it, the tree is large
    proof = prove_at_most(compiled, budget, lp, value, stop=race.stop,
                          proves=lambda worth, bound: lp_bound_proves(worth, bound, granularity))
    if proof is None:
        return
    race.lp_proof = (proof.store if proof.store is not None else store, proof.value)
    race.stop.set()
    budget_stop.stop(budget)


def _search_store(compiled: Any, budget: float, budget_stop: Any) -> tuple[tuple[int, ...], float] | None:
    """The search's best store of ``budget`` so far (sorted package candidate indices) and its
    worth as the result will state it; None before its first store or if it is not feasible."""
    latest = budget_stop.incumbent_of(budget)
    return None if latest is None else _checked(compiled, budget, latest[1])


def _checked(compiled: Any, budget: float, store: Any) -> tuple[tuple[int, ...], float] | None:
    """A store the search published (package candidate indices), sorted, with its exact worth;
    None if it is not feasible."""
    chosen = tuple(sorted(int(u) for u in store))
    if _infeasible(compiled, chosen, budget):
        return None
    return chosen, float(compiled.objective(list(chosen)))


def _fix_by_lp(compiled: Any, budget: float, race: _Race, lp: Any, budget_stop: Any,
               heard: Callable[[tuple[int, ...]], None] | None, left: float | None) -> list[int] | None:
    """The candidates a store better than the best in hand may hold, by the root LP's reduced
    costs (solve/lp_fixing.py), when they are few enough for HiGHS to be faster on them; the
    store in hand (the search's best, or a better one from the LP's neighbourhood,
    :func:`.rins.best_near`) is kept in ``race.held``: OPT is its worth or HiGHS's optimum
    over the open candidates. None: HiGHS takes the whole MILP."""
    from .lp_fixing import best_unproven, few_open, root_duals, worth_to_close
    from .rins import best_near

    held = _search_store(compiled, budget, budget_stop)
    if held is None or lp.rows is None:
        return None
    best, value = held
    pi = root_duals(lp, FIX_LP_SECONDS)
    if pi is None:
        return None
    granularity = _granularity(compiled, race)

    def proves(worth: float, bound: float) -> bool:
        return lp_bound_proves(worth, bound, granularity)

    # The least worth that leaves few enough open. Where even the best store short of a proof
    # would not (the LP is degenerate there: dialogue 3,000 @ 10%, seed 6, leaves 77% open at
    # OPT), no neighbourhood search; else it looks only for stores worth that much.
    needed = worth_to_close(lp, pi, granularity, num_candidates=compiled.num_candidates)
    if needed > max(value, best_unproven(lp.bound, granularity)):
        if not lp.settled:
            # A settled root's LP (root_lp.ROOT_LP_SETTLED_GAIN) lies on a lattice point that is
            # OPT as a rule: a floor under it never meets HiGHS's bound, and a store at it meets
            # the LP's, which search_lp_neighbourhood looked for already. Over seeds 0, 2, 3, 6
            # and 10-14 the search ran on 8 settled roots and found OPT on none (0.05 s each),
            # and on 5 of the 18 others.
            _better_near(compiled, budget, race, lp, held, heard, left)
        return None
    # The neighbourhood's HiGHS ends as soon as a store of its leaves few open.
    enough = HighsStop(parent=race.stop)

    def found(store: tuple[int, ...]) -> None:
        nonlocal best, value
        if heard is not None:
            heard(store)
        if _infeasible(compiled, store, budget):
            return
        worth = float(compiled.objective(sorted(store)))
        if worth > value:
            best, value = tuple(sorted(store)), worth
            if few_open(lp, pi, value, proves, num_candidates=compiled.num_candidates,
                        share=FIX_ENOUGH_SHARE) is not None:
                enough.set()

    # Short of that worth, only stores worth as much are looked for.
    best_near(race.model, lp, best, stop=enough, on_store=found,
              seconds=min(neighbourhood_seconds(compiled.num_candidates, left),
                          FIX_NEAR_SECONDS * size_factor(compiled.num_candidates)),
              at_least=needed if value < needed else None)
    if race.lp_proof is not None or race.stop.is_set():
        return None
    kept = few_open(lp, pi, value, proves, num_candidates=compiled.num_candidates)
    if kept is None:
        if value > held[1]:
            race.found = (best, value)  # HiGHS's floor on the whole MILP (_best_known)
        return None
    race.held = (best, value)
    if not kept:  # no candidate can be in a better store: the one in hand is optimal
        race.lp_proof = (best, value)
        race.stop.set()
        budget_stop.stop(budget)
    return kept


def _better_near(compiled: Any, budget: float, race: _Race, lp: Any, held: tuple[tuple[int, ...], float],
                 heard: Callable[[tuple[int, ...]], None] | None, left: float | None) -> None:
    """A store better than the search's ``held`` one, looked for in the LP's neighbourhood of it
    (solve/rins.py) before HiGHS takes the whole MILP, kept in ``race.found``: HiGHS's bound
    then proves it once within a lattice step of it (_best_known), often long before HiGHS
    finds as good a store itself. MEMAUDIT-Small x70 @ 20% (seed 0): the neighbourhood holds
    OPT (0.04 s); HiGHS alone has its bound there at 0.30 s and OPT at 0.76 s. Only stores
    better by a step count, so a neighbourhood without one ends as soon as its LP says so."""
    from .rins import best_near

    store, value = held
    granularity = _granularity(compiled, race)
    tol = 1e-9 * max(1.0, abs(value))
    step = granularity if granularity > 1e3 * tol else tol

    def found(candidate: tuple[int, ...]) -> None:
        if heard is not None:
            heard(candidate)
        checked = _checked(compiled, budget, candidate)
        if checked is not None and checked[1] > (value if race.found is None else race.found[1]):
            race.found = checked

    best_near(race.model, lp, store, stop=race.stop, on_store=found, max_free_share=FLOOR_FREE_SHARE,
              seconds=FLOOR_SECONDS if left is None else min(FLOOR_SECONDS, left), at_least=value + step)


def _best_known(compiled: Any, budget: float, race: _Race, budget_stop: Any) -> Callable[[], float]:
    """The worth of the best store known beside the race's HiGHS: the search's latest (each new
    one checked and evaluated exactly once) or the one fixing holds. HiGHS's bound often comes
    within a lattice step of OPT long before HiGHS finds a store worth it, while the search
    holds one already: on MEMAUDIT-Small x70 @ 20% (seed 0) HiGHS alone is there at 0.32 s and
    done at 0.78 s, on a dialogue of 1,002 @ 5% at 0.12 s and 0.40 s."""
    seen: list[Any] = [None, -math.inf]  # the search's value last read, its store's exact worth

    def worth() -> float:
        best = max((kept[1] for kept in (race.held, race.found) if kept is not None), default=-math.inf)
        latest = budget_stop.incumbent_of(budget) if budget_stop is not None else None
        if latest is not None:
            if latest[0] != seen[0]:
                checked = _checked(compiled, budget, latest[1])
                seen[0], seen[1] = latest[0], -math.inf if checked is None else checked[1]
            best = max(best, seen[1])
        return best

    return worth


def _with_held(compiled: Any, out: HandoffOutcome, store: tuple[int, ...], value: float) -> HandoffOutcome:
    """HiGHS's outcome, with a store known beside it (the one fixing kept, or the best of the
    LP's neighbourhood) where that is better. After fixing, OPT is the larger of the two, and
    a bound over the open candidates is one on OPT only once raised to the held store's worth;
    on the whole MILP HiGHS's bound is at least any store's worth already."""
    mine = float(compiled.objective(sorted(out.store))) if out.store is not None else -math.inf
    bound = None if out.upper_bound is None else max(out.upper_bound, value)
    if mine >= value:
        return replace(out, upper_bound=bound)
    return replace(out, store=store, upper_bound=bound)


def _held_to_lp_bound(compiled: Any, budget: float, race: _Race, budget_stop: Any) -> Callable[[tuple[int, ...]], None]:
    """HiGHS's improving stores, each checked against the root LP's bound: one that meets it
    is optimal, and stops HiGHS and the search of ``budget``."""
    granularity = _granularity(compiled, race)

    def heard(store: tuple[int, ...]) -> None:
        if race.lp_proof is not None or race.lp_bound is None or _infeasible(compiled, store, budget):
            return
        chosen = tuple(sorted(store))
        value = float(compiled.objective(list(chosen)))
        if lp_bound_proves(value, race.lp_bound, granularity):
            race.lp_proof = (chosen, value)
            race.stop.set()  # HiGHS ends at its next check
            if budget_stop is not None:
                budget_stop.stop(budget)

    return heard


def _merge(compiled: Any, result: Any, out: HandoffOutcome, seconds: float) -> Any:
    """The branch-and-bound's result improved by what HiGHS found and proved."""
    ids = compiled.candidate_ids
    value, selected, cost = result.value, result.selected, result.cost
    if out.store is not None:
        store = sorted(out.store)
        candidate_value = float(compiled.objective(store))
        if candidate_value > value and not _infeasible(compiled, store, result.budget):
            value, selected = candidate_value, tuple(ids[i] for i in store)
            cost = float(sum(float(compiled.cost[i]) for i in store))
    upper = result.upper_bound
    if out.upper_bound is not None:
        upper = min(upper, max(value, out.upper_bound))
    upper = max(upper, value)
    proven = out.proven
    gap = max(0.0, (upper - value) / upper) if upper > 0 else 0.0
    return replace(result, status="optimal" if proven else result.status, proven_optimal=proven, value=value,
                   upper_bound=upper, gap=0.0 if proven else gap, selected=selected, cost=cost,
                   seconds=seconds, proved_by=out.proved_by if proven else None)


def _infeasible(compiled: Any, store: Sequence[int], budget: float) -> bool:
    from ..model.compiled import budget_limit

    groups = [int(compiled.group_of[i]) for i in store]
    return len(set(groups)) < len(groups) or float(sum(float(compiled.cost[i]) for i in store)) > budget_limit(budget)
