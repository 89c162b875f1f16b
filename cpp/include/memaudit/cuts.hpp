// Coverage cuts: valid inequalities on one capped unit that close the LP gap of the MILP,
// used by the branch-and-bound as extra Lagrangian terms (relax-and-cut).
//
// For a unit r with h_r(z) = min(kappa, z) (cap1; reduce() clips every entry to t_u <= kappa)
// the MILP row y_r <= sum_u t_u x_u, y_r <= kappa is weak when fractions of several
// candidates add up to a full cover. For lambda in [0, 1) and one group G (or none), let
// M_G = sum over the groups H != G covering r of max_{v in H} t_v (the most a store collects
// on r outside G) and, for every member u of G (t_u = 0 when u does not cover r),
//
//     d_u = max(t_u - (1 - lambda) kappa,  min(kappa, t_u + M_G) - kappa).
//
// Then every store X with at most one candidate per group satisfies
//
//     min(kappa, z_r(X)) <= (1 - lambda) kappa + sum_{v in X, v not in G} min(lambda kappa, t_v)
//                                              + sum_{u in X, u in G} d_u.
//
// Proof. X holds no member of G: if some v of X has t_v >= lambda kappa the right side is at
// least kappa, else it is (1 - lambda) kappa + z_r(X). X holds u of G, and Z <= M_G from the
// other groups: if some v of X outside G has t_v >= lambda kappa the right side is at least
// kappa + d_u >= min(kappa, t_u + M_G) >= min(kappa, t_u + Z); otherwise it is
// (1 - lambda) kappa + Z + d_u >= Z + t_u. Either way it bounds min(kappa, z_r(X)).
//
// Without G this is the mixed-integer rounding inequality of the row (Marchand and Wolsey,
// "Aggregation and mixed integer rounding to solve MIPs", Operations Research 49, 2001);
// the group row lifts it (Wolsey, "Valid inequalities for 0-1 knapsacks and MIPs with
// generalised upper bound constraints", Discrete Applied Mathematics 29, 1990): the intercept
// pays for the one candidate of G, and a member of G that leaves r short of its cap whatever
// the other groups add (t_u + M_G < kappa) gets a negative coefficient, even when it does not
// cover r at all (taking it rules out the siblings that do). With G, lambda = 0 is a cut too:
// y_r <= kappa + sum_{u in G} (min(kappa, t_u + M_G) - kappa) x_u. On MEMAUDIT-like packages
// at 5-20% budgets a few rounds of them take the LP bound from about 1% above OPT to OPT or
// within one lattice step of it.
//
// Separation at a fractional x (the averaged Lagrangian solutions, see search.hpp): for each
// lambda among 0, the breakpoints t_u / kappa and 1 - t_u / kappa of the candidates with
// x_u > 0 and M_G / kappa, the best G is the group (among those covering r) whose members
// gain most from the lifted coefficients; the cut returned is the most violated against
// min(kappa, sum t x), if any.
// A second family bounds what the other groups can add instead of rounding it (the cuts
// HiGHS's separators find on these rows). For a set I of the groups covering r, with
// M_I = sum over the covering groups H not in I of max_{v in H} t_v < kappa,
//
//     min(kappa, z_r(X)) <= M_I + sum_{u in X, group(u) in I} min(t_u, kappa - M_I).
//
// Proof. The groups outside I add at most M_I to z_r(X). If a member u of I in X has
// t_u >= kappa - M_I, the right side is at least kappa; otherwise it is at least
// M_I + (coverage from I) >= z_r(X). Where the LP spreads a full cover over a candidate that
// covers r only partly and fractions of full coverers (0.5 x_a + 0.5 x_b + 0.6 x_c with the
// summary c in a group of its own), putting the summaries outside I cuts off what the
// rounding family keeps. Separation tries, for two orders of the covering groups (by their
// largest coverage; by the share of it the LP uses, most used first), every prefix as the
// groups outside I, and returns the most violated cut.
//
// The same holds with single candidates outside instead of whole groups: for a set S of the
// candidates covering r with M_S = sum over groups H of max_{v in S, v in H} t_v < kappa,
//
//     min(kappa, z_r(X)) <= M_S + sum_{u in X, u not in S} min(t_u, kappa - M_S)
//
// (the proof above with "outside I" read as "in S": X holds at most one member of S per group,
// so S adds at most M_S). With a group's full coverers in it and its partial ones in S, the cut
// bounds what partial covers add without giving up the group: at x = 1 on a 0.5 cover and a
// 0.3 cover of other groups and x = 0.4 on a full cover, y <= 0.8 + 0.2 (full covers) is
// violated by 0.12, which no set of whole groups gives (the full cover's group holds the 0.5).
// Most of the single-unit cuts HiGHS's separators find at the root of long-dialogue packages
// have this form. Separation (over_candidates): a group's part of S is its members up to a
// level l_g (a coverage the LP uses), M_S = sum l_g; for each room delta among the coverages
// the LP uses and one below them all, the levels that take most of sum min(t, delta) x out of
// the right side within sum l_g <= kappa - delta (a multiple-choice knapsack over the few
// groups the LP uses, by depth-first search); the cut is rebuilt at M_S = sum l_g (the right
// side is concave in M on [M_S, kappa], where it is kappa, so a cut violated at kappa - delta
// is at least as violated at M_S).
//
// A third family is exact on two groups. For groups A and B covering r, a store holds at most
// one member of each, so on A and B alone min(kappa, z_r) takes the values
// f(i, j) = min(kappa, t_i + t_j) at the pairs (i, j) of A + {none} and B + {none} (t = 0 for
// none and for members that do not cover r). Any potentials with u_i + v_j >= f(i, j) for
// every pair give
//
//     min(kappa, z_r(X)) <= (u_0 + v_0) + sum_{i in X, i in A} (u_i - u_0)
//                                      + sum_{j in X, j in B} (v_j - v_0)
//                                      + sum_{w in X, w not in A, B} t_w,
//
// (u_0, v_0 those of none). Proof: X holds i of A (or none) and j of B (or none), and the right
// side is u_i + v_j + the other groups' coverage >= min(kappa, t_i + t_j) + z_other >= min(kappa,
// z_r(X)). The least right side at a fractional x (masses p_i = x_i on A's members, 1 - sum on
// none; q_j on B) is the dual of the transportation problem max sum lambda_ij f(i, j) with those
// marginals: the concave envelope of f over the two simplices. f is submodular in (t_i, t_j)
// (a concave function of the sum), so with A by coverage ascending and B descending its
// matrix is Monge for maximisation and the north-west corner rule is optimal (Hoffman, "On
// simple linear programming problems", 1963); the potentials along its staircase are the
// dual optimum, and are checked for feasibility before a cut is made. On units that two
// groups cover (an experience's raw span, fact and summary, and the next one's update) these
// are the cuts HiGHS's root finds and the other two families miss: on MEMAUDIT-Small x70 at
// 10% four of them take the root LP from 1317.32 to 1317.21, HiGHS's root bound.
#pragma once

