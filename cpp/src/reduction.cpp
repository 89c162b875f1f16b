#include "memaudit/reduction.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace memaudit {

namespace {

// The source rows, flat: row u is entries[ptr[u], ptr[u + 1]) as (source unit, clipped
// amount), sorted by unit.
struct Rows {
    std::vector<std::pair<std::int32_t, double>> entries;
    std::vector<std::size_t> ptr;
    std::vector<double> singleton_value;
    bool empty(std::size_t u) const { return ptr[u] == ptr[u + 1]; }
};

// Does row v cover row u coordinate-wise (a[u,r] <= a[v,r] for every r)?
bool covers(const Rows& rows, std::size_t v, std::size_t u) {
    std::size_t j = rows.ptr[v];
    const std::size_t j_end = rows.ptr[v + 1];
    for (std::size_t k = rows.ptr[u]; k < rows.ptr[u + 1]; ++k) {
        const auto [r, a] = rows.entries[k];
        while (j < j_end && rows.entries[j].first < r) ++j;
        if (j == j_end || rows.entries[j].first != r || rows.entries[j].second < a) return false;
    }
    return true;
}

// A group of thousands of siblings would make the pairwise test quadratic; beyond this many
// survivors a candidate is simply kept (dominance is an optional reduction).
constexpr std::size_t kMaxDominanceSurvivors = 256;

} // namespace

double ReducedProblem::value_of(const std::vector<std::int32_t>& store) const {
    std::vector<double> z(static_cast<std::size_t>(num_units), 0.0);
    for (auto u : store)
        for (std::int64_t k = indptr[u]; k < indptr[u + 1]; ++k) z[indices[k]] += values[k];
    double total = 0.0;
    for (std::int32_t r = 0; r < num_units; ++r)
        if (z[r] > 0.0) total += unit_value(r, z[r]);
    return total;
}

