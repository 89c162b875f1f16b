// The node bound of the branch-and-bound (see bounds.hpp for its derivation):
//
//     UB(lambda, nu) = F(S) + sum_r w_r [ s_r alpha_r(lambda_r) + sum_k nu_k c_k(S) ]
//                      + LP_MCK( p_u = sum_r w_r [ s_r min(lambda_r sigma_r t_ur, g_r(t_ur)) + sum_k nu_k pi_ku ] ),
//
// s_r = 1 - sum of the unit's cut weights nu_k (root_cuts.cpp); every (lambda, nu) with
// lambda_r in [0, 1], nu_k >= 0, sum_k nu_k <= 1 gives a valid bound, and the minimum over
// them is the LP relaxation of the node's MILP with the cuts added (Lagrangian duality). It is
// approached by projected subgradient steps on (lambda, nu):
//     dUB/dlambda_r = s_r w_r sigma_r (Y_r - peak_r(lambda_r)),  Y_r = sum_u t_ur x_u,
//     dUB/dnu_k     = w_r (c_k(S) + sum_u pi_ku x_u - line_r(x)),
// x the knapsack LP's solution, with Polyak steps theta (UB - LB) / |d|^2 towards the
// incumbent LB (Held, Wolfe and Crowder 1974) and deflection d = g + 0.5 d_prev (Camerini,
// Fratta and Maffioli 1975). At the root of large packages, exact coordinate steps on the
// cap1 multipliers (bisection on the slope of the piecewise-linear dual in one lambda_r)
// alternate with short subgradient runs: subgradients stall just above the dual optimum on
// degenerate packages.
#include "memaudit/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "search_tuning.hpp"

namespace memaudit {

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
    // hundreds of subgradient steps. n / 4 steps from kRootRampCandidates on; below, a ramp
    // in n^2 that meets it there (MEMAUDIT-Small, ~40 candidates, gets a handful).
    if (max_iterations <= 0) max_iterations = automatic_root_iterations();
    if (root && corners_pending_) bound_root_corners(capacity);
    // The full root rounds its averaged LP while its first steps run (kAverageRoundSteps) and
    // after them, so that the rest of the root may stop as soon as its bound meets the better
    // incumbent; its steps keep aiming at the incumbent they started from (a target close to
    // the bound shrinks Polyak steps until the bound stalls above it).
    const bool early = root && !quick_root_ && cuts_enabled_ && limits_.core_search;
    if (early) step_aim_ = threshold();
    round_while_stepping_ = early && polisher_ != nullptr && !averages_probed_;
    averages_probed_ = averages_probed_ || early;
    double best = subgradient(capacity, max_iterations, root ? kRootTheta : kNodeTheta, root ? kRootPatience : kNodePatience);
    round_while_stepping_ = false;
    if (early && above_threshold(best)) round_average(kRootPolishWork);
    // At the root, alternate exact coordinate steps and short subgradient runs: each gets
    // the other out of the spots where it stalls.
    // Small packages branch more cheaply than they refine multipliers.
    // (Coordinate descent prices the lambda lines alone: with cuts in play it is left out.)
    const bool refine = root && root_size() >= kDescentMinCandidates && cuts_.empty();
    // A quick stage of the root (search.cpp) gets a short version of it.
    const int descent_rounds = quick_root_ ? kQuickDescentRounds : kDescentRounds;
    const int polish = quick_root_ ? kQuickPolishIterations : kPolishIterations;
    // Entries the descent may scan: on dense packages one sweep costs many subgradient steps.
    const double step_work = static_cast<double>(p_.indices.size()) + static_cast<double>(p_.num_candidates);
    double descent_work = quick_root_ ? kQuickDescentShare * quick_root_budget_ * step_work
                                      : std::numeric_limits<double>::infinity();
    for (int round = 0; refine && round < descent_rounds && above_threshold(best); ++round) {
        const double before = best;
        best = std::min(best, coordinate_descent(capacity, best, &descent_work));
        if (above_threshold(best)) best = std::min(best, subgradient(capacity, polish, kPolishTheta, kRootPatience));
        if (!(best < before - kMinDescentGain * std::max(1.0, std::abs(before)))) break;
    }
    if (root && !quick_root_ && cuts_enabled_ && above_threshold(best)) best = std::min(best, cut_rounds(capacity, best));
    // The full root's averaged LP, rounded to a store (root_heuristics.cpp), before the
    // root's reduced-cost fixing reads the incumbent (not in a core search: its root is short).
    if (root && !quick_root_ && cuts_enabled_ && above_threshold(best) && limits_.core_search) round_average(kRootPolishWork);
    step_aim_ = std::numeric_limits<double>::infinity();
    // The floor may be the lower of the two, while the LP loaded stays the last step's: the
    // fixing and branching that read it are valid for any LP evaluated, as each is whole.
    return std::min(best, bound_floor_);
}

