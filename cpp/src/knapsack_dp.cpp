// The integral multiple-choice knapsack bound of a node (integer costs only):
//
//     K(p) = max { sum_{u in T} p_u : c(T) <= floor(R), |T ∩ G| <= 1 },
//     K[g][x] = max( K[g-1][x], max_{u in G_g, c_u <= x} K[g-1][x - c_u] + p_u ),
//
// by dynamic programming over the capacity, O(items * R). With the Lagrangian profits it
// bounds the node like the LP does, without the LP's fractional use of the budget:
// UB <= F(S) + alpha + K(p(lambda)); with the exact marginal gains p_u = F(u | S) it bounds the
// node by submodularity: F(S + T) <= F(S) + sum_{u in T} F(u | S). Each argmax T gives a
// store S + T offered as incumbent. Its work is capped (search_tuning.hpp).
#include "memaudit/search.hpp"

#include <algorithm>
#include <cmath>

#include "search_tuning.hpp"

namespace memaudit {

double BranchAndBound::knapsack_dp(const std::vector<double>& profit, std::size_t capacity, bool track) {
    const std::size_t width = capacity + 1;
    knapsack_.assign(width, 0.0);
    if (track) choice_.assign(lp_.num_groups() * width, -1);
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        for (std::size_t x = width; x-- > 0;) {
            double best = knapsack_[x];
            std::int32_t pick = -1;
            for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i) {
                const auto c = static_cast<std::size_t>(lp_.item_cost(i));
                if (c <= x && profit[i] > 0.0 && knapsack_[x - c] + profit[i] > best) {
                    best = knapsack_[x - c] + profit[i];
                    pick = static_cast<std::int32_t>(i);
                }
            }
            knapsack_[x] = best;
            if (track) choice_[lg * width + x] = pick;
        }
    }
    return knapsack_[capacity];
}

void BranchAndBound::offer_knapsack_choice(std::size_t capacity) {
    // Rebuild the argmax T of the last tracked DP (groups in reverse) and offer S + T.
    const std::size_t width = capacity + 1;
    const std::size_t mark = coverage_log_.size();
    double value = value_;
    std::size_t x = capacity;
    picked_.assign(store_.begin(), store_.end());
    for (std::size_t lg = lp_.num_groups(); lg-- > 0;) {
        const auto i = choice_[lg * width + x];
        if (i < 0) continue;
        const auto u = lp_.item_candidate(static_cast<std::size_t>(i));
        picked_.push_back(u);
        x -= static_cast<std::size_t>(lp_.item_cost(static_cast<std::size_t>(i)));
        add_coverage(u, value);
    }
    undo_coverage(mark);
    if (value > incumbent_value_) set_incumbent(picked_, value);
}

double BranchAndBound::integral_knapsack_bound() {
    // Exact multiple-choice knapsack over the node's candidates by dynamic programming on
    // the capacity (integer costs only). It removes the LP's fractional use of the budget,
    // which is what keeps bounds just above the incumbent near the bottom of the tree (and
    // at the root of packages whose LP gap is only that):
    //  * with the Lagrangian profits it bounds the node like the LP does, only tighter;
    //  * with the exact marginal gains F(u | S) it bounds the node by submodularity.
    // The argmax T of each is a store S + T offered as incumbent; when its value reaches the
    // bound it solves the node.
    if (!integral_costs_) return std::numeric_limits<double>::infinity();
    const double room = std::floor(limit_ - cost_ + 1e-9);
    if (!(room >= 0.0)) return std::numeric_limits<double>::infinity();
    std::size_t items = 0;
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) items += lp_.item_end(lg) - lp_.item_begin(lg);
    const double work = static_cast<double>(items) * (room + 1.0);
    const double size = static_cast<double>(items);
    double allowed = at_root_ ? std::min(kRootKnapsackWork, std::max(kNodeKnapsackWork, kRootKnapsackPerItem * size))
                              : std::max(kNodeKnapsackWork, kNodeKnapsackPerItem * size);
    if (quick_root_) {
        // A quick stage of the root spends on the bound a share of what the full root costs.
        const double step = static_cast<double>(p_.indices.size()) + static_cast<double>(p_.num_candidates);
        allowed = std::min(allowed, std::max(kNodeKnapsackWork, kQuickKnapsackShare * quick_root_budget_ * step));
    }
    if (work > allowed) return std::numeric_limits<double>::infinity();
    const auto capacity = static_cast<std::size_t>(room);
    const bool track = static_cast<double>(lp_.num_groups()) * (room + 1.0) <= kMaxChoiceEntries;

    gains_.resize(items);
    for (std::size_t i = 0; i < items; ++i) gains_[i] = lp_.item_profit(i);
    const double lagrangian = value_ + node_alpha_ + knapsack_dp(gains_, capacity, track);
    if (track) offer_knapsack_choice(capacity);

    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i) {
            const auto u = lp_.item_candidate(i);
            double g = 0.0;
            for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k)
                if (entry_room_[k] > 0.0) g += entry_gain_[k];
            gains_[i] = g;
        }
    }
    const double additive = value_ + knapsack_dp(gains_, capacity, track);
    if (track) offer_knapsack_choice(capacity);
    return std::min(lagrangian, additive);
}
} // namespace memaudit
