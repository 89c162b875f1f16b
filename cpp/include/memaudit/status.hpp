// What a solve reports while and after it runs, shared by the solver facade and the search.
//
// Status of one budget: Optimal only when the search completed (OPT(B) <= value + tol); any
// other status keeps the best store found and a proven upper bound >= OPT(B).
// Budget feasibility: a store fits when its total cost is at most
//     budget_limit(B) = B + kBudgetSlack * max(1, B),
// a relative slack that absorbs rounding in sums of float costs (the MILP uses the same).
#pragma once

#include <cstdint>
#include <vector>

namespace memaudit {

enum class SolveStatus : std::int32_t { Optimal = 0, TimeLimit = 1, NodeLimit = 2, Interrupted = 3 };

constexpr double kBudgetSlack = 1e-12;
inline double budget_limit(double budget) { return budget + kBudgetSlack * (budget > 1.0 ? budget : 1.0); }

// One line of the solver log: the state of the search for one budget at one moment.
// upper_bound >= OPT(B) is proven (the largest bound of any part of the tree not yet
// closed); gap = (upper_bound - incumbent) / upper_bound (0 when upper_bound is 0).
struct SearchProgress {
    double budget = 0.0;
    std::int64_t nodes = 0;
    double incumbent = 0.0;
    double upper_bound = 0.0;
    double gap = 0.0;
    double seconds = 0.0; // since the start of this budget's search
    bool root_done = false;
    // Candidate indices: the incumbent store, and, once the root is done, the candidates any
    // better store must be made of (what a hand-off may give another solver; empty before).
    std::vector<std::int32_t> incumbent_store;
    std::vector<std::int32_t> open_candidates;
};

} // namespace memaudit
