#include "memaudit/search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace memaudit {

namespace {

// Largest items * capacity a node spends on the integral knapsack bound.
constexpr double kMaxKnapsackWork = 8'000;

// Step-size rule (Held, Wolfe and Crowder 1974): Polyak steps theta (UB - LB) / |d|^2
// towards the incumbent LB, theta halved after `patience` iterations without progress.
constexpr double kRootTheta = 2.0;
constexpr int kRootPatience = 15;
constexpr double kNodeTheta = 1.0;
constexpr int kNodePatience = 2;
constexpr double kMinTheta = 1e-4;
// Deflection (Camerini, Fratta and Maffioli 1975): d = g + kDeflection d_prev damps the
// zig-zag of plain subgradients on a piecewise-linear dual.
constexpr double kDeflection = 0.5;

} // namespace

BranchAndBound::BranchAndBound(const ReducedProblem& problem, double budget, std::vector<double>& lambda,
                               const SearchLimits& limits)
    : p_(problem), budget_(budget), limit_(budget_limit(budget)), lambda_(lambda), limits_(limits) {
    const auto n = static_cast<std::size_t>(p_.num_candidates);
    const auto groups = static_cast<std::size_t>(p_.num_groups);
    const auto units = static_cast<std::size_t>(p_.num_units);
    available_.init(n);
    open_groups_.init(groups);
    group_available_.assign(groups, 0);
    for (auto g : p_.group_of) ++group_available_[g];
    for (std::size_t g = groups; g-- > 0;)
        if (group_available_[g] == 0) open_groups_.erase(static_cast<std::int32_t>(g));
    // Candidates that never fit are gone for good: the root state is never undone.
    for (std::int32_t u = 0; u < p_.num_candidates; ++u)
        if (p_.cost[u] > limit_) remove_candidate(u);
    removal_log_.clear();
    group_used_.assign((groups + 63) / 64, 0);
    z_.assign(units, 0.0);
    unit_stamp_.assign(units, 0);
    unit_.resize(units);
    coef_.assign(units, 0.0);
    lp_coverage_.assign(units, 0.0);
    direction_.assign(units, 0.0);
    candidate_stamp_.assign(n, 0);
    entry_room_.assign(p_.values.size(), 0.0);
    entry_gain_.assign(p_.values.size(), 0.0);
    if (lambda_.size() != units) lambda_.assign(units, 1.0);
    integral_costs_ = true;
    for (auto c : p_.cost) integral_costs_ = integral_costs_ && c == std::floor(c) && c < 1e9;
    next_poll_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.poll_interval));
}

double BranchAndBound::threshold() const {
    const double tol = limits_.relative_tolerance * std::max(1.0, std::abs(incumbent_value_));
    // The lattice step only counts when it dwarfs the rounding tol is there to absorb.
    if (limits_.granularity > 1e3 * tol) return incumbent_value_ + limits_.granularity - tol;
    return incumbent_value_ + tol;
}

void BranchAndBound::offer(const std::vector<std::int32_t>& store) {
    double cost = 0.0;
    std::vector<char> seen(static_cast<std::size_t>(p_.num_groups), 0);
    for (auto u : store) {
        if (u < 0 || u >= p_.num_candidates || seen[p_.group_of[u]]) return;
        seen[p_.group_of[u]] = 1;
        cost += p_.cost[u];
    }
    if (cost > limit_) return;
    const double value = p_.value_of(store);
    if (value > incumbent_value_) {
        set_incumbent(store, value);
    }
}

void BranchAndBound::set_incumbent(const std::vector<std::int32_t>& store, double value) {
    incumbent_ = store;
    incumbent_value_ = value;
    incumbent_fresh_ = true;
}

void BranchAndBound::polish_incumbent() {
    if (!polisher_ || !incumbent_fresh_) return;
    incumbent_fresh_ = false;
    Store current;
    current.candidates = incumbent_;
    current.value = incumbent_value_;
    const Store better = polisher_->improve(current);
    if (better.value > incumbent_value_) {
        incumbent_ = better.candidates;
        incumbent_value_ = better.value;
    }
}

