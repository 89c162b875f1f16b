// Baseline memory writers of MEMAUDIT (Bhargava & Sobral Barrento, 2026, section 4 of the
// project's MISSION.md), reproducing the rules of the paper's public artifact to the tie.
//
// For the current store S (one candidate per group at most, total cost <= B):
//
//     gain(u) = F(S + u) - F(S)            dens(u) = gain(u) / max(c_u, 1e-12)
//
// A candidate is skipped when c_u does not fit the remaining budget or gain(u) <= 1e-12.
// Keys are compared as tuples (lexicographically, larger wins); the candidate id enters a
// key as its rank in the lexicographic order of all ids, so full ties go to the largest id.
//
// - density_only: one pass over groups in arrival order; in each group insert the
//   candidate with the largest key (dens, gain, -cost, id).
// - greedy: repeat: over every candidate of an unused group insert the one with the
//   largest key (dens, gain, -cost, id); stop when none qualifies.
// - gvt (Group Value-Threshold): for every threshold t in {0} U {F({u}) / max(c_u, 1e-12) :
//   c_u <= B}, in decreasing order, one pass over groups in arrival order inserting, per
//   group, the admissible candidate (dens + 1e-12 >= t) with the largest key
//   (gain, -cost, id). The best store over all thresholds is kept: a higher value (by more
//   than 1e-12) wins, at equal value (within 1e-12) the lower cost, else the earlier
//   threshold. With every c_u <= B/2 it guarantees F >= (1 - eps) OPT / 4.
//
// Arrival order and the admitted candidate set (for representation-restricted variants)
// are decided by the caller and passed as `order`: the admitted candidates with each group
// contiguous, groups in arrival order, inside a group by (cost, id). Greedy ignores the
// order except as the admitted set.
//
// Group capacity k >= 1 (the paper's sensitivity check uses k = 2): a group stays open until
// k of its candidates are stored. Greedy skips candidates of full groups; the one-pass
// writers (density_only, gvt) repeat their per-group choice, with gains recomputed after
// each insertion, until k candidates of the group are stored or none qualifies. With k = 1
// every rule is exactly the one above.
#pragma once

#include <cstdint>
#include <vector>

#include "memaudit/objective.hpp"

namespace memaudit {

// Gains at or below this count as no gain; also the density and threshold slack.
constexpr double kWriterEpsilon = 1e-12;
// Floor of a cost in a density, so zero-cost candidates get a huge, finite density.
constexpr double kMinDensityCost = 1e-12;

struct WriterInput {
    const Problem* problem = nullptr;
    double budget = 0.0;
    std::vector<std::int32_t> order;   // admitted candidates, grouped, in arrival order
    std::vector<std::int32_t> id_rank; // per candidate (all of them): rank of its id
    std::int32_t group_capacity = 1;   // candidates a group may hold

    // Throws std::invalid_argument on out-of-range indices, a wrong id_rank length or a
    // group capacity below 1.
    void validate() const;
};

// Each writer returns the inserted candidates in insertion order.
std::vector<std::int32_t> write_density_only(const WriterInput& input);
std::vector<std::int32_t> write_greedy(const WriterInput& input);
std::vector<std::int32_t> write_gvt(const WriterInput& input);

} // namespace memaudit
