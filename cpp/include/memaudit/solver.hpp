// Exact solver of the MEMAUDIT package oracle (Bhargava & Sobral Barrento, 2026):
//
//     OPT(B) = max F(X)  s.t.  sum_{u in X} c_u <= B,  |X ∩ G| <= 1 for every group G,
//     F(X)   = sum_r w_r h_r( sum_{u in X} a[u,r] ),  h_r concave, non-decreasing, h_r(0) = 0.
//
// Pipeline for one package and a list of budgets (a sweep):
//  1. exact reductions shared by all budgets (reduction.hpp);
//  2. budgets in increasing order; for each, a warm start (warm_start.hpp) that also tries
//     the optimum of the previous budget (feasible for a larger one), then the depth-first
//     branch-and-bound (search.hpp) whose Lagrangian multipliers carry over from budget to
//     budget;
//  3. the reported value is F of the selected candidates evaluated from scratch on the
//     original problem, never an accumulated sum.
//
// Why branch-and-bound rather than a MILP: the node bound is the LP relaxation of the node's
// MILP (up to subgradient convergence) yet costs one pass over the non-zeros and a
// multiple-choice knapsack greedy, and the search keeps only a path of the tree in memory.
//
// Exactness: with status Optimal, OPT(B) <= value + relative_tolerance * max(1, |value|),
// i.e. value >= OPT(B) - tol; the selected store is feasible (cost <= B up to a 1e-12
// relative slack for rounding in float cost sums). With any other status, value is the
// best store found and upper_bound >= OPT(B) is proven; gap = (upper_bound - value) /
// upper_bound (0 when upper_bound is 0). Optimal is never reported without a completed search.
//
// Thread safety: no global or static state; several solves may run in parallel on the same
// (immutable) Problem.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "memaudit/objective.hpp"
#include "memaudit/external_bound.hpp"
#include "memaudit/status.hpp"

namespace memaudit {

struct SolveOptions {
    double time_limit = std::numeric_limits<double>::infinity(); // seconds, per budget
    std::int64_t node_limit = std::numeric_limits<std::int64_t>::max(); // per budget
    double relative_tolerance = 1e-9;
    const std::atomic<bool>* cancel = nullptr; // set from any thread to stop (status interrupted)
    std::function<bool()> poll;                // asked about every poll_interval s; true stops
    double poll_interval = 0.1;
    int root_iterations = 0;   // subgradient steps at the root (0: automatic, 40 to 300 by size)
    int node_iterations = 3;   // and at every other node
    int cut_rounds = 8;        // coverage-cut separation rounds at the root (0: no relax-and-cut)
    std::int32_t cut_min_candidates = 400; // smaller packages (after reductions) get no cuts
    // A store (candidate indices of the Problem) offered as incumbent to every budget it fits:
    // a solution found elsewhere (another solver, an earlier run). Infeasible ones are ignored.
    std::vector<std::int32_t> start;
    // Called about every progress_interval seconds from the solving thread (a MIP-style log).
    // Returning true stops this budget (status TimeLimit); the next budget starts as usual.
    std::function<bool(const SearchProgress&)> progress;
    double progress_interval = 1.0;
    double progress_first = 0.0; // seconds before each budget's first line (0: progress_interval)
    // Any thread may store a budget here: that budget's search stops (status TimeLimit) without
    // a call into the caller, e.g. when another solver has proven it. NaN stops none.
    const std::atomic<double>* stop_budget = nullptr;
    // Any thread may set an upper bound on OPT of one budget proven elsewhere; the search
    // prunes with it (see external_bound.hpp) and says so in SolveResult::external_bound_used.
    const ExternalBound* external_bound = nullptr;
    // Where the search publishes each new incumbent of a budget (see external_bound.hpp).
    SharedIncumbent* shared_incumbent = nullptr;
};

struct SolveResult {
    double budget = 0.0;
    SolveStatus status = SolveStatus::Optimal;
    double value = 0.0;       // F(selected), recomputed from scratch
    double upper_bound = 0.0; // proven: OPT(B) <= upper_bound
    double gap = 0.0;
    std::vector<std::int32_t> selected; // candidate indices of the Problem, increasing
    double cost = 0.0;
    std::int64_t nodes = 0;
    double seconds = 0.0;
    double root_bound = 0.0;             // upper bound proven at the root, before branching
    std::int32_t reduced_candidates = 0; // candidates left after the exact reductions
    // Candidates (of the Problem, increasing) that may still improve on `value`: every store
    // worth more than value + tol uses only these (exact reductions, root fixing against the
    // final incumbent). A second solver can finish the proof on them alone.
    std::vector<std::int32_t> open_candidates;
    // The proof (or the bound) used the caller's external bound (SolveOptions::external_bound).
    bool external_bound_used = false;

    bool proven_optimal() const { return status == SolveStatus::Optimal; }
};

const char* status_name(SolveStatus status);

// Throws std::invalid_argument when a budget or an option is out of range.
void check_solve_inputs(const std::vector<double>& budgets, const SolveOptions& options);

// Solves every budget (finite, >= 0; otherwise std::invalid_argument). Results are in the
// order of `budgets`.
std::vector<SolveResult> solve_budgets(const Problem& problem, const std::vector<double>& budgets,
                                       const SolveOptions& options = {});

} // namespace memaudit
