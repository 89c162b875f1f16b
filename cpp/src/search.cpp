#include "memaudit/search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace memaudit {

namespace {

// Core heuristic: smallest core, and nodes per core search.
constexpr std::size_t kCoreMinSize = 48;
constexpr std::int64_t kCoreNodes = 4'000;
constexpr int kRootRestarts = 3;
constexpr int kRefixIterations = 30;
// Local search after an open root may scan the non-zeros this many times.
constexpr std::int64_t kRootPolishWork = 400;
// Coordinate-descent sweeps over the cap1 multipliers at the root.
constexpr int kDescentSweeps = 30;
constexpr int kDescentRounds = 6;
constexpr std::size_t kDescentMinCandidates = 400;
constexpr double kMinDescentGain = 1e-6; // relative gain that earns another round
constexpr int kPolishIterations = 100;
constexpr double kPolishTheta = 0.25;
// Largest items * capacity a node spends on the integral knapsack bound.
// At the root it runs when it costs about as much as the root's subgradient steps (it is
// computed once); at other nodes when it costs about as much as a few LP evaluations.
constexpr double kRootKnapsackWork = 5e7;
constexpr double kRootKnapsackPerItem = 2'000;
constexpr double kNodeKnapsackWork = 8'000;
constexpr double kNodeKnapsackPerItem = 24;
// Choice table entries (groups * capacity) kept to rebuild a DP's argmax (32 MB of int32).
constexpr double kMaxChoiceEntries = 8e6;

// Step-size rule (Held, Wolfe and Crowder 1974): Polyak steps theta (UB - LB) / |d|^2
// towards the incumbent LB, theta halved after `patience` iterations without progress.
constexpr double kRootTheta = 2.0;
constexpr int kRootPatience = 15;
constexpr int kMinRootIterations = 40;
constexpr int kAutoRootIterations = 300;
constexpr double kNodeTheta = 1.0;
constexpr int kNodePatience = 2;
constexpr double kMinTheta = 1e-4;
constexpr int kProgressWindow = 30;
constexpr double kMinProgress = 1e-7;
// Deflection (Camerini, Fratta and Maffioli 1975): d = g + kDeflection d_prev damps the
// zig-zag of plain subgradients on a piecewise-linear dual.
constexpr double kDeflection = 0.5;
// Relax-and-cut at the root: weight of the newest LP solution in the average that cut
// separation reads, subgradient steps after each round, and limits on the pool.
constexpr double kAverageWeight = 0.1;
constexpr int kCutIterations = 150;
constexpr double kCutTheta = 1.0;
constexpr std::size_t kMaxCutsPerUnit = 8;
constexpr double kMinCutViolation = 1e-4;

} // namespace

BranchAndBound::BranchAndBound(const ReducedProblem& problem, double budget, std::vector<double>& lambda,
                               const SearchLimits& limits, const std::vector<char>* allowed)
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
        if (p_.cost[u] > limit_ || (allowed && !(*allowed)[u])) remove_candidate(u);
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
    unit_scale_.assign(units, 1.0);
    if (limits_.cut_rounds > 0)
        for (std::int32_t r = 0; r < p_.num_units && !cuts_enabled_; ++r) cuts_enabled_ = coverage_cut_unit(p_, r);
    if (cuts_enabled_) {
        unit_cuts_.resize(units);
        candidate_cuts_.resize(n);
        xbar_.assign(n, 0.0);
    }
    started_ = Clock::now();
    next_poll_ = started_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.poll_interval));
    next_progress_ = started_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.progress_interval));
}

double BranchAndBound::current_upper_bound() const {
    if (!root_done_) return std::max(root_bound_, incumbent_value_);
    double upper = std::max(pruned_bound_, incumbent_value_);
    for (const auto& level : levels_)
        for (std::size_t c = level.next; c < level.children_end; ++c) upper = std::max(upper, children_[c].bound);
    return upper;
}