void BranchAndBound::bound_root_corners(double capacity) {
    // Every lambda in [0, 1] bounds. Two corners bound the whole problem at the price of one
    // LP each: lambda = 0 (every unit paid up front: F(S) + sum_r w_r g_r(rho_r), the value
    // of covering everything reachable) and the incumbent's pattern (units it saturates paid
    // up front, the others priced in full). Where the optimum covers all it can, they meet it
    // at once, while the subgradient from lambda = 1 needs hundreds of steps. lambda = 0 is
    // also a point the projected subgradient never leaves (its LP takes nothing, so every
    // step points out of the box): the corners give a bound, not a start, and the steps keep
    // their own start.
    corners_pending_ = false;
    std::vector<double> cover(static_cast<std::size_t>(p_.num_units), 0.0);
    for (auto u : incumbent_)
        for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) cover[p_.indices[k]] += p_.values[k];
    const std::vector<double> given = lambda_;
    for (int corner = 0; corner < 2; ++corner) {
        for (auto r : touched_) {
            const ResidualUnit& ru = unit_[r];
            if (!ru.has_multiplier()) continue;
            const bool paid = corner == 0 || z_[r] + cover[r] >= p_.cap[r];
            lambda_[r] = paid ? ru.min_lambda() : 1.0;
        }
        bound_floor_ = std::min(bound_floor_, evaluate_bound(capacity));
    }
    lambda_ = given;
    root_bound_ = std::min(root_bound_, std::max(bound_floor_, value_));
}

int BranchAndBound::automatic_root_iterations() const {
    const auto n = static_cast<double>(available_.size());
    const double ramp = static_cast<double>(kRootRampCandidates);
    const double steps = n >= ramp ? n / 4.0 : n * n / (4.0 * ramp);
    return static_cast<int>(std::clamp(steps, static_cast<double>(kMinRootIterations), static_cast<double>(kAutoRootIterations)));
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
    const bool small = (root ? root_size() : available_.size()) < kDescentMinCandidates;
    int best_iteration = -1, last_iteration = -1, idle = 0;
    for (int it = 0; it < max_iterations; ++it) {
        const double ub = evaluate_bound(capacity);
        last_iteration = it;
        if (root) {
            // Every step's bound is valid for the whole problem: the log shows the best so far.
            root_bound_ = std::min(root_bound_, std::max(ub, value_));
            report_progress(false);
        }
        if (average) {
            for (std::size_t i = 0; i < available_.size(); ++i) xbar_[available_.at(i)] *= 1.0 - kAverageWeight;
            for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg)
                for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i)
                    if (lp_.item_x(i) > 0.0) xbar_[lp_.item_candidate(i)] += kAverageWeight * lp_.item_x(i);
        }
        if (root && polisher_ && (small || it % kRoundEvery == 0)) {
            // Lagrangian heuristic: each multiplier vector rounds to a different store (on
            // large roots every kRoundEvery-th: a rounding costs a sixth of a step there, and
            // neighbouring steps round to much the same store).
            const double rounded = round_lp();
            if (rounded > root_rounded_.value) {
                root_rounded_.candidates = picked_;
                root_rounded_.value = rounded;
            }
        }
        if (round_while_stepping_ && above_threshold(std::min(best, ub)) &&
            std::find(std::begin(kAverageRoundSteps), std::end(kAverageRoundSteps), it + 1) != std::end(kAverageRoundSteps))
            round_average(kProbePolishWork);
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
        if (!above_threshold(best) || it + 1 == max_iterations || theta < kMinTheta) break;
        if (small && it > 0 && it % kProgressWindow == 0) {
            // Converged enough for a small package (branching is cheap there): a window of
            // steps without a relative gain of kMinProgress.
            if (!(best < best_at_check - kMinProgress * std::max(1.0, std::abs(best)))) break;
            best_at_check = best;
        }
        if (halted()) break;

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
        const double step = theta * (ub - std::min(target, step_aim_)) / norm2;
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

