// Exact reductions of a compiled package before the branch-and-bound.
//
// Every reduction keeps OPT(B) for every budget B, and a store of reduced candidates has the
// same value F as the same candidates of the original package (up to rounding):
//
//  * An entry a[u,r] on a unit with w_r = 0 or h_r == 0 never changes F: dropped.
//  * Entries of one row on the same unit are summed (z adds them anyway), then clipped to the
//    cap kappa_r of h_r (h_r is constant on [kappa_r, inf)): for x >= 0,
//        h(x + a) = h(x + min(a, kappa)),
//    so min(a, kappa) is an exact replacement and makes the dominance test below stronger.
//  * A candidate left without entries has F(u | S) = 0 for every S: dropped.
//  * In-group dominance: u is dominated by a sibling v when c_v <= c_u and a[u,r] <= a[v,r]
//    for every unit r (coordinate-wise, after clipping). Any store holding u can swap it
//    for v: the cost does not grow, the group constraint still holds and F does not drop
//    because F is monotone. u is dropped. Among siblings equal in cost and coverage exactly
//    one (the lowest index) stays.
//
// Candidates that cost more than the budget depend on B and are left to the search.
#pragma once

#include <cstdint>
#include <vector>

#include "memaudit/objective.hpp"

namespace memaudit {

struct ReducedProblem {
    const Problem* source = nullptr; // saturations point into it: it must outlive this object
    std::int32_t num_candidates = 0;
    std::int32_t num_groups = 0;
    std::int32_t num_units = 0;

    std::vector<double> cost;              // per reduced candidate
    std::vector<std::int32_t> group_of;    // reduced group of each candidate
    std::vector<std::int32_t> original;    // reduced candidate -> source candidate index
    std::vector<std::int32_t> group_ptr;   // members of g: group_members[group_ptr[g] .. group_ptr[g+1]),
                                           // by increasing cost
    std::vector<std::int32_t> group_members;

    // Coverage rows over reduced units, sorted by unit, merged and clipped to the caps.
    std::vector<std::int64_t> indptr;
    std::vector<std::int32_t> indices;
    std::vector<double> values;

    // Columns: candidates covering unit r are unit_candidates[unit_ptr[r] .. unit_ptr[r+1]).
    std::vector<std::int64_t> unit_ptr;
    std::vector<std::int32_t> unit_candidates;

    std::vector<double> weight;                // w_r > 0 per reduced unit
    std::vector<double> cap;                   // kappa_r (inf when h keeps growing)
    std::vector<const Saturation*> saturation; // h_r
    std::vector<std::int32_t> original_unit;   // reduced unit -> source unit index

    std::int32_t dropped_worthless = 0; // candidates without value
    std::int32_t dropped_dominated = 0; // candidates dominated by a sibling

    double unit_value(std::int32_t r, double z) const { return weight[r] * (*saturation[r])(z); }
    // F(X) of reduced candidates, evaluated from scratch.
    double value_of(const std::vector<std::int32_t>& store) const;
};

ReducedProblem reduce(const Problem& problem);

// Granularity of F: the largest delta > 0 with F(X) in delta * Z for every store X, or 0
// when there is none (log1p units, irrational data, or denominators beyond 2^40).
// F(X) = sum_r w_r h_r(z_r) lies in the integer span of
//   cap1:   w_r and w_r a[u,r];      linear: w_r a[u,r];
//   pwl:    w_r h_k, w_r s_k z_k and w_r s_k a[u,r] (s_k the slope of piece k),
// so delta is the gcd of those numbers once each is written as a fraction. Knowing it, a node
// whose bound is below incumbent + delta cannot hold a better store (a MIP solver's
// "objective integrality"), which matters most on tie-heavy packages.
double objective_granularity(const ReducedProblem& problem);

} // namespace memaudit