void BranchAndBound::report_progress(bool force) {
    if (!limits_.progress) return;
    const auto now = Clock::now();
    if (!force && now < next_progress_) return;
    next_progress_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.progress_interval));
    SearchProgress line;
    line.budget = budget_;
    line.nodes = nodes_;
    line.incumbent = incumbent_value_;
    line.upper_bound = current_upper_bound();
    if (!std::isfinite(line.upper_bound)) line.upper_bound = std::numeric_limits<double>::infinity();
    line.gap = line.upper_bound > 0.0 && std::isfinite(line.upper_bound)
                   ? std::max(0.0, (line.upper_bound - line.incumbent) / line.upper_bound)
                   : (line.upper_bound > 0.0 ? 1.0 : 0.0);
    line.seconds = std::chrono::duration<double>(now - started_).count();
    line.root_done = root_done_;
    if (limits_.progress(line)) stop_requested_ = true;
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
    report_progress(false);
    const auto now = Clock::now();
    if (now >= limits_.deadline || stop_requested_) {
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
        coef_[r] = ru.weight * lambda_[r] * ru.slope * unit_scale_[r];
        alpha += ru.weight * ru.intercept(lambda_[r]) * unit_scale_[r];
    }
    const bool with_cuts = !cuts_.empty();
    if (with_cuts)
        for (std::size_t k = 0; k < cuts_.size(); ++k) {
            const auto r = cuts_[k].unit;
            if (nu_[k] > 0.0 && cut_active(r)) alpha += unit_[r].weight * nu_[k] * cut_intercept_[k];
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
                const auto r = p_.indices[k];
                if (t > 0.0) profit += std::min(coef_[r] * t, unit_scale_[r] * entry_gain_[k]);
            }
            if (with_cuts)
                for (const auto& [k, pi] : candidate_cuts_[u]) {
                    const auto r = cuts_[k].unit;
                    if (nu_[k] > 0.0 && cut_active(r)) profit += unit_[r].weight * nu_[k] * pi;
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
    if (!cuts_.empty()) prepare_cuts();

    const bool root = at_root_;
    // Root effort grows with the package: on small ones a few more nodes cost less than
    // hundreds of subgradient steps.
    if (max_iterations <= 0)
        max_iterations = std::min<int>(kAutoRootIterations, std::max<int>(kMinRootIterations, static_cast<int>(available_.size() / 4)));
    double best = subgradient(capacity, max_iterations, root ? kRootTheta : kNodeTheta, root ? kRootPatience : kNodePatience);
    // At the root, alternate exact coordinate steps and short subgradient runs: each gets
    // the other out of the spots where it stalls.
    // Small packages branch more cheaply than they refine multipliers.
    // (Coordinate descent prices the lambda lines alone: with cuts in play it is left out.)
    const bool refine = root && available_.size() >= kDescentMinCandidates && cuts_.empty();
    for (int round = 0; refine && round < kDescentRounds && best > threshold(); ++round) {
        const double before = best;
        best = std::min(best, coordinate_descent(capacity, best));
        if (best > threshold()) best = std::min(best, subgradient(capacity, kPolishIterations, kPolishTheta, kRootPatience));
        if (!(best < before - kMinDescentGain * std::max(1.0, std::abs(before)))) break;
    }
    if (root && cuts_enabled_ && best > threshold()) best = std::min(best, cut_rounds(capacity, best));
    return best;
}