void BranchAndBound::update_incumbent() {
    if (value_ > incumbent_value_) {
        set_incumbent(store_, value_);
    }
}

void BranchAndBound::remove_candidate(std::int32_t u) {
    available_.erase(u);
    removal_log_.push_back(u);
    const auto g = p_.group_of[u];
    if (--group_available_[g] == 0) open_groups_.erase(g);
}

void BranchAndBound::close_group(std::int32_t g) {
    for (auto m = p_.group_ptr[g]; m < p_.group_ptr[g + 1]; ++m) {
        const auto u = p_.group_members[m];
        if (available_.contains(u)) remove_candidate(u);
    }
}

bool BranchAndBound::dominates(std::int32_t u, std::int32_t v) const {
    // Coverage beyond the residual cap is worthless below this node, so compare clipped rows.
    if (p_.cost[u] > p_.cost[v]) return false;
    std::int64_t j = p_.indptr[u];
    const std::int64_t end = p_.indptr[u + 1];
    for (std::int64_t k = p_.indptr[v]; k < p_.indptr[v + 1]; ++k) {
        const auto r = p_.indices[k];
        const double room = p_.cap[r] - z_[r];
        const double need = std::min(p_.values[k], room);
        if (!(need > 0.0)) continue;
        while (j < end && p_.indices[j] < r) ++j;
        if (j == end || p_.indices[j] != r || std::min(p_.values[j], room) < need) return false;
    }
    return true;
}

void BranchAndBound::remove_dominated() {
    // In the child where group G stays empty, a store holding v from another group, with v
    // dominated by some u of G (c_u <= c_v, clipped coverage of u >= that of v), can swap v
    // for u: still feasible, no less valuable, and it lies in the sibling that includes u.
    // So v is not needed here. A dominated v shares a unit with u: scan u's columns.
    ++scan_stamp_;
    for (auto u : dominators_) {
        for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
            const auto r = p_.indices[k];
            for (auto c = p_.unit_ptr[r]; c < p_.unit_ptr[r + 1]; ++c) {
                const auto v = p_.unit_candidates[c];
                if (candidate_stamp_[v] == scan_stamp_ || !available_.contains(v)) continue;
                candidate_stamp_[v] = scan_stamp_;
                for (auto w : dominators_) {
                    if (dominates(w, v)) {
                        remove_candidate(v);
                        break;
                    }
                }
            }
        }
    }
}

void BranchAndBound::include(std::int32_t u) {
    const auto g = static_cast<std::size_t>(p_.group_of[u]);
    group_used_[g / 64] |= std::uint64_t{1} << (g % 64);
    for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
        const auto r = p_.indices[k];
        const double before = z_[r];
        coverage_log_.emplace_back(r, before);
        z_[r] = before + p_.values[k];
        value_ += p_.unit_value(r, z_[r]) - p_.unit_value(r, before);
    }
    store_.push_back(u);
    cost_ += p_.cost[u];
}

void BranchAndBound::restore(const Level& level) {
    while (removal_log_.size() > level.removal_mark) {
        const auto u = removal_log_.back();
        removal_log_.pop_back();
        if (group_available_[p_.group_of[u]]++ == 0) open_groups_.restore();
        available_.restore();
    }
    while (coverage_log_.size() > level.coverage_mark) {
        z_[coverage_log_.back().first] = coverage_log_.back().second;
        coverage_log_.pop_back();
    }
    while (store_.size() > level.store_size) {
        const auto g = static_cast<std::size_t>(p_.group_of[store_.back()]);
        group_used_[g / 64] &= ~(std::uint64_t{1} << (g % 64));
        store_.pop_back();
    }
    value_ = level.value;
    cost_ = level.cost;
}

bool BranchAndBound::should_stop() {
    if (nodes_ >= limits_.node_limit) {
        status_ = SolveStatus::NodeLimit;
        return true;
    }
    if (limits_.cancel && limits_.cancel->load(std::memory_order_relaxed)) {
        status_ = SolveStatus::Interrupted;
        return true;
    }
    const auto now = Clock::now();
    if (now >= limits_.deadline) {
        status_ = SolveStatus::TimeLimit;
        return true;
    }
    if (limits_.poll && now >= next_poll_) {
        next_poll_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.poll_interval));
        if (limits_.poll()) {
            status_ = SolveStatus::Interrupted;
            return true;
        }
    }
    return false;
}

