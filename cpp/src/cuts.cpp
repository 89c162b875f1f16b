// Coverage cuts of one cap1 unit (cuts.hpp has both families and their proofs): building a
// cut of the rounding family, and separating the most violated cut of each family at a
// fractional point.
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

// The groups covering a unit, each with its largest clipped coverage, by group; and their sum
// (what a store can collect on the unit at most: one candidate per group).
struct UnitReach {
    std::vector<std::pair<std::int32_t, double>> groups;
    double total = 0.0;

    UnitReach(const ReducedProblem& p, std::int32_t unit) {
        for (auto c = p.unit_ptr[unit]; c < p.unit_ptr[unit + 1]; ++c) {
            const auto v = p.unit_candidates[c];
            groups.emplace_back(p.group_of[v], entry(p, v, unit));
        }
        std::sort(groups.begin(), groups.end());
        std::size_t kept = 0;
        for (std::size_t i = 0; i < groups.size(); ++i) {
            if (kept > 0 && groups[kept - 1].first == groups[i].first)
                groups[kept - 1].second = std::max(groups[kept - 1].second, groups[i].second);
            else
                groups[kept++] = groups[i];
        }
        groups.resize(kept);
        for (const auto& g : groups) total += g.second;
    }
    // M_G: the most collected outside group g.
    double outside(std::int32_t g) const {
        const auto it = std::lower_bound(groups.begin(), groups.end(), std::make_pair(g, -1.0));
        return it != groups.end() && it->first == g ? total - it->second : total;
    }
};

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
        if (p.group_of[v] == group) continue;
        const double coef = coverage_cut_coefficient(entry(p, v, unit), kappa, lambda);
        if (coef > 0.0) {
            cut.candidates.push_back(v);
            cut.coefficients.push_back(coef);
        }
    }
    if (group >= 0) {
        const double reach = UnitReach(p, unit).outside(group);
        for (auto m = p.group_ptr[group]; m < p.group_ptr[group + 1]; ++m) {
            const auto u = p.group_members[m];
            const double coef = lifted_cut_coefficient(entry(p, u, unit), kappa, lambda, reach);
            if (coef != 0.0) {
                cut.candidates.push_back(u);
                cut.coefficients.push_back(coef);
            }
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
    const UnitReach reach(p, unit);
    std::vector<double> lambdas{0.0, 0.5};
    for (const auto& it : items) {
        const double f = it.t / kappa;
        if (f > 0.0 && f < 1.0) {
            lambdas.push_back(f);
            lambdas.push_back(1.0 - f);
        }
    }
    for (const auto& g : reach.groups) {
        const double f = (reach.total - g.second) / kappa;
        if (f > 0.0 && f < 1.0) lambdas.push_back(f);
    }
    std::sort(lambdas.begin(), lambdas.end());
    lambdas.erase(std::unique(lambdas.begin(), lambdas.end()), lambdas.end());

    double best_violation = min_violation;
    double best_lambda = -1.0;
    std::int32_t best_group = -1;
    for (double lambda : lambdas) {
        if (!(lambda >= 0.0 && lambda < 1.0)) continue;
        double rhs = (1.0 - lambda) * kappa;
        for (const auto& it : items) rhs += coverage_cut_coefficient(it.t, kappa, lambda) * it.x;
        // The group (among those covering the unit) whose lifted coefficients lower the right
        // side most: its members at x > 0 trade their outside coefficient for d_u.
        double best_drop = 0.0;
        std::int32_t group = -1;
        for (const auto& [g, largest] : reach.groups) {
            const double outside = reach.total - largest;
            double drop = 0.0;
            for (auto m = p.group_ptr[g]; m < p.group_ptr[g + 1]; ++m) {
                const auto u = p.group_members[m];
                const double xu = std::min(1.0, x[static_cast<std::size_t>(u)]);
                if (!(xu > 1e-9)) continue;
                const double t = entry(p, u, unit);
                drop += (coverage_cut_coefficient(t, kappa, lambda) - lifted_cut_coefficient(t, kappa, lambda, outside)) * xu;
            }
            if (drop > best_drop) {
                best_drop = drop;
                group = g;
            }
        }
        if (lambda == 0.0 && group < 0) continue; // without a group, lambda = 0 is y <= kappa
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

bool separate_reach_cut(const ReducedProblem& p, std::int32_t unit, const std::vector<double>& x,
                        double min_violation, CoverageCut* cut) {
    if (!coverage_cut_unit(p, unit)) return false;
    const double kappa = p.cap[unit];
    struct Entry {
        std::int32_t candidate;
        double t, x;
    };
    struct Group {
        std::int32_t id;
        double largest = 0.0, used = 0.0; // max t; sum of t x
        std::vector<Entry> entries;
    };
    std::vector<Group> groups;
    double covered = 0.0;
    {
        std::vector<std::pair<std::int32_t, std::int32_t>> by_group; // (group, candidate)
        for (auto c = p.unit_ptr[unit]; c < p.unit_ptr[unit + 1]; ++c)
            by_group.emplace_back(p.group_of[p.unit_candidates[c]], p.unit_candidates[c]);
        std::sort(by_group.begin(), by_group.end());
        for (const auto& [g, v] : by_group) {
            if (groups.empty() || groups.back().id != g) groups.push_back(Group{g, 0.0, 0.0, {}});
            const double t = entry(p, v, unit);
            const double xv = std::min(1.0, std::max(0.0, x[static_cast<std::size_t>(v)]));
            groups.back().entries.push_back(Entry{v, t, xv});
            groups.back().largest = std::max(groups.back().largest, t);
            groups.back().used += t * xv;
            covered += t * xv;
        }
    }
    if (groups.size() < 2) return false;
    const double y = std::min(kappa, covered);
    double best_violation = min_violation;
    std::vector<std::int32_t> best_outside;
    std::vector<std::int32_t> order(groups.size());
    for (int rule = 0; rule < 2; ++rule) {
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int32_t>(i);
        if (rule == 0)
            std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return groups[a].largest < groups[b].largest; });
        else
            std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
                return groups[a].used * groups[b].largest > groups[b].used * groups[a].largest;
            });
        double reach = 0.0;
        for (std::size_t k = 1; k < order.size(); ++k) {
            reach += groups[order[k - 1]].largest;
            if (!(reach < kappa)) break;
            const double room = kappa - reach;
            double rhs = reach;
            for (std::size_t i = k; i < order.size(); ++i)
                for (const auto& e : groups[order[i]].entries) rhs += std::min(e.t, room) * e.x;
            if (y - rhs > best_violation) {
                best_violation = y - rhs;
                best_outside.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
            }
        }
    }
    if (best_outside.empty()) return false;
    std::vector<char> outside(groups.size(), 0);
    double reach = 0.0;
    for (auto i : best_outside) {
        outside[static_cast<std::size_t>(i)] = 1;
        reach += groups[static_cast<std::size_t>(i)].largest;
    }
    *cut = CoverageCut();
    cut->unit = unit;
    cut->group = kReachCutGroup;
    cut->lambda = 1.0 - reach / kappa;
    cut->intercept = reach;
    cut->violation = best_violation;
    const double room = kappa - reach;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        if (outside[i]) continue;
        for (const auto& e : groups[i].entries) {
            cut->candidates.push_back(e.candidate);
            cut->coefficients.push_back(std::min(e.t, room));
        }
    }
    return true;
}

} // namespace memaudit