ReducedProblem reduce(const Problem& p) {
    ReducedProblem rp;
    rp.source = &p;
    const auto n = static_cast<std::size_t>(p.num_candidates);

    std::vector<double> unit_cap(static_cast<std::size_t>(p.num_units));
    std::vector<char> useful(static_cast<std::size_t>(p.num_units));
    for (std::int32_t r = 0; r < p.num_units; ++r) {
        unit_cap[r] = p.saturations[p.saturation_of[r]].cap();
        useful[r] = p.weight[r] > 0.0 && unit_cap[r] > 0.0;
    }

    // Rows: keep useful entries, merge duplicates, clip to the cap.
    Rows rows;
    rows.entries.reserve(static_cast<std::size_t>(p.indptr[p.num_candidates]));
    rows.ptr.assign(n + 1, 0);
    rows.singleton_value.assign(n, 0.0);
    for (std::size_t u = 0; u < n; ++u) {
        const std::size_t begin = rows.entries.size();
        for (std::int64_t k = p.indptr[u]; k < p.indptr[u + 1]; ++k)
            if (useful[p.indices[k]] && p.values[k] > 0.0) rows.entries.emplace_back(p.indices[k], p.values[k]);
        const auto first = rows.entries.begin() + static_cast<std::ptrdiff_t>(begin);
        if (!std::is_sorted(first, rows.entries.end())) std::sort(first, rows.entries.end());
        std::size_t out = begin;
        for (std::size_t k = begin; k < rows.entries.size(); ++k) {
            if (out > begin && rows.entries[out - 1].first == rows.entries[k].first)
                rows.entries[out - 1].second += rows.entries[k].second;
            else
                rows.entries[out++] = rows.entries[k];
        }
        rows.entries.resize(out);
        for (std::size_t k = begin; k < out; ++k) {
            auto& [r, a] = rows.entries[k];
            a = std::min(a, unit_cap[r]);
            rows.singleton_value[u] += p.unit_value(r, a);
        }
        rows.ptr[u + 1] = out;
    }

    // Group members of the source, then the worthless and dominated filters.
    std::vector<std::vector<std::int32_t>> members(static_cast<std::size_t>(p.num_groups));
    for (std::size_t u = 0; u < n; ++u) {
        if (rows.empty(u) || !(rows.singleton_value[u] > 0.0)) {
            ++rp.dropped_worthless;
            continue;
        }
        members[p.group_of[u]].push_back(static_cast<std::int32_t>(u));
    }
    std::vector<char> keep(n, 0);
    for (auto& group : members) {
        // Cheapest first; at equal cost the more valuable first, then the lower index, so a
        // dominating sibling is always examined before the candidates it dominates.
        std::sort(group.begin(), group.end(), [&](std::int32_t a, std::int32_t b) {
            if (p.cost[a] != p.cost[b]) return p.cost[a] < p.cost[b];
            if (rows.singleton_value[a] != rows.singleton_value[b])
                return rows.singleton_value[a] > rows.singleton_value[b];
            return a < b;
        });
        std::vector<std::int32_t> survivors;
        for (auto u : group) {
            bool dominated = false;
            if (survivors.size() <= kMaxDominanceSurvivors) {
                for (auto v : survivors) {
                    if (p.cost[v] <= p.cost[u] && covers(rows, static_cast<std::size_t>(v), static_cast<std::size_t>(u))) {
                        dominated = true;
                        break;
                    }
                }
            }
            if (dominated) {
                ++rp.dropped_dominated;
            } else {
                survivors.push_back(u);
                keep[u] = 1;
            }
        }
    }

    // Renumber units (those some kept row touches), candidates (source order) and groups.
    std::vector<std::int32_t> unit_map(static_cast<std::size_t>(p.num_units), -1);
    std::vector<std::int32_t> group_map(static_cast<std::size_t>(p.num_groups), -1);
    rp.indptr.push_back(0);
    for (std::size_t u = 0; u < n; ++u) {
        if (!keep[u]) continue;
        const auto g = p.group_of[u];
        if (group_map[g] < 0) group_map[g] = rp.num_groups++;
        rp.cost.push_back(p.cost[u]);
        rp.group_of.push_back(group_map[g]);
        rp.original.push_back(static_cast<std::int32_t>(u));
        for (std::size_t k = rows.ptr[u]; k < rows.ptr[u + 1]; ++k) {
            const auto [r, a] = rows.entries[k];
            if (unit_map[r] < 0) {
                unit_map[r] = rp.num_units++;
                rp.weight.push_back(p.weight[r]);
                rp.cap.push_back(unit_cap[r]);
                rp.saturation.push_back(&p.saturations[p.saturation_of[r]]);
                rp.original_unit.push_back(r);
            }
            rp.indices.push_back(unit_map[r]);
            rp.values.push_back(a);
        }
        rp.indptr.push_back(static_cast<std::int64_t>(rp.indices.size()));
    }
    rp.num_candidates = static_cast<std::int32_t>(rp.cost.size());

    // Units were numbered in order of first use, so rows may no longer be sorted by unit.
    std::vector<std::pair<std::int32_t, double>> tmp;
    for (std::int32_t u = 0; u < rp.num_candidates; ++u) {
        const auto b = rp.indptr[u], e = rp.indptr[u + 1];
        if (std::is_sorted(rp.indices.begin() + b, rp.indices.begin() + e)) continue;
        tmp.clear();
        for (auto k = b; k < e; ++k) tmp.emplace_back(rp.indices[k], rp.values[k]);
        std::sort(tmp.begin(), tmp.end());
        for (auto k = b; k < e; ++k) {
            rp.indices[k] = tmp[k - b].first;
            rp.values[k] = tmp[k - b].second;
        }
    }

    rp.unit_ptr.assign(static_cast<std::size_t>(rp.num_units) + 1, 0);
    for (auto r : rp.indices) ++rp.unit_ptr[r + 1];
    for (std::int32_t r = 0; r < rp.num_units; ++r) rp.unit_ptr[r + 1] += rp.unit_ptr[r];
    rp.unit_candidates.resize(rp.indices.size());
    {
        std::vector<std::int64_t> next(rp.unit_ptr.begin(), rp.unit_ptr.end() - 1);
        for (std::int32_t u = 0; u < rp.num_candidates; ++u)
            for (auto k = rp.indptr[u]; k < rp.indptr[u + 1]; ++k) rp.unit_candidates[next[rp.indices[k]]++] = u;
    }

    rp.group_ptr.assign(static_cast<std::size_t>(rp.num_groups) + 1, 0);
    for (auto g : rp.group_of) ++rp.group_ptr[g + 1];
    for (std::int32_t g = 0; g < rp.num_groups; ++g) rp.group_ptr[g + 1] += rp.group_ptr[g];
    rp.group_members.resize(static_cast<std::size_t>(rp.num_candidates));
    std::vector<std::int32_t> fill(rp.group_ptr.begin(), rp.group_ptr.end() - 1);
    for (std::int32_t u = 0; u < rp.num_candidates; ++u) rp.group_members[fill[rp.group_of[u]]++] = u;
    // Cheapest first inside each group: the knapsack hulls are then built without sorting.
    for (std::int32_t g = 0; g < rp.num_groups; ++g)
        std::stable_sort(rp.group_members.begin() + rp.group_ptr[g], rp.group_members.begin() + rp.group_ptr[g + 1],
                         [&](std::int32_t a, std::int32_t b) { return rp.cost[a] < rp.cost[b]; });
    return rp;
}

} // namespace memaudit