double BranchAndBound::evaluate_bound(double capacity) {
    double alpha = 0.0;
    for (auto r : touched_) {
        const ResidualUnit& ru = unit_[r];
        coef_[r] = ru.weight * lambda_[r] * ru.slope;
        alpha += ru.weight * ru.intercept(lambda_[r]);
    }
    lp_.clear();
    for (std::size_t i = 0; i < open_groups_.size(); ++i) {
        const auto g = open_groups_.at(i);
        for (auto m = p_.group_ptr[g]; m < p_.group_ptr[g + 1]; ++m) {
            const auto u = p_.group_members[m];
            if (!available_.contains(u)) continue;
            double profit = 0.0;
            for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
                const double t = entry_room_[k];
                if (t > 0.0) profit += std::min(coef_[p_.indices[k]] * t, entry_gain_[k]);
            }
            lp_.add(u, p_.cost[u], profit);
        }
        lp_.close_group();
    }
    const double lp_value = lp_.solve(capacity);
    node_alpha_ = alpha;
    node_dual_ = value_ + alpha + lp_.dual_value();
    return value_ + alpha + lp_value;
}

double BranchAndBound::bound_node(int max_iterations) {
    if (++stamp_ == 0) {
        std::fill(unit_stamp_.begin(), unit_stamp_.end(), 0);
        stamp_ = 1;
    }
    touched_.clear();
    const double capacity = limit_ - cost_;
    // Drop what no longer fits or no longer adds value, and prepare the clipped entries.
    for (std::size_t i = open_groups_.size(); i-- > 0;) {
        const auto g = open_groups_.at(i);
        for (auto m = p_.group_ptr[g]; m < p_.group_ptr[g + 1]; ++m) {
            const auto u = p_.group_members[m];
            if (!available_.contains(u)) continue;
            if (p_.cost[u] > capacity) {
                remove_candidate(u);
                continue;
            }
            bool useful = false;
            for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
                const auto r = p_.indices[k];
                ResidualUnit& ru = unit_[r];
                if (unit_stamp_[r] != stamp_) {
                    unit_stamp_[r] = stamp_;
                    ru.reset(p_.weight[r], z_[r], p_.cap[r], p_.saturation[r]);
                    if (ru.room > 0.0) touched_.push_back(r);
                }
                const double t = std::min(p_.values[k], ru.room);
                entry_room_[k] = t;
                if (t > 0.0) {
                    entry_gain_[k] = ru.weight * ru.gain(t);
                    useful = useful || entry_gain_[k] > 0.0;
                }
            }
            if (!useful) remove_candidate(u);
        }
    }
    if (open_groups_.size() == 0) return value_;

    saved_lambda_.resize(touched_.size());
    for (std::size_t j = 0; j < touched_.size(); ++j) saved_lambda_[j] = lambda_[touched_[j]];
    for (auto r : touched_) direction_[r] = 0.0;
    const bool root = nodes_ <= 1;
    double theta = root ? kRootTheta : kNodeTheta;
    const int patience = root ? kRootPatience : kNodePatience;
    double best = std::numeric_limits<double>::infinity();
    int best_iteration = -1, last_iteration = -1, idle = 0;
    for (int it = 0; it < max_iterations; ++it) {
        const double ub = evaluate_bound(capacity);
        last_iteration = it;
        if (root && polisher_) {
            // Lagrangian heuristic: each multiplier vector rounds to a different store.
            const double rounded = round_lp();
            if (rounded > root_rounded_.value) {
                root_rounded_.candidates = picked_;
                root_rounded_.value = rounded;
            }
        }
        if (best_iteration < 0 || ub < best - 1e-12 * std::max(1.0, std::abs(best))) {
            best = ub;
            best_iteration = it;
            for (std::size_t j = 0; j < touched_.size(); ++j) saved_lambda_[j] = lambda_[touched_[j]];
            idle = 0;
        } else if (++idle >= patience) {
            theta *= 0.5;
            idle = 0;
        }
        const double target = threshold();
        if (best <= target || it + 1 == max_iterations || theta < kMinTheta) break;
        if (Clock::now() >= limits_.deadline) break;
        if (limits_.cancel && limits_.cancel->load(std::memory_order_relaxed)) break;

        // Projected subgradient step on lambda: d/dlambda_r = w_r sigma_r (Y_r - y*_r).
        for (auto r : touched_) lp_coverage_[r] = 0.0;
        for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
            for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i) {
                const double x = lp_.item_x(i);
                if (x <= 0.0) continue;
                const auto u = lp_.item_candidate(i);
                for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
                    const double t = entry_room_[k];
                    const auto r = p_.indices[k];
                    if (t > 0.0) lp_coverage_[r] += x * t;
                }
            }
        }
        double norm2 = 0.0;
        for (auto r : touched_) {
            const ResidualUnit& ru = unit_[r];
            double d = 0.0;
            if (ru.has_multiplier()) {
                d = ru.weight * ru.slope * (lp_coverage_[r] - ru.peak(lambda_[r])) + kDeflection * direction_[r];
                if ((lambda_[r] >= 1.0 && d < 0.0) || (lambda_[r] <= ru.min_lambda() && d > 0.0)) d = 0.0;
            }
            direction_[r] = d;
            norm2 += d * d;
        }
        if (!(norm2 > 0.0)) break;
        const double step = theta * (ub - target) / norm2;
        for (auto r : touched_) {
            const double d = direction_[r];
            if (d != 0.0) lambda_[r] = std::clamp(lambda_[r] - step * d, unit_[r].min_lambda(), 1.0);
        }
    }
    if (best_iteration != last_iteration) {
        // Reload the LP of the best multipliers: fixing and branching use its duals.
        for (std::size_t j = 0; j < touched_.size(); ++j) lambda_[touched_[j]] = saved_lambda_[j];
        best = std::min(best, evaluate_bound(capacity));
    }
    return best;
}