#include <cstdint>
#include <vector>

#include "memaudit/reduction.hpp"

namespace memaudit {

// CoverageCut::group of a cut of the second family (lambda is then 1 - M_I / kappa, or
// 1 - M_S / kappa).
constexpr std::int32_t kReachCutGroup = -2;

struct CoverageCut {
    std::int32_t unit = -1;
    double lambda = 0.0;
    std::int32_t group = -1;      // -1: no lifted group; kReachCutGroup: the second family
    double intercept = 0.0;       // (1 - lambda) kappa
    double violation = 0.0;       // at the point it was separated at (h units)
    // Every candidate with a coefficient other than 0: coverers of the unit (> 0), and
    // members of the lifted group, which may be < 0 whether they cover the unit or not.
    std::vector<std::int32_t> candidates;
    std::vector<double> coefficients;
};

// Coefficient of a candidate outside the lifted group, with clipped coverage t.
inline double coverage_cut_coefficient(double t, double kappa, double lambda) {
    return t < lambda * kappa ? t : lambda * kappa;
}

// Coefficient d_u of a member of the lifted group with clipped coverage t (0 if it does not
// cover the unit), M_G = outside_reach. A shortfall below 1e-12 kappa counts as none, so
// that rounding in t + M_G never makes a coefficient more negative than the proof allows.
inline double lifted_cut_coefficient(double t, double kappa, double lambda, double outside_reach) {
    const double shortfall = kappa - t - outside_reach;
    const double negative = shortfall > 1e-12 * kappa ? 1e-12 * kappa - shortfall : 0.0;
    const double positive = t - (1.0 - lambda) * kappa;
    return positive > negative ? positive : negative;
}

// The cut of (unit, lambda, group) over all candidates covering the unit.
CoverageCut make_coverage_cut(const ReducedProblem& p, std::int32_t unit, double lambda, std::int32_t group);

// The most violated cut of the family at x (one value per reduced candidate, in [0, 1]), if
// its violation exceeds min_violation (in h units, before the weight). Cap1 units only.
bool separate_coverage_cut(const ReducedProblem& p, std::int32_t unit, const std::vector<double>& x,
                           double min_violation, CoverageCut* cut);

// The most violated cut of the second family at x, if its violation exceeds min_violation;
// with over_candidates, also over sets of single candidates (the root LP's separation; the
// search's relax-and-cut keeps whole groups: at its averaged Lagrangian points the finer cuts
// cost MEMAUDIT-like 3,000 @ 10% its root proof).
bool separate_reach_cut(const ReducedProblem& p, std::int32_t unit, const std::vector<double>& x,
                        double min_violation, CoverageCut* cut, bool over_candidates = false);

// CoverageCut::group of a cut of the third family (lambda is then its intercept / kappa).
constexpr std::int32_t kPairCutGroup = -3;

// The most violated cut of the third family at x (over the pairs of groups the LP uses on
// the unit), if its violation exceeds min_violation.
bool separate_pair_cut(const ReducedProblem& p, std::int32_t unit, const std::vector<double>& x,
                       double min_violation, CoverageCut* cut);

// Whether unit r has the saturation the family is proven for (cap1).
bool coverage_cut_unit(const ReducedProblem& p, std::int32_t unit);

} // namespace memaudit