namespace memaudit {

namespace {

// x ~= num / den with den <= 2^24, by continued fractions; false when no such fraction is
// within a relative 1e-12 of x.
bool as_fraction(double x, std::int64_t* num, std::int64_t* den) {
    if (!(x > 0.0) || x > 1e15) return false;
    std::int64_t p0 = 0, q0 = 1, p1 = 1, q1 = 0;
    double rest = x;
    for (int step = 0; step < 64; ++step) {
        const double a = std::floor(rest);
        if (a > 1e15) return false;
        const auto ai = static_cast<std::int64_t>(a);
        const std::int64_t p2 = ai * p1 + p0, q2 = ai * q1 + q0;
        if (q2 > (std::int64_t{1} << 24) || p2 > (std::int64_t{1} << 52)) return false;
        if (std::abs(static_cast<double>(p2) / static_cast<double>(q2) - x) <= 1e-12 * x) {
            *num = p2;
            *den = q2;
            return true;
        }
        p0 = p1; q0 = q1; p1 = p2; q1 = q2;
        const double frac = rest - a;
        if (frac <= 0.0) return false;
        rest = 1.0 / frac;
    }
    return false;
}

std::int64_t gcd64(std::int64_t a, std::int64_t b) {
    while (b != 0) {
        const auto t = a % b;
        a = b;
        b = t;
    }
    return a;
}

} // namespace

double objective_granularity(const ReducedProblem& p) {
    constexpr std::int64_t kMaxDenominator = std::int64_t{1} << 40;
    std::vector<double> generators;
    for (std::int32_t u = 0; u < p.num_candidates; ++u) {
        for (std::int64_t k = p.indptr[u]; k < p.indptr[u + 1]; ++k) {
            const auto r = p.indices[k];
            const Saturation& h = *p.saturation[r];
            switch (h.kind) {
            case SaturationKind::Cap1:
            case SaturationKind::Linear:
                generators.push_back(p.weight[r] * p.values[k]);
                break;
            case SaturationKind::Log1p:
                return 0.0;
            case SaturationKind::Pwl:
                for (std::size_t s = 1; s < h.z.size(); ++s) {
                    const double slope = (h.h[s] - h.h[s - 1]) / (h.z[s] - h.z[s - 1]);
                    generators.push_back(p.weight[r] * slope * p.values[k]);
                }
                break;
            }
        }
    }
    for (std::int32_t r = 0; r < p.num_units; ++r) {
        const Saturation& h = *p.saturation[r];
        if (h.kind == SaturationKind::Cap1) generators.push_back(p.weight[r]);
        if (h.kind == SaturationKind::Pwl) {
            for (std::size_t s = 1; s < h.z.size(); ++s) {
                const double slope = (h.h[s] - h.h[s - 1]) / (h.z[s] - h.z[s - 1]);
                generators.push_back(p.weight[r] * h.h[s]);
                generators.push_back(p.weight[r] * slope * h.z[s - 1]);
            }
        }
    }
    // Data repeats its weights and amounts: each distinct generator is converted once.
    std::sort(generators.begin(), generators.end());
    generators.erase(std::unique(generators.begin(), generators.end()), generators.end());
    // Each generator as an exact fraction, a common denominator, then the gcd of the
    // scaled numerators (128-bit products, bailing out rather than overflowing).
    std::vector<std::pair<std::int64_t, std::int64_t>> fractions;
    std::int64_t lcm = 1;
    for (double g : generators) {
        if (g == 0.0) continue;
        std::int64_t num = 0, den = 1;
        if (!as_fraction(g, &num, &den)) return 0.0;
        fractions.emplace_back(num, den);
        const __int128 next = static_cast<__int128>(lcm / gcd64(lcm, den)) * den;
        if (next > kMaxDenominator) return 0.0;
        lcm = static_cast<std::int64_t>(next);
    }
    std::int64_t common = 0;
    for (const auto& [num, den] : fractions) {
        const __int128 scaled = static_cast<__int128>(num) * (lcm / den);
        if (scaled > (static_cast<__int128>(1) << 62)) return 0.0;
        common = gcd64(common, static_cast<std::int64_t>(scaled));
    }
    if (common <= 0) return 0.0;
    return static_cast<double>(common) / static_cast<double>(lcm);
}

} // namespace memaudit