double BranchAndBound::integral_knapsack_bound() {
    // Exact multiple-choice knapsack over the node's candidates by dynamic programming on
    // the capacity (integer costs only). It removes the LP's fractional use of the budget,
    // which is what keeps bounds just above the incumbent near the bottom of the tree:
    //  * with the Lagrangian profits it bounds the node like the LP does, only tighter;
    //  * with the exact marginal gains F(u | S) it bounds the node by submodularity, and its
    //    argmax T is a store S + T whose value, when it reaches that bound, solves the node.
    if (!integral_costs_) return std::numeric_limits<double>::infinity();
    const double room = std::floor(limit_ - cost_ + 1e-9);
    if (!(room >= 0.0)) return std::numeric_limits<double>::infinity();
    std::size_t items = 0;
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) items += lp_.item_end(lg) - lp_.item_begin(lg);
    if (static_cast<double>(items) * (room + 1.0) > kMaxKnapsackWork) return std::numeric_limits<double>::infinity();
    const auto capacity = static_cast<std::size_t>(room);
    const std::size_t width = capacity + 1;

    // Lagrangian profits.
    knapsack_.assign(width, 0.0);
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        for (std::size_t x = width; x-- > 0;) {
            double best = knapsack_[x];
            for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i) {
                const auto c = static_cast<std::size_t>(lp_.item_cost(i));
                const double p = lp_.item_profit(i);
                if (c <= x && p > 0.0) best = std::max(best, knapsack_[x - c] + p);
            }
            knapsack_[x] = best;
        }
    }
    const double lagrangian = value_ + node_alpha_ + knapsack_[capacity];

    // Exact marginal gains, remembering each group's choice to rebuild the argmax.
    gains_.resize(items);
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i) {
            const auto u = lp_.item_candidate(i);
            double g = 0.0;
            for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k)
                if (entry_room_[k] > 0.0) g += entry_gain_[k];
            gains_[i] = g;
        }
    }
    knapsack_.assign(width, 0.0);
    choice_.assign(lp_.num_groups() * width, -1);
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        for (std::size_t x = width; x-- > 0;) {
            double best = knapsack_[x];
            std::int64_t pick = -1;
            for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i) {
                const auto c = static_cast<std::size_t>(lp_.item_cost(i));
                if (c <= x && knapsack_[x - c] + gains_[i] > best) {
                    best = knapsack_[x - c] + gains_[i];
                    pick = static_cast<std::int64_t>(i);
                }
            }
            knapsack_[x] = best;
            choice_[lg * width + x] = pick;
        }
    }
    const double additive = value_ + knapsack_[capacity];

    // Rebuild T (groups in reverse order) and evaluate S + T exactly.
    const std::size_t mark = coverage_log_.size();
    double value = value_;
    std::size_t x = capacity;
    picked_.clear();
    for (std::size_t lg = lp_.num_groups(); lg-- > 0;) {
        const auto i = choice_[lg * width + x];
        if (i < 0) continue;
        const auto u = lp_.item_candidate(static_cast<std::size_t>(i));
        picked_.push_back(u);
        x -= static_cast<std::size_t>(lp_.item_cost(static_cast<std::size_t>(i)));
        for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
            const auto r = p_.indices[k];
            const double before = z_[r];
            coverage_log_.emplace_back(r, before);
            z_[r] = before + p_.values[k];
            value += p_.unit_value(r, z_[r]) - p_.unit_value(r, before);
        }
    }
    while (coverage_log_.size() > mark) {
        z_[coverage_log_.back().first] = coverage_log_.back().second;
        coverage_log_.pop_back();
    }
    if (value > incumbent_value_) {
        picked_.insert(picked_.begin(), store_.begin(), store_.end());
        set_incumbent(picked_, value);
    }
    return std::min(lagrangian, additive);
}

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
        for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
            const auto r = p_.indices[k];
            const double before = z_[r];
            coverage_log_.emplace_back(r, before);
            z_[r] = before + p_.values[k];
            value += p_.unit_value(r, z_[r]) - p_.unit_value(r, before);
        }
    }
    while (coverage_log_.size() > mark) {
        z_[coverage_log_.back().first] = coverage_log_.back().second;
        coverage_log_.pop_back();
    }
    return value;
}