double BranchAndBound::subgradient(double capacity, int max_iterations, double theta, int patience) {
    saved_lambda_.resize(touched_.size());
    for (std::size_t j = 0; j < touched_.size(); ++j) saved_lambda_[j] = lambda_[touched_[j]];
    for (auto r : touched_) direction_[r] = 0.0;
    const bool with_cuts = !cuts_.empty();
    if (with_cuts) {
        saved_nu_ = nu_;
        std::fill(nu_direction_.begin(), nu_direction_.end(), 0.0);
    }
    const bool root = at_root_;
    // The averaged LP solution that cut separation reads (Barahona and Anbil's volume
    // algorithm averages the same way to recover a primal LP solution).
    const bool average = root && cuts_enabled_;
    double best = std::numeric_limits<double>::infinity();
    double best_at_check = best;
    const bool small = available_.size() < kDescentMinCandidates;
    int best_iteration = -1, last_iteration = -1, idle = 0;
    for (int it = 0; it < max_iterations; ++it) {
        const double ub = evaluate_bound(capacity);
        last_iteration = it;
        if (average) {
            for (std::size_t i = 0; i < available_.size(); ++i) xbar_[available_.at(i)] *= 1.0 - kAverageWeight;
            for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg)
                for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i)
                    if (lp_.item_x(i) > 0.0) xbar_[lp_.item_candidate(i)] += kAverageWeight * lp_.item_x(i);
        }
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
            if (with_cuts) saved_nu_ = nu_;
            idle = 0;
        } else if (++idle >= patience) {
            theta *= 0.5;
            idle = 0;
        }
        const double target = threshold();
        if (best <= target || it + 1 == max_iterations || theta < kMinTheta) break;
        if (small && it > 0 && it % kProgressWindow == 0) {
            // Converged enough for a small package (branching is cheap there): a window of
            // steps without a relative gain of kMinProgress.
            if (!(best < best_at_check - kMinProgress * std::max(1.0, std::abs(best)))) break;
            best_at_check = best;
        }
        if (Clock::now() >= limits_.deadline) break;
        if (limits_.cancel && limits_.cancel->load(std::memory_order_relaxed)) break;

        // Projected subgradient step on lambda: d/dlambda_r = w_r sigma_r (Y_r - y*_r).
        for (auto r : touched_) lp_coverage_[r] = 0.0;
        if (with_cuts)
            for (std::size_t k = 0; k < cuts_.size(); ++k) cut_value_[k] = cut_intercept_[k];
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
                if (with_cuts)
                    for (const auto& [k, pi] : candidate_cuts_[u]) cut_value_[k] += pi * x;
            }
        }
        double norm2 = 0.0;
        for (auto r : touched_) {
            const ResidualUnit& ru = unit_[r];
            double d = 0.0;
            if (ru.has_multiplier()) {
                d = unit_scale_[r] * ru.weight * ru.slope * (lp_coverage_[r] - ru.peak(lambda_[r])) +
                    kDeflection * direction_[r];
                if ((lambda_[r] >= 1.0 && d < 0.0) || (lambda_[r] <= ru.min_lambda() && d > 0.0)) d = 0.0;
            }
            direction_[r] = d;
            norm2 += d * d;
        }
        if (with_cuts) {
            // d/dnu_k = w_r (cut_k(x) - line_r(x)): weight moves to whichever is lower at x.
            for (std::size_t k = 0; k < cuts_.size(); ++k) {
                const auto r = cuts_[k].unit;
                double d = 0.0;
                if (cut_active(r)) {
                    const ResidualUnit& ru = unit_[r];
                    const double line = ru.intercept(lambda_[r]) + lambda_[r] * ru.slope * lp_coverage_[r];
                    d = ru.weight * (cut_value_[k] - line) + kDeflection * nu_direction_[k];
                    if (nu_[k] <= 0.0 && d > 0.0) d = 0.0;
                }
                nu_direction_[k] = d;
                norm2 += d * d;
            }
        }
        if (!(norm2 > 0.0)) break;
        const double step = theta * (ub - target) / norm2;
        for (auto r : touched_) {
            const double d = direction_[r];
            if (d != 0.0) lambda_[r] = std::clamp(lambda_[r] - step * d, unit_[r].min_lambda(), 1.0);
        }
        if (with_cuts) {
            for (std::size_t k = 0; k < cuts_.size(); ++k)
                if (nu_direction_[k] != 0.0) nu_[k] = std::clamp(nu_[k] - step * nu_direction_[k], 0.0, 1.0);
            for (auto r : touched_)
                if (!unit_cuts_[r].empty()) refresh_unit_scale(r);
        }
    }
    if (best_iteration != last_iteration) {
        // Reload the LP of the best multipliers: fixing and branching use its duals.
        for (std::size_t j = 0; j < touched_.size(); ++j) lambda_[touched_[j]] = saved_lambda_[j];
        if (with_cuts) {
            nu_ = saved_nu_;
            for (auto r : touched_)
                if (!unit_cuts_[r].empty()) refresh_unit_scale(r);
        }
        best = std::min(best, evaluate_bound(capacity));
    }
    return best;
}