double BranchAndBound::coordinate_descent(double capacity, double best, double* work_left) {
    // Subgradient steps stall a little above the dual optimum on large degenerate packages,
    // and with a lattice objective that little can decide a whole search. Here each cap1
    // multiplier is set exactly to its best value with the others and the budget price mu
    // fixed: with the budget priced too, the bound is
    //     F(S) + sum_r w_r (1 - lambda_r) rho_r + mu R + sum_G max(0, max_u p_u - mu c_u),
    // convex and piecewise linear in one lambda_r, minimised by bisection on its slope; mu is
    // then re-optimised by solving the knapsack LP. Sweeps stop once they no longer gain.
    const auto n = static_cast<std::size_t>(p_.num_candidates);
    linear_profit_.resize(n);
    // p_u without the caps' clipping: the profits the coordinate steps move linearly.
    auto refresh_linear_profits = [this]() {
        for (std::size_t i = 0; i < available_.size(); ++i) {
            const auto u = available_.at(i);
            double profit = 0.0;
            for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k)
                if (entry_room_[k] > 0.0) profit += coef_[p_.indices[k]] * entry_room_[k];
            linear_profit_[u] = profit;
        }
    };
    refresh_linear_profits();
    if (group_stamp_.size() != static_cast<std::size_t>(p_.num_groups)) group_stamp_.assign(static_cast<std::size_t>(p_.num_groups), 0);
    saved_lambda_.resize(touched_.size());
    for (std::size_t j = 0; j < touched_.size(); ++j) saved_lambda_[j] = lambda_[touched_[j]];
    double best_seen = best;
    double work = 0.0;
    const double max_work = *work_left;
    for (int sweep = 0; sweep < kDescentSweeps && work <= max_work; ++sweep) {
        if (closed_from_outside() || halted()) break;
        const double mu = lp_.price();
        for (auto r : touched_) {
            if (work > max_work) break; // each unit's step is exact on its own: stopping anywhere is sound
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
                work += static_cast<double>(touched_groups_.size());
                for (auto g : touched_groups_) {
                    double top = 0.0, top_slope = 0.0;
                    for (auto m = p_.group_ptr[g]; m < p_.group_ptr[g + 1]; ++m) {
                        const auto u = p_.group_members[m];
                        if (!available_.contains(u)) continue;
                        double t = 0.0;
                        work += static_cast<double>(p_.indptr[u + 1] - p_.indptr[u]);
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
        if (!above_threshold(best_seen)) break;
        // The LP was re-solved with exact profits (mu moved): refresh the linear profits.
        refresh_linear_profits();
    }
    *work_left -= work;
    // Leave the multipliers (and the loaded LP) at the best point seen.
    for (std::size_t j = 0; j < touched_.size(); ++j) lambda_[touched_[j]] = saved_lambda_[j];
    const double last = evaluate_bound(capacity);
    return std::min(best_seen, last);
}
} // namespace memaudit