void BranchAndBound::try_lp_rounding() {
    const double value = round_lp();
    if (value > incumbent_value_) set_incumbent(picked_, value);
}

std::size_t BranchAndBound::fix_by_reduced_cost() {
    // Any completion holding u is worth at most node_dual + rc_u (LP duality): if that does
    // not beat the incumbent, u is out for the whole subtree.
    const double cut = threshold();
    std::size_t fixed = 0;
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i) {
            const double b = node_dual_ + lp_.reduced_cost(i, lg);
            if (b <= cut) {
                pruned_bound_ = std::max(pruned_bound_, b);
                remove_candidate(lp_.item_candidate(i));
                ++fixed;
            }
        }
    }
    return fixed;
}

void BranchAndBound::branch(double bound) {
    const double cut = threshold();
    // A group the bound cannot do without (UB - pi_G <= cut) must be used: branch there
    // first, on the one with the fewest candidates left (a single one is a forced move).
    // Otherwise branch on the group the bound leans on most (largest pi_G).
    std::size_t branch_lg = 0;
    double branch_price = -1.0;
    std::size_t forced_size = std::numeric_limits<std::size_t>::max();
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        const double pi = lp_.group_price(lg);
        const std::size_t size = lp_.item_end(lg) - lp_.item_begin(lg);
        if (node_dual_ - pi <= cut) {
            if (size < forced_size || (size == forced_size && pi > branch_price)) {
                forced_size = size;
                branch_price = pi;
                branch_lg = lg;
            }
        } else if (forced_size == std::numeric_limits<std::size_t>::max() && pi > branch_price) {
            branch_price = pi;
            branch_lg = lg;
        }
    }
    const auto group = p_.group_of[lp_.item_candidate(lp_.item_begin(branch_lg))];
    const std::size_t children_begin = children_.size();
    for (std::size_t i = lp_.item_begin(branch_lg); i < lp_.item_end(branch_lg); ++i) {
        if (!available_.contains(lp_.item_candidate(i))) continue;
        const double b = std::min(bound, node_dual_ + lp_.reduced_cost(i, branch_lg));
        if (b > cut) children_.push_back(Child{lp_.item_candidate(i), b});
        else pruned_bound_ = std::max(pruned_bound_, b);
    }
    const double skip = std::min(bound, node_dual_ - branch_price);
    if (skip > cut) children_.push_back(Child{-1, skip});
    else pruned_bound_ = std::max(pruned_bound_, skip);
    if (children_.size() == children_begin) return;
    std::stable_sort(children_.begin() + static_cast<std::ptrdiff_t>(children_begin), children_.end(),
                     [](const Child& a, const Child& b) { return a.bound > b.bound; });
    levels_.push_back(Level{group, children_begin, children_.size(), children_begin, removal_log_.size(),
                            coverage_log_.size(), store_.size(), value_, cost_});
}

