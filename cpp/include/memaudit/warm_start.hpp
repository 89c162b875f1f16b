// Feasible stores that start the branch-and-bound: the higher the incumbent, the earlier
// the bounds prune, so a few cheap heuristics run before the search.
//
//  * Greedy by density: repeatedly insert the candidate of an unused group with the largest
//    F(u | S) / c_u that still fits (lazy evaluation: marginal gains only shrink as S grows,
//    by submodularity, so a stale key is an upper bound on the fresh one).
//  * Greedy by gain: the same with key F(u | S); it wins where density is misleading (a cheap
//    candidate blocking an expensive one that covers much more).
//  * Value thresholds in the spirit of the MEMAUDIT paper's Group Value-Threshold baseline:
//    for a threshold t on singleton densities, one pass over groups inserts the best
//    admissible candidate (density of its marginal gain >= t) of each group. A few dozen
//    thresholds (quantiles of the singleton densities) keep this linear in the package size.
//  * Local improvement: single swaps (remove s, insert u, u possibly from s's group), best
//    first, then one-for-several exchanges (remove s, refill the freed budget greedily), each
//    followed by a greedy fill, until no move gains or a work cap is reached. The search also
//    runs it (with a smaller cap) on every store that improves its incumbent. The best swap
//    costs about one pass over the package, not one per store member: removing s changes
//    the gains of s's neighbours only (candidates sharing a unit with it), so the others are
//    read from one ranking by their current gains.
//
// All stores are lists of reduced candidate indices and are feasible for the given budget
// limit (total cost <= limit, at most one candidate per group).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "memaudit/reduction.hpp"

namespace memaudit {

struct Store {
    std::vector<std::int32_t> candidates;
    double value = 0.0;
    double cost = 0.0;
};

class WarmStart {
  public:
    // `work_limit` caps the entry evaluations of each improve() call (about one per non-zero
    // scanned), keeping it a fraction of a second on the largest packages.
    WarmStart(const ReducedProblem& problem, double budget_limit, std::int64_t work_limit = 30'000'000);

    Store greedy_by_density();
    Store greedy_by_gain();
    Store value_thresholds(std::size_t max_thresholds);
    // Swap and fill moves from `start` (which must be feasible) until none improves, or
    // `work_limit` entry evaluations (0: the one given to the constructor).
    Store improve(Store start, std::int64_t work_limit = 0);
    // The best of the constructive heuristics; `seed` (feasible, possibly empty) competes too.
    // Local improvement is left to the search: most packages close at the root without it.
    Store best(const Store& seed);
    // `start` (feasible) filled by the density greedy; `few` picks the fill meant for a few
    // additions (local search's). Both give the same store (tested).
    Store filled(const Store& start, bool few);

  private:
    double gain(std::int32_t u) const;
    void add(std::int32_t u);
    void remove(std::int32_t u);
    void reset();
    Store snapshot() const;
    void load(const Store& store);
    void lazy_greedy(bool by_density);
    void collect(bool by_density); // the greedy's entries, into heap_ (unordered)
    void drain(bool by_density);   // the greedy on heap_'s entries
    void fill_by_density();
    void refill(); // fill_by_density's stores, cheaper when a few candidates go in
    // The best single swap (remove `out`, insert `in`) gaining more than `eps`; false if none.
    bool best_swap(double eps, std::int64_t& work, std::int32_t& out, std::int32_t& in);

    const ReducedProblem& p_;
    double limit_;
    std::int64_t work_limit_;
    std::vector<double> z_;
    std::vector<char> group_used_;
    std::vector<std::int32_t> store_;
    std::vector<std::pair<double, std::int32_t>> heap_; // lazy greedy's, kept between calls
    std::vector<std::int32_t> by_cost_;                  // candidates by cost (lazy greedy's scan), built once
    std::vector<std::pair<double, std::int32_t>> ranked_; // best_swap's gains of free-group candidates
    std::vector<std::uint32_t> near_, seen_;               // best_swap's stamps, per candidate
    std::uint32_t stamp_ = 0;
    double value_ = 0.0;
    double cost_ = 0.0;
};

} // namespace memaudit
