// Complemented mixed-integer rounding (c-MIR) cuts of one row, for the root LP (solve/root_lp.py).
//
// A row sum_j a_j v_j <= b over columns with bounds l_j <= v_j <= u_j, some of them on a
// lattice (v_j - l_j in s_j * Z, s_j > 0: a candidate's x with s = 1, a unit's y counted in
// steps of its lattice, a row's slack whose data are whole numbers of a step), becomes, with
// every column measured from one of its bounds,
//
//     sum_j alpha_j t_j <= beta,   t_j >= 0,   t_j = (v_j - l_j) / s_j  or  (u_j - v_j) / s_j,
//
// the lattice columns' t_j whole numbers (a continuous column has s_j = 1 and is measured from
// the bound that makes alpha_j <= 0 where it can: MIR keeps only those). For delta > 0 and
// f = frac(beta / delta) > 0, the mixed-integer rounding inequality
//
//     sum_{j on a lattice} (floor(alpha_j / delta) + max(0, frac(alpha_j / delta) - f) / (1 - f)) t_j
//       + sum_{j continuous} min(0, alpha_j / delta) / (1 - f) t_j  <=  floor(beta / delta)
//
// holds at every point of the row with the lattice columns on their lattice (Nemhauser and
// Wolsey, "Integer and Combinatorial Optimization", 1988, II.1.7; Marchand and Wolsey,
// "Aggregation and mixed integer rounding to solve MIPs", Operations Research 49, 2001, for
// the choice of delta and of the bounds: "complemented" MIR). Separation tries as delta the
// |alpha_j| of the lattice columns strictly between their bounds at the LP point, then the
// best of those halved up to three times, then measures from the other bound the lattice
// columns nearest the middle of their range, one at a time, keeping each change that makes the
// cut more violated per unit of its norm (its efficacy: the LP point's distance from it).
//
// On a coverage row y_r <= sum_u a_ur x_u with y_r <= 1 this is how HiGHS's root finds the
// single-unit cuts of long dialogues that the coverage families (cuts.hpp) miss, e.g. with a
// 0.3 cover measured from its upper bound and delta = 0.5:
// y <= 0.6 + 0.4 (full covers and 0.75 covers) + 0.2 (0.5 and 0.25 covers). On a row of the
// simplex tableau (a combination of every row, made in Python) it is the Gomory mixed-integer
// cut strengthened by the lattice of the y. Both together take the root LP of a long dialogue
// of 1,002 candidates at 5% from 415.24 to 413.82 (OPT 413.8, on a lattice of 0.05).
#pragma once

#include <cstdint>
#include <vector>

namespace memaudit {

// The columns a row is over: bounds, lattice steps (0: continuous) and the LP point.
struct MirColumns {
    std::vector<double> lower, upper, step, point;
};

// A cut sum_k coefficients[k] v_{columns[k]} <= rhs, its efficacy at the LP point.
struct MirCut {
    std::vector<std::int32_t> columns;
    std::vector<double> coefficients;
    double rhs = 0.0;
    double efficacy = 0.0;
};

// The most efficacious c-MIR cut of the row (columns, values) <= b that the separation above
// finds, if its efficacy exceeds min_efficacy. The cut is made safe for floating point: a
// coefficient below 1e-9 of the largest goes, its largest contribution moved into the right
// side (no cut where that needs an infinite bound), and the right side is raised by 1e-9 of
// the cut's scale; a cut whose coefficients span more than 1e6 is not returned.
bool separate_mir_cut(const std::vector<std::int32_t>& columns, const std::vector<double>& values, double b,
                      const MirColumns& cols, double min_efficacy, MirCut* cut);

} // namespace memaudit