void BranchAndBound::refresh_unit_scale(std::int32_t unit) {
    // The unit's weights stay on the simplex: the cuts' share is scaled down past 1.
    double total = 0.0;
    for (auto k : unit_cuts_[unit]) total += nu_[k];
    if (total > 1.0) {
        for (auto k : unit_cuts_[unit]) nu_[k] /= total;
        total = 1.0;
    }
    unit_scale_[unit] = std::max(0.0, 1.0 - total);
}

void BranchAndBound::prepare_cuts() {
    // cut k: h_r(z_r(S) + z_r(T)) <= intercept + pi(S) + pi(T), so the residual gain of T is
    // at most intercept + pi(S) - h_r(z_r(S)) + pi(T).
    for (std::size_t k = 0; k < cuts_.size(); ++k) {
        const auto r = cuts_[k].unit;
        cut_intercept_[k] = cuts_[k].intercept - (*p_.saturation[r])(z_[r]);
    }
    for (auto u : store_)
        for (const auto& [k, pi] : candidate_cuts_[u]) cut_intercept_[k] += pi;
    for (auto& c : cut_intercept_) c = std::max(c, 0.0);
}

std::size_t BranchAndBound::add_cuts() {
    std::size_t added = 0;
    CoverageCut cut;
    for (auto r : touched_) {
        if (!coverage_cut_unit(p_, r) || unit_cuts_[r].size() >= kMaxCutsPerUnit) continue;
        if (!separate_coverage_cut(p_, r, xbar_, kMinCutViolation, &cut)) continue;
        bool seen = false;
        for (auto k : unit_cuts_[r]) seen = seen || (cuts_[k].lambda == cut.lambda && cuts_[k].group == cut.group);
        if (seen) continue;
        const auto id = static_cast<std::int32_t>(cuts_.size());
        for (std::size_t j = 0; j < cut.candidates.size(); ++j)
            candidate_cuts_[cut.candidates[j]].emplace_back(id, cut.coefficients[j]);
        unit_cuts_[r].push_back(id);
        cuts_.push_back(std::move(cut));
        cut = CoverageCut();
        ++added;
    }
    nu_.resize(cuts_.size(), 0.0);
    nu_direction_.resize(cuts_.size(), 0.0);
    cut_intercept_.resize(cuts_.size(), 0.0);
    cut_value_.resize(cuts_.size(), 0.0);
    return added;
}

double BranchAndBound::cut_rounds(double capacity, double best) {
    for (int round = 0; round < limits_.cut_rounds && best > threshold(); ++round) {
        if (Clock::now() >= limits_.deadline) break;
        if (add_cuts() == 0) break;
        prepare_cuts();
        const double before = best;
        best = std::min(best, subgradient(capacity, kCutIterations, kCutTheta, kRootPatience));
        if (!(best < before - kMinDescentGain * std::max(1.0, std::abs(before))) && round > 0) break;
    }
    return best;
}

