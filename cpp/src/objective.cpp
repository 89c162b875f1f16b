#include "memaudit/objective.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace memaudit {

double Saturation::curved(double value) const {
    switch (kind) {
    case SaturationKind::Cap1:
        return value < 1.0 ? value : 1.0;
    case SaturationKind::Linear:
        return value;
    case SaturationKind::Log1p:
        return std::log1p(value);
    case SaturationKind::Pwl: {
        if (value >= z.back()) return h.back();
        // First breakpoint strictly above value; value >= z[0] = 0 for valid input.
        auto it = std::upper_bound(z.begin(), z.end(), value);
        const std::size_t k = static_cast<std::size_t>(it - z.begin());
        if (k == 0) return 0.0;
        const double slope = (h[k] - h[k - 1]) / (z[k] - z[k - 1]);
        return h[k - 1] + slope * (value - z[k - 1]);
    }
    }
    return 0.0;
}

double Saturation::cap() const {
    switch (kind) {
    case SaturationKind::Cap1:
        return 1.0;
    case SaturationKind::Pwl:
        // The last breakpoint where h still increases.
        for (std::size_t k = h.size(); k-- > 1;) {
            if (h[k] > h[k - 1]) return z[k];
        }
        return 0.0;
    default:
        return std::numeric_limits<double>::infinity();
    }
}

double Saturation::initial_slope() const {
    switch (kind) {
    case SaturationKind::Cap1:
    case SaturationKind::Linear:
    case SaturationKind::Log1p:
        return 1.0;
    case SaturationKind::Pwl:
        return z.size() < 2 ? 0.0 : (h[1] - h[0]) / (z[1] - z[0]);
    }
    return 0.0;
}

void Saturation::validate() const {
    if (kind != SaturationKind::Pwl) return;
    if (z.size() != h.size()) throw std::invalid_argument("pwl: z and h differ in length");
    if (z.empty() || z[0] != 0.0 || h[0] != 0.0)
        throw std::invalid_argument("pwl: the first breakpoint must be (0, 0)");
    double last_slope = std::numeric_limits<double>::infinity();
    for (std::size_t k = 1; k < z.size(); ++k) {
        if (!(z[k] > z[k - 1])) throw std::invalid_argument("pwl: z must increase strictly");
        const double slope = (h[k] - h[k - 1]) / (z[k] - z[k - 1]);
        if (!std::isfinite(slope) || slope < 0.0) throw std::invalid_argument("pwl: h must not decrease");
        // Concave: the point lies on or under the previous piece's line, to within 1e-12 of h's
        // size (judged in h: equal slopes of tiny pieces differ in their rounding by far more
        // than 1e-12 of themselves). The readers apply the same rule.
        const double line = h[k - 1] + last_slope * (z[k] - z[k - 1]);
        if (slope > last_slope && h[k] - line > 1e-12 * std::max({std::abs(h[k - 1]), std::abs(h[k]), 1e-300}))
            throw std::invalid_argument("pwl: slopes must not increase (h must be concave)");
        last_slope = slope;
    }
}

void Problem::validate() const {
    auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
    if (num_candidates < 0 || num_groups < 0 || num_units < 0) fail("negative sizes");
    const auto n = static_cast<std::size_t>(num_candidates);
    if (cost.size() != n) fail("cost has the wrong length");
    if (group_of.size() != n) fail("group_of has the wrong length");
    if (indptr.size() != n + 1) fail("indptr must have num_candidates + 1 entries");
    if (weight.size() != static_cast<std::size_t>(num_units)) fail("weight has the wrong length");
    if (saturation_of.size() != static_cast<std::size_t>(num_units)) fail("saturation_of has the wrong length");
    if (indices.size() != values.size()) fail("indices and values differ in length");
    if (indptr[0] != 0 || indptr[n] != static_cast<std::int64_t>(indices.size()))
        fail("indptr must start at 0 and end at the number of non-zeros");
    for (std::size_t u = 0; u < n; ++u) {
        if (indptr[u + 1] < indptr[u]) fail("indptr must not decrease");
        if (!(cost[u] >= 0.0) || !std::isfinite(cost[u])) fail("cost must be finite and >= 0");
        if (group_of[u] < 0 || group_of[u] >= num_groups) fail("group_of out of range");
    }
    for (std::size_t k = 0; k < indices.size(); ++k) {
        if (indices[k] < 0 || indices[k] >= num_units) fail("unit index out of range");
        if (!(values[k] >= 0.0) || !std::isfinite(values[k])) fail("coverage must be finite and >= 0");
    }
    for (std::int32_t r = 0; r < num_units; ++r) {
        if (!(weight[r] >= 0.0) || !std::isfinite(weight[r])) fail("weight must be finite and >= 0");
        if (saturation_of[r] < 0 || static_cast<std::size_t>(saturation_of[r]) >= saturations.size())
            fail("saturation_of out of range");
    }
    for (const auto& s : saturations) s.validate();
}

double objective_value(const Problem& problem, const std::int32_t* selected, std::size_t count) {
    CoverageState state(problem);
    for (std::size_t i = 0; i < count; ++i) state.add(selected[i]);
    return state.value();
}

CoverageState::CoverageState(const Problem& problem)
    : problem_(&problem), z_(static_cast<std::size_t>(problem.num_units), 0.0) {}

double CoverageState::marginal_gain(std::int32_t candidate) const {
    const Problem& p = *problem_;
    double gain = 0.0;
    for (std::int64_t k = p.indptr[candidate]; k < p.indptr[candidate + 1]; ++k) {
        const std::int32_t r = p.indices[k];
        const double before = z_[r];
        gain += p.unit_value(r, before + p.values[k]) - p.unit_value(r, before);
    }
    return gain;
}

double CoverageState::marginal_loss(std::int32_t candidate) const {
    const Problem& p = *problem_;
    double loss = 0.0;
    for (std::int64_t k = p.indptr[candidate]; k < p.indptr[candidate + 1]; ++k) {
        const std::int32_t r = p.indices[k];
        const double now = z_[r];
        loss += p.unit_value(r, now) - p.unit_value(r, std::max(0.0, now - p.values[k]));
    }
    return loss;
}

void CoverageState::add(std::int32_t candidate) {
    const Problem& p = *problem_;
    for (std::int64_t k = p.indptr[candidate]; k < p.indptr[candidate + 1]; ++k) {
        const std::int32_t r = p.indices[k];
        const double before = z_[r];
        z_[r] = before + p.values[k];
        value_ += p.unit_value(r, z_[r]) - p.unit_value(r, before);
    }
}

void CoverageState::remove(std::int32_t candidate) {
    const Problem& p = *problem_;
    for (std::int64_t k = p.indptr[candidate]; k < p.indptr[candidate + 1]; ++k) {
        const std::int32_t r = p.indices[k];
        const double before = z_[r];
        // Guard against -1e-17 drift: coverage is a sum of non-negatives.
        z_[r] = std::max(0.0, before - p.values[k]);
        value_ += p.unit_value(r, z_[r]) - p.unit_value(r, before);
    }
}

void CoverageState::clear() {
    std::fill(z_.begin(), z_.end(), 0.0);
    value_ = 0.0;
}

} // namespace memaudit
