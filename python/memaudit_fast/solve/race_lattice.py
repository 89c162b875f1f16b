"""The race's HiGHS on its second model of the whole MILP: each y counted in steps of its unit's
lattice (milp.on_unit_lattice), after the plain model has run race.RACE_LATTICE_AFTER seconds
without a proof. Where a process of its own can run it (solve/highs_process.py) it runs beside
the plain run, which goes on, and the search keeps a small share of its core meanwhile
(:func:`beside_plain`); the first proof stops the other. Else the plain run stops and the
lattice model takes its place (:func:`after_plain`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .handoff import HandoffOutcome

Checked = Callable[[Sequence[int]], "tuple[tuple[int, ...], float] | None"]


def _keep(race: Any, checked: Checked, store: Sequence[int]) -> None:
    """A store of either run as the race's ``found`` when feasible and better than it: the
    floor of the other run, and the outcome's if HiGHS finds none better."""
    kept = checked(store)
    if kept is not None and (race.found is None or kept[1] > race.found[1]):
        race.found = kept


def after_plain(compiled: Any, budget: float, race: Any, lattice: Any, plain: Any,
                heard: Callable[[tuple[int, ...]], None] | None, floor: Callable[[], float],
                left: float | None, granularity: float, checked: Checked) -> Any:
    """HiGHS on the lattice model (``lattice``) in this process, once the plain run (``plain``,
    its outcome) stopped at race.RACE_LATTICE_AFTER without a proof. The store the plain run
    found is kept as the floor's."""
    from .handoff import finish_with_highs

    if not isinstance(plain, HandoffOutcome) or plain.proven or race.stop.is_set() \
            or plain.milp.status != "time_limit" or (left is not None and left <= plain.milp.seconds):
        return plain  # proven, stopped by the race, or at the run's own time limit
    if plain.store is not None:
        _keep(race, checked, plain.store)
    rest = None if left is None else left - plain.milp.seconds
    out = finish_with_highs(compiled, budget, range(compiled.num_candidates), None, time_limit=rest,
                            stop=race.stop, model=lattice, on_store=heard, granularity=granularity, floor=floor)
    if isinstance(out, HandoffOutcome) and not out.proven and plain.upper_bound is not None \
            and (out.upper_bound is None or plain.upper_bound < out.upper_bound):
        out = replace(out, upper_bound=plain.upper_bound)
    return out


def beside_plain(budget: float, race: Any, lattice: Any, heard: Callable[[tuple[int, ...]], None] | None,
                 floor: Callable[[], float], granularity: float, checked: Checked, budget_stop: Any,
                 after: float, search_share: float, cutoff: bool = False) -> Any:
    """HiGHS on the lattice model (or another second model: ``lattice``) in a process of its
    own, due ``after`` seconds into the plain run, which goes on; the caller closes it once the
    plain run returns. Its proof stops the plain run (``race.stop``); its stores are checked
    against the root LP (``heard``) and kept as the plain run's floor. While it runs the search
    of ``budget`` keeps ``search_share`` of its core. ``cutoff``: it prunes by the floor from
    the start (handoff.finish_with_highs). None where no process is free: the caller goes on
    with :func:`after_plain`."""
    from .highs_process import HighsProcess, claim

    server = claim()
    if server is None:
        return None

    def store(found: tuple[int, ...]) -> None:
        if heard is not None:
            heard(found)
        _keep(race, checked, found)

    share = None if budget_stop is None else (lambda: budget_stop.share(budget, search_share),
                                              lambda: budget_stop.share(budget, 1.0))
    beside = HighsProcess(server, lattice, budget, granularity, on_store=store, floor=floor,
                          on_proof=lambda _: race.stop.set(), while_solving=share, cutoff=cutoff)
    # Due once the plain run has had ``after`` (it starts at runs_at, or now if the stages
    # before it ran late); the plain run's time limit ends both.
    beside.start_at(max(race.runs_at, time.monotonic()) + after, None)
    return beside


def either(plain: Any, lattice: Any) -> Any:
    """The outcome of the plain run beside the one on the lattice model: the proof of either,
    else the plain one's with the tighter of their bounds (the lattice run's stores are in
    ``race.found``)."""
    if isinstance(lattice, HandoffOutcome) and lattice.proven:
        return lattice
    if isinstance(plain, HandoffOutcome) and isinstance(lattice, HandoffOutcome) and not plain.proven \
            and lattice.upper_bound is not None \
            and (plain.upper_bound is None or lattice.upper_bound < plain.upper_bound):
        return replace(plain, upper_bound=lattice.upper_bound)
    return plain
