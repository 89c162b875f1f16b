// The MEMAUDIT objective and the compiled package the core works on.
//
// A package has candidates u (cost c_u, group g(u)) and evidence units r (weight w_r,
// concave non-decreasing saturation h_r with h_r(0) = 0). Coverage a[u,r] >= 0 is sparse
// (CSR, one row per candidate). For a store X:
//
//     z_r(X) = sum_{u in X} a[u,r]          F(X) = sum_r w_r h_r(z_r(X))
//
// F is monotone submodular because each h_r is concave and non-decreasing. Feasibility
// (sum_{u in X} c_u <= B, at most one candidate per group) is the solver's business; this
// header only evaluates F, marginal gains F(u | X) = F(X + u) - F(X), and keeps a coverage
// vector up to date under insertions and removals.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace memaudit {

enum class SaturationKind : int32_t { Cap1 = 0, Linear = 1, Log1p = 2, Pwl = 3 };

// One saturation function h. For Pwl, (z, h) are the breakpoints: z[0] = 0, h[0] = 0, z
// strictly increasing, slopes non-increasing and non-negative; h is constant after the
// last breakpoint.
struct Saturation {
    SaturationKind kind = SaturationKind::Cap1;
    std::vector<double> z;
    std::vector<double> h;

    // The common kinds inline: the search evaluates h in its innermost loops.
    double operator()(double value) const {
        if (kind == SaturationKind::Cap1) return value < 1.0 ? value : 1.0;
        if (kind == SaturationKind::Linear) return value;
        return curved(value);
    }
    double curved(double value) const; // log1p and pwl
    // Smallest z beyond which h stops growing (+inf when it never does). Coverage above it
    // is worthless, which lets bounds clip it.
    double cap() const;
    // Slope of h at 0 (right derivative): the largest gain per unit of coverage.
    double initial_slope() const;
    // Throws std::invalid_argument naming the defect.
    void validate() const;
};

struct Problem {
    std::int32_t num_candidates = 0;
    std::int32_t num_groups = 0;
    std::int32_t num_units = 0;
    std::vector<double> cost;           // per candidate, >= 0
    std::vector<std::int32_t> group_of; // per candidate, in [0, num_groups)
    std::vector<double> weight;         // per unit, >= 0
    std::vector<std::int64_t> indptr;   // CSR rows: candidate u covers indices[indptr[u]..indptr[u+1])
    std::vector<std::int32_t> indices;  // unit index of each non-zero
    std::vector<double> values;         // a[u,r] of each non-zero, >= 0
    std::vector<std::int32_t> saturation_of; // per unit, index into saturations
    std::vector<Saturation> saturations;

    // Throws std::invalid_argument with the first inconsistency (sizes, ranges, signs).
    void validate() const;

    double unit_value(std::int32_t unit, double z) const {
        return weight[unit] * saturations[saturation_of[unit]](z);
    }
};

// F(X) for an explicit list of candidate indices (duplicates count twice; callers pass sets).
double objective_value(const Problem& problem, const std::int32_t* selected, std::size_t count);

// Coverage vector z(X) with the value F(X), updated incrementally.
class CoverageState {
  public:
    explicit CoverageState(const Problem& problem);

    double value() const { return value_; }
    const std::vector<double>& coverage() const { return z_; }

    double marginal_gain(std::int32_t candidate) const;
    // Loss F(X) - F(X - u) for a candidate assumed to be in X.
    double marginal_loss(std::int32_t candidate) const;
    void add(std::int32_t candidate);
    void remove(std::int32_t candidate);
    void clear();

  private:
    const Problem* problem_;
    std::vector<double> z_;
    double value_ = 0.0;
};

} // namespace memaudit
