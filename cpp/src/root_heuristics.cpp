// Primal heuristics of the branch-and-bound:
//  * LP rounding: S plus every candidate the knapsack LP takes whole is feasible (those
//    increments fit R); at the root the multiplier vectors of the subgradient are rounded
//    (a Lagrangian heuristic), the best rounded store polished by local search.
//  * Core search: candidates ranked by the root LP's reduced cost rc_u = p_u - mu c_u - pi_G;
//    node-limited searches over the best-priced K of them (plus the incumbent's), K doubling,
//    in the spirit of the core of knapsack algorithms (Balas and Zemel 1980; Pisinger 1995):
//    the optimum mostly uses candidates the LP prices well.
//  * Averaged-LP rounding: the exponential average xbar of the Lagrangian LP solutions
//    approaches a primal LP optimum (the volume algorithm's primal estimate), which on the
//    near-integral LPs of large budgets is close to a store; candidates in decreasing xbar
//    are taken while they fit and add value, then the store is filled and polished (a
//    RENS-like rounding: Berthold, "RENS", Math. Prog. Comp. 6, 2014). The full root rounds
//    it a few times while its first subgradient run goes on, with a light polish: an average
//    of 10-20 steps often rounds to the optimum already, and the root then stops at once.
#include "memaudit/search.hpp"

#include <algorithm>
#include <cmath>

#include "search_tuning.hpp"

namespace memaudit {

double BranchAndBound::round_lp() {
    // S plus every candidate the LP takes whole: feasible (those increments fit R). Leaves
    // the store in picked_ and returns its value.
    const std::size_t mark = coverage_log_.size();
    double value = value_;
    picked_.assign(store_.begin(), store_.end());
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        const auto i = lp_.integral_item(lg);
        if (i < 0) continue;
        const auto u = lp_.item_candidate(static_cast<std::size_t>(i));
        picked_.push_back(u);
        add_coverage(u, value);
    }
    undo_coverage(mark);
    return value;
}

void BranchAndBound::try_lp_rounding() {
    const double value = round_lp();
    if (value > incumbent_value_) set_incumbent(picked_, value);
}

void BranchAndBound::round_average(std::int64_t polish_scans) {
    if (xbar_.empty()) return;
    std::vector<std::pair<double, std::int32_t>> order;
    for (std::size_t i = 0; i < available_.size(); ++i) {
        const auto u = available_.at(i);
        if (xbar_[u] > kAverageRoundMin) order.emplace_back(xbar_[u], u);
    }
    if (order.empty()) return;
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    std::vector<char> used(static_cast<std::size_t>(p_.num_groups), 0);
    for (auto u : store_) used[p_.group_of[u]] = 1;
    const std::size_t mark = coverage_log_.size();
    double value = value_, cost = cost_;
    Store rounded;
    rounded.candidates.assign(store_.begin(), store_.end());
    for (const auto& [x, u] : order) {
        const auto g = p_.group_of[u];
        if (used[g] || cost + p_.cost[u] > limit_) continue;
        double gain = 0.0;
        for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
            const auto r = p_.indices[k];
            gain += p_.unit_value(r, z_[r] + p_.values[k]) - p_.unit_value(r, z_[r]);
        }
        if (!(gain > 0.0)) continue;
        used[g] = 1;
        cost += p_.cost[u];
        add_coverage(u, value);
        rounded.candidates.push_back(u);
    }
    undo_coverage(mark);
    rounded.value = value;
    if (polisher_ && polish_scans > 0) {
        const std::int64_t work = polish_scans * (static_cast<std::int64_t>(p_.indices.size()) + p_.num_candidates);
        rounded = polisher_->improve(rounded, work);
    }
    if (rounded.value > incumbent_value_) set_incumbent(rounded.candidates, rounded.value);
}

void BranchAndBound::core_search() {
    // Candidates ranked by the root LP's reduced cost: the optimum mostly uses candidates
    // the LP prices well (the "core" of knapsack algorithms). A node-limited search over the
    // best-priced K of them (plus the incumbent's) often finds a much better store than
    // local search, and a better incumbent early makes every bound and fixing below bite.
    std::vector<std::pair<double, std::int32_t>> ranked;
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg)
        for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i)
            if (available_.contains(lp_.item_candidate(i)))
                ranked.emplace_back(lp_.reduced_cost(i, lg), lp_.item_candidate(i));
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    // On small packages the main search is the better use of the same nodes.
    if (ranked.size() < 4 * kCoreMinSize) return;
    std::vector<char> allowed(static_cast<std::size_t>(p_.num_candidates), 0);
    std::size_t k = std::max<std::size_t>(kCoreMinSize, ranked.size() / 16);
    while (k <= ranked.size() / 2 && nodes_ < limits_.node_limit) {
        std::fill(allowed.begin(), allowed.end(), 0);
        for (std::size_t j = 0; j < k; ++j) allowed[ranked[j].second] = 1;
        for (auto u : incumbent_) allowed[u] = 1;
        SearchLimits sub_limits = limits_;
        sub_limits.node_limit = std::min(limits_.node_limit - nodes_, kCoreNodes);
        sub_limits.core_search = false;
        // The log stays the parent's: a core search reports through it (its own counts are
        // partial), at the parent's pace.
        if (limits_.progress)
            sub_limits.progress = [this](const SearchProgress&) {
                report_progress(false);
                return stop_requested_;
            };
        // The core search starts from the root's multipliers and cuts (valid everywhere) and
        // separates none of its own: its root is then a short warm start, not a second root.
        sub_limits.cut_rounds = 0;
        if (!cuts_.empty()) sub_limits.root_iterations = kCoreRootIterations;
        std::vector<double> sub_lambda = lambda_;
        BranchAndBound sub(p_, budget_, sub_lambda, sub_limits, &allowed);
        sub.inherit_cuts(*this);
        sub.set_polisher(polisher_);
        sub.offer(incumbent_);
        const SearchOutcome out = sub.run();
        nodes_ += out.nodes;
        if (out.value > incumbent_value_) set_incumbent(out.store, out.value);
        // A core search that completed proved the best store inside its core; a larger
        // core may still hold a better one, so grow it either way.
        if (out.status == SolveStatus::Interrupted || closed_from_outside() || halted()) break;
        k *= 2;
    }
}
} // namespace memaudit