SearchOutcome BranchAndBound::run() {
    auto process = [this](double inherited, int iterations, int fixing_rounds) {
        ++nodes_;
        update_incumbent();
        double ub = std::min(inherited, bound_node(iterations));
        if (nodes_ == 1) root_bound_ = std::max(ub, value_);
        if (ub > threshold()) ub = std::min(ub, integral_knapsack_bound());
        for (int round = 0;; ++round) {
            if (open_groups_.size() == 0) return; // leaf: S itself was offered above
            if (ub <= threshold()) {
                pruned_bound_ = std::max(pruned_bound_, ub);
                return;
            }
            if (round == 0) try_lp_rounding();
            // Fixing shrinks the node's problem, and the bound of the smaller problem is
            // often tighter (it loses the fractional mixes that used the fixed candidates):
            // bound again while that keeps removing candidates.
            if (fix_by_reduced_cost() == 0 || round + 1 >= fixing_rounds) break;
            ub = std::min(ub, bound_node(iterations));
        }
        branch(ub);
    };

    process(std::numeric_limits<double>::infinity(), limits_.root_iterations, limits_.root_fixing_rounds);
    if (polisher_ && !root_rounded_.candidates.empty()) {
        const Store better = polisher_->improve(root_rounded_);
        if (better.value > incumbent_value_) set_incumbent(better.candidates, better.value);
    }
    while (!levels_.empty()) {
        polish_incumbent();
        restore(levels_.back());
        Level& level = levels_.back();
        while (level.next < level.children_end && children_[level.next].bound <= threshold()) {
            pruned_bound_ = std::max(pruned_bound_, children_[level.next].bound);
            ++level.next;
        }
        if (level.next == level.children_end) {
            children_.resize(level.children_begin);
            levels_.pop_back();
            continue;
        }
        if (should_stop()) {
            stopped_ = true;
            break;
        }
        const Child child = children_[level.next++];
        if (child.candidate < 0) {
            dominators_.clear();
            for (auto m = p_.group_ptr[level.group]; m < p_.group_ptr[level.group + 1]; ++m)
                if (available_.contains(p_.group_members[m])) dominators_.push_back(p_.group_members[m]);
        }
        close_group(level.group);
        if (child.candidate >= 0) include(child.candidate);
        else remove_dominated();
        process(child.bound, limits_.node_iterations, limits_.node_fixing_rounds);
    }

    SearchOutcome out;
    out.nodes = nodes_;
    out.store = incumbent_;
    std::sort(out.store.begin(), out.store.end());
    out.value = incumbent_value_;
    double upper = std::max(pruned_bound_, incumbent_value_);
    if (stopped_) {
        out.status = status_;
        for (const auto& level : levels_)
            for (std::size_t c = level.next; c < level.children_end; ++c) upper = std::max(upper, children_[c].bound);
    } else {
        out.status = SolveStatus::Optimal;
    }
    out.upper_bound = upper;
    out.root_bound = std::max(root_bound_, upper);
    return out;
}

} // namespace memaudit