double BranchAndBound::coordinate_descent(double capacity, double best) {
    // Subgradient steps stall a little above the dual optimum on large degenerate packages,
    // and with a lattice objective that little can decide a whole search. Here each cap1
    // multiplier is set exactly to its best value with the others and the budget price mu
    // fixed: with the budget priced too, the bound is
    //     F(S) + sum_r w_r (1 - lambda_r) rho_r + mu R + sum_G max(0, max_u p_u - mu c_u),
    // convex and piecewise linear in one lambda_r, minimised by bisection on its slope; mu is
    // then re-optimised by solving the knapsack LP. Sweeps stop once they no longer gain.
    const auto n = static_cast<std::size_t>(p_.num_candidates);
    linear_profit_.resize(n);
    for (std::size_t i = 0; i < available_.size(); ++i) {
        const auto u = available_.at(i);
        double profit = 0.0;
        for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k)
            if (entry_room_[k] > 0.0) profit += coef_[p_.indices[k]] * entry_room_[k];
        linear_profit_[u] = profit;
    }
    if (group_stamp_.size() != static_cast<std::size_t>(p_.num_groups)) group_stamp_.assign(static_cast<std::size_t>(p_.num_groups), 0);
    saved_lambda_.resize(touched_.size());
    for (std::size_t j = 0; j < touched_.size(); ++j) saved_lambda_[j] = lambda_[touched_[j]];
    double best_seen = best;
    for (int sweep = 0; sweep < kDescentSweeps; ++sweep) {
        if (Clock::now() >= limits_.deadline) break;
        const double mu = lp_.price();
        for (auto r : touched_) {
            const ResidualUnit& ru = unit_[r];
            if (ru.h->kind != SaturationKind::Cap1) continue;
            // Groups holding a candidate that covers r: their terms depend on lambda_r.
            ++scan_stamp_;
            touched_groups_.clear();
            for (auto c = p_.unit_ptr[r]; c < p_.unit_ptr[r + 1]; ++c) {
                const auto v = p_.unit_candidates[c];
                const auto g = p_.group_of[v];
                if (!available_.contains(v) || group_stamp_[g] == scan_stamp_) continue;
                group_stamp_[g] = scan_stamp_;
                touched_groups_.push_back(g);
            }
            if (touched_groups_.empty()) continue;
            const double w_room = ru.weight * ru.room;
            const double slope_unit = ru.weight * ru.slope;
            // d f / d lambda_r at lambda: -w rho + sum over groups of the active line's slope.
            auto slope_at = [&](double lambda) {
                double d = -w_room;
                for (auto g : touched_groups_) {
                    double top = 0.0, top_slope = 0.0;
                    for (auto m = p_.group_ptr[g]; m < p_.group_ptr[g + 1]; ++m) {
                        const auto u = p_.group_members[m];
                        if (!available_.contains(u)) continue;
                        double t = 0.0;
                        for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k)
                            if (p_.indices[k] == r) t = entry_room_[k];
                        const double s = slope_unit * t;
                        const double value = linear_profit_[u] + (lambda - lambda_[r]) * s - mu * p_.cost[u];
                        if (value > top || (value == top && s > top_slope)) {
                            top = value;
                            top_slope = s;
                        }
                    }
                    d += top_slope;
                }
                return d;
            };
            double lo = 0.0, hi = 1.0, target;
            if (slope_at(0.0) >= 0.0) target = 0.0;
            else if (slope_at(1.0) <= 0.0) target = 1.0;
            else {
                for (int step = 0; step < 30; ++step) {
                    const double mid = 0.5 * (lo + hi);
                    (slope_at(mid) < 0.0 ? lo : hi) = mid;
                }
                target = 0.5 * (lo + hi);
            }
            const double delta = target - lambda_[r];
            if (delta == 0.0) continue;
            for (auto c = p_.unit_ptr[r]; c < p_.unit_ptr[r + 1]; ++c) {
                const auto v = p_.unit_candidates[c];
                if (!available_.contains(v)) continue;
                for (std::int64_t k = p_.indptr[v]; k < p_.indptr[v + 1]; ++k)
                    if (p_.indices[k] == r) linear_profit_[v] += delta * slope_unit * entry_room_[k];
            }
            lambda_[r] = target;
        }
        const double ub = evaluate_bound(capacity);
        if (!(ub < best_seen - 1e-12 * std::max(1.0, std::abs(best_seen)))) break;
        best_seen = ub;
        for (std::size_t j = 0; j < touched_.size(); ++j) saved_lambda_[j] = lambda_[touched_[j]];
        if (best_seen <= threshold()) break;
        // The LP was re-solved with exact profits (mu moved): refresh the linear profits.
        for (std::size_t i = 0; i < available_.size(); ++i) {
            const auto u = available_.at(i);
            double profit = 0.0;
            for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k)
                if (entry_room_[k] > 0.0) profit += coef_[p_.indices[k]] * entry_room_[k];
            linear_profit_[u] = profit;
        }
    }
    // Leave the multipliers (and the loaded LP) at the best point seen.
    for (std::size_t j = 0; j < touched_.size(); ++j) lambda_[touched_[j]] = saved_lambda_[j];
    const double last = evaluate_bound(capacity);
    return std::min(best_seen, last);
}

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
    const double allowed = at_root_ ? std::min(kRootKnapsackWork, std::max(kNodeKnapsackWork, kRootKnapsackPerItem * size))
                                    : std::max(kNodeKnapsackWork, kNodeKnapsackPerItem * size);
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
        std::vector<double> sub_lambda = lambda_;
        BranchAndBound sub(p_, budget_, sub_lambda, sub_limits, &allowed);
        sub.set_polisher(polisher_);
        sub.offer(incumbent_);
        const SearchOutcome out = sub.run();
        nodes_ += out.nodes;
        if (out.value > incumbent_value_) set_incumbent(out.store, out.value);
        // A core search that completed proved the best store inside its core; a larger
        // core may still hold a better one, so grow it either way.
        if (out.status == SolveStatus::Interrupted || stop_requested_ || Clock::now() >= limits_.deadline) break;
        k *= 2;
    }
}

