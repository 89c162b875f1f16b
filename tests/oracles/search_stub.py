"""A stand-in for the search as the race sees it (``_core.BudgetStop``): its incumbent, and a
record of the budgets the race told it to stop."""

from __future__ import annotations


class SearchStub:
    def __init__(self, value: float, store: list[int]) -> None:
        self.incumbent = (value, store)
        self.stopped: list[float] = []

    def incumbent_of(self, budget: float) -> tuple[float, list[int]]:
        return self.incumbent

    def stop(self, budget: float) -> None:
        self.stopped.append(budget)

    def bound(self, budget: float, bound: float) -> None:
        """The race hands the search bounds; the stub has no use for them."""
