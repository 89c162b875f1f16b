// Coverage cuts: valid inequalities on one capped unit that close the LP gap of the MILP,
// used by the branch-and-bound as extra Lagrangian terms (relax-and-cut).
//
// For a unit r with h_r(z) = min(kappa, z) (cap1; reduce() clips every entry to t_u <= kappa)
// the MILP row y_r <= sum_u t_u x_u, y_r <= kappa is weak when fractions of several
// candidates add up to a full cover. For lambda in (0, 1) and one group G (or none), every
// store X with at most one candidate per group satisfies
//
//     min(kappa, z_r(X)) <= (1 - lambda) kappa + sum_{v in X, v not in G} min(lambda kappa, t_v)
//                                              + sum_{u in X, u in G} max(0, t_u - (1 - lambda) kappa).
//
// Proof. If some v of X outside G has t_v >= lambda kappa, the right side is at least
// (1 - lambda) kappa + lambda kappa = kappa. Otherwise every such v contributes t_v, and the
// one candidate u of X in G (if any) contributes with the intercept max((1 - lambda) kappa,
// t_u) >= t_u, so the right side is at least z_r(X). Either way it bounds min(kappa, z_r(X)).
//
// Without G this is the mixed-integer rounding inequality of the row (Marchand and Wolsey,
// "Aggregation and mixed integer rounding to solve MIPs", Operations Research 49, 2001);
// the group row lets the intercept pay for the one candidate of G (a lifting by the GUB
// constraint). On MEMAUDIT-like packages at 5-20% budgets a few rounds of them take the LP
// bound from about 1% above OPT to OPT or within one lattice step of it.
//
// Separation at a fractional x (the averaged Lagrangian solutions, see search.hpp): for each
// lambda among the breakpoints t_u / kappa and 1 - t_u / kappa of the candidates with
// x_u > 0, the best G is the group whose members gain most from the lifted coefficients;
// the cut returned is the most violated against min(kappa, sum t x), if any.
#pragma once

#include <cstdint>
#include <vector>

#include "memaudit/reduction.hpp"

namespace memaudit {

struct CoverageCut {
    std::int32_t unit = -1;
    double lambda = 0.0;
    std::int32_t group = -1;      // -1: no lifted group
    double intercept = 0.0;       // (1 - lambda) kappa
    double violation = 0.0;       // at the point it was separated at (h units)
    std::vector<std::int32_t> candidates; // every candidate covering the unit with a coefficient > 0
    std::vector<double> coefficients;
};

// Coefficient of a candidate with clipped coverage t (group `in_group` or not).
inline double coverage_cut_coefficient(double t, double kappa, double lambda, bool in_group) {
    if (in_group) return t > (1.0 - lambda) * kappa ? t - (1.0 - lambda) * kappa : 0.0;
    return t < lambda * kappa ? t : lambda * kappa;
}

// The cut of (unit, lambda, group) over all candidates covering the unit.
CoverageCut make_coverage_cut(const ReducedProblem& p, std::int32_t unit, double lambda, std::int32_t group);

// The most violated cut of the family at x (one value per reduced candidate, in [0, 1]), if
// its violation exceeds min_violation (in h units, before the weight). Cap1 units only.
bool separate_coverage_cut(const ReducedProblem& p, std::int32_t unit, const std::vector<double>& x,
                           double min_violation, CoverageCut* cut);

// Whether unit r has the saturation the family is proven for (cap1).
bool coverage_cut_unit(const ReducedProblem& p, std::int32_t unit);

} // namespace memaudit