SearchOutcome BranchAndBound::run() {
    auto process = [this](double inherited, int iterations, int fixing_rounds) {
        ++nodes_;
        update_incumbent();
        double ub = std::min(inherited, bound_node(iterations));
        if (at_root_) root_bound_ = std::min(root_bound_, std::max(ub, value_));
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
            const std::size_t fixed_now = fix_by_reduced_cost();
            if (fixed_now == 0 || round + 1 >= fixing_rounds) break;
            // The multipliers are warm now: a short run re-tightens the smaller problem.
            ub = std::min(ub, bound_node(iterations > 0 ? std::min(iterations, kRefixIterations) : kRefixIterations));
        }
        branch(ub);
    };

    at_root_ = true;
    process(std::numeric_limits<double>::infinity(), limits_.root_iterations, limits_.root_fixing_rounds);
    at_root_ = false;
    // The next budget of a sweep starts from the root's multipliers, not from wherever the
    // tree search leaves them (deep nodes tune them to their own residual problems).
    const std::vector<double> root_lambda = lambda_;

    if (polisher_ && !levels_.empty()) {
        // The root did not close: local search on the warm start and on the best rounded
        // LP store, with a larger budget than the polish of later incumbents.
        const std::int64_t work = kRootPolishWork * (static_cast<std::int64_t>(p_.indices.size()) + p_.num_candidates);
        Store current;
        current.candidates = incumbent_;
        current.value = incumbent_value_;
        for (const Store* start : {&current, &root_rounded_}) {
            if (start->candidates.empty()) continue;
            const Store better = polisher_->improve(*start, work);
            if (better.value > incumbent_value_) set_incumbent(better.candidates, better.value);
        }
        incumbent_fresh_ = false;
    }
    // Restarts: when the core heuristic improves the incumbent, the root is processed again
    // (nothing below it was explored yet): reduced-cost fixing against the better incumbent
    // removes much more, and the bound of the smaller problem is tighter.
    for (int restart = 0; !levels_.empty() && limits_.core_search && restart < kRootRestarts; ++restart) {
        if (should_stop()) break;
        const double before = incumbent_value_;
        core_search();
        if (!(incumbent_value_ > before) || should_stop()) break;
        levels_.clear();
        children_.clear();
        at_root_ = true;
        process(root_bound_, limits_.root_iterations, limits_.root_fixing_rounds);
        at_root_ = false;
    }
    root_done_ = true;
    std::vector<std::int32_t> open_at_root;
    if (!levels_.empty()) {
        open_at_root.reserve(available_.size());
        for (std::size_t i = 0; i < available_.size(); ++i) open_at_root.push_back(available_.at(i));
        std::sort(open_at_root.begin(), open_at_root.end());
    }
    report_progress(false);
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

    lambda_ = root_lambda;
    SearchOutcome out;
    out.open_candidates = std::move(open_at_root);
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
    out.root_bound = std::isfinite(root_bound_) ? std::max(root_bound_, upper) : upper;
    return out;
}

} // namespace memaudit
