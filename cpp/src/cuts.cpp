#include "memaudit/cuts.hpp"

#include <algorithm>
#include <cmath>

namespace memaudit {

bool coverage_cut_unit(const ReducedProblem& p, std::int32_t unit) {
    return p.saturation[unit]->kind == SaturationKind::Cap1 && std::isfinite(p.cap[unit]) && p.cap[unit] > 0.0;
}

namespace {

// Clipped coverage of candidate v on unit r (rows are sorted by unit).
double entry(const ReducedProblem& p, std::int32_t v, std::int32_t r) {
    const auto begin = p.indices.begin() + p.indptr[v];
    const auto end = p.indices.begin() + p.indptr[v + 1];
    const auto it = std::lower_bound(begin, end, r);
    if (it == end || *it != r) return 0.0;
    return std::min(p.values[static_cast<std::size_t>(it - p.indices.begin())], p.cap[r]);
}

} // namespace

CoverageCut make_coverage_cut(const ReducedProblem& p, std::int32_t unit, double lambda, std::int32_t group) {
    CoverageCut cut;
    cut.unit = unit;
    cut.lambda = lambda;
    cut.group = group;
    const double kappa = p.cap[unit];
    cut.intercept = (1.0 - lambda) * kappa;
    for (auto c = p.unit_ptr[unit]; c < p.unit_ptr[unit + 1]; ++c) {
        const auto v = p.unit_candidates[c];
        const double t = entry(p, v, unit);
        const double coef = coverage_cut_coefficient(t, kappa, lambda, p.group_of[v] == group);
        if (coef > 0.0) {
            cut.candidates.push_back(v);
            cut.coefficients.push_back(coef);
        }
    }
    return cut;
}

bool separate_coverage_cut(const ReducedProblem& p, std::int32_t unit, const std::vector<double>& x,
                           double min_violation, CoverageCut* cut) {
    if (!coverage_cut_unit(p, unit)) return false;
    const double kappa = p.cap[unit];
    struct Item {
        std::int32_t group;
        double t, x;
    };
    std::vector<Item> items;
    double covered = 0.0;
    for (auto c = p.unit_ptr[unit]; c < p.unit_ptr[unit + 1]; ++c) {
        const auto v = p.unit_candidates[c];
        const double xv = x[static_cast<std::size_t>(v)];
        if (!(xv > 1e-9)) continue;
        const double t = entry(p, v, unit);
        items.push_back(Item{p.group_of[v], t, std::min(1.0, xv)});
        covered += t * std::min(1.0, xv);
    }
    if (items.size() < 2 && !(items.size() == 1 && items[0].x < 1.0)) return false;
    const double y = std::min(kappa, covered);
    std::vector<double> lambdas{0.5};
    for (const auto& it : items) {
        const double f = it.t / kappa;
        if (f > 0.0 && f < 1.0) {
            lambdas.push_back(f);
            lambdas.push_back(1.0 - f);
        }
    }
    std::sort(lambdas.begin(), lambdas.end());
    lambdas.erase(std::unique(lambdas.begin(), lambdas.end()), lambdas.end());
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.group < b.group; });

    double best_violation = min_violation;
    double best_lambda = -1.0;
    std::int32_t best_group = -1;
    for (double lambda : lambdas) {
        if (!(lambda > 0.0 && lambda < 1.0)) continue;
        double rhs = (1.0 - lambda) * kappa;
        for (const auto& it : items) rhs += coverage_cut_coefficient(it.t, kappa, lambda, false) * it.x;
        // The group whose lifted coefficients lower the right side most.
        double best_drop = 0.0;
        std::int32_t group = -1;
        for (std::size_t i = 0; i < items.size();) {
            std::size_t j = i;
            double drop = 0.0;
            for (; j < items.size() && items[j].group == items[i].group; ++j)
                drop += (coverage_cut_coefficient(items[j].t, kappa, lambda, false) -
                         coverage_cut_coefficient(items[j].t, kappa, lambda, true)) * items[j].x;
            if (drop > best_drop) {
                best_drop = drop;
                group = items[i].group;
            }
            i = j;
        }
        const double violation = y - (rhs - best_drop);
        if (violation > best_violation) {
            best_violation = violation;
            best_lambda = lambda;
            best_group = group;
        }
    }
    if (best_lambda < 0.0) return false;
    *cut = make_coverage_cut(p, unit, best_lambda, best_group);
    cut->violation = best_violation;
    return true;
}

} // namespace memaudit
