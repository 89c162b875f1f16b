#include "memaudit/writers.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace memaudit {

namespace {

// A selection key compared as a tuple; larger wins. `a` and `b` are the two leading
// numbers ((dens, gain) for density keys, (gain, -cost) for GVT keys), then the rest.
struct Key {
    double a;
    double b;
    double c;
    std::int32_t rank;

    bool operator>(const Key& o) const {
        if (a != o.a) return a > o.a;
        if (b != o.b) return b > o.b;
        if (c != o.c) return c > o.c;
        return rank > o.rank;
    }
};

double density(double gain, double cost) { return gain / std::max(cost, kMinDensityCost); }

// Calls visit(begin, end) for every run of same-group candidates in `order`.
template <typename Visit>
void for_each_group(const WriterInput& in, Visit visit) {
    const auto& order = in.order;
    const auto& group_of = in.problem->group_of;
    std::size_t i = 0;
    while (i < order.size()) {
        std::size_t j = i + 1;
        while (j < order.size() && group_of[order[j]] == group_of[order[i]]) ++j;
        visit(i, j);
        i = j;
    }
}

} // namespace

void WriterInput::validate() const {
    if (problem == nullptr) throw std::invalid_argument("writer input has no problem");
    const Problem& p = *problem;
    if (id_rank.size() != static_cast<std::size_t>(p.num_candidates))
        throw std::invalid_argument("id_rank must have one entry per candidate");
    if (std::isnan(budget)) throw std::invalid_argument("budget must be a number");
    if (group_capacity < 1) throw std::invalid_argument("group_capacity must be >= 1");
    std::vector<char> seen_candidate(static_cast<std::size_t>(p.num_candidates), 0);
    std::vector<char> seen_group(static_cast<std::size_t>(p.num_groups), 0);
    for (std::size_t k = 0; k < order.size(); ++k) {
        const std::int32_t u = order[k];
        if (u < 0 || u >= p.num_candidates) throw std::invalid_argument("order holds a candidate index out of range");
        if (seen_candidate[u]) throw std::invalid_argument("order lists a candidate twice");
        seen_candidate[u] = 1;
        const std::int32_t g = p.group_of[u];
        const bool starts_run = k == 0 || p.group_of[order[k - 1]] != g;
        // A group split over two runs would be visited twice by the one-pass writers.
        if (starts_run && seen_group[g]) throw std::invalid_argument("order must keep each group contiguous");
        seen_group[g] = 1;
    }
}

std::vector<std::int32_t> write_density_only(const WriterInput& in) {
    const Problem& p = *in.problem;
    CoverageState state(p);
    std::vector<std::int32_t> out;
    double used = 0.0;
    std::vector<char> stored(static_cast<std::size_t>(p.num_candidates), 0);
    for_each_group(in, [&](std::size_t begin, std::size_t end) {
        for (std::int32_t taken = 0; taken < in.group_capacity; ++taken) {
            std::int32_t best = -1;
            Key best_key{};
            for (std::size_t k = begin; k < end; ++k) {
                const std::int32_t u = in.order[k];
                const double cost = p.cost[u];
                if (stored[u] || used + cost > in.budget) continue;
                const double gain = state.marginal_gain(u);
                if (gain <= kWriterEpsilon) continue;
                const Key key{density(gain, cost), gain, -cost, in.id_rank[u]};
                if (best < 0 || key > best_key) {
                    best = u;
                    best_key = key;
                }
            }
            if (best < 0) break;
            out.push_back(best);
            stored[best] = 1;
            used += p.cost[best];
            state.add(best);
        }
    });
    return out;
}

std::vector<std::int32_t> write_greedy(const WriterInput& in) {
    const Problem& p = *in.problem;
    const std::size_t n = in.order.size();
    CoverageState state(p);

    // Gains are cached and recomputed only for candidates sharing a unit with the last
    // insertion: any other gain would be recomputed from identical inputs, so the cache
    // changes the running time, never a selection.
    std::vector<std::vector<std::size_t>> touching(static_cast<std::size_t>(p.num_units));
    for (std::size_t k = 0; k < n; ++k) {
        const std::int32_t u = in.order[k];
        for (std::int64_t e = p.indptr[u]; e < p.indptr[u + 1]; ++e) touching[p.indices[e]].push_back(k);
    }
    std::vector<double> gain(n);
    for (std::size_t k = 0; k < n; ++k) gain[k] = state.marginal_gain(in.order[k]);
    std::vector<char> alive(n, 1);
    std::vector<std::size_t> stamp(n, 0);
    std::vector<std::int32_t> group_count(static_cast<std::size_t>(p.num_groups), 0);

    std::vector<std::int32_t> out;
    double used = 0.0;
    for (std::size_t round = 1;; ++round) {
        std::size_t best = n;
        Key best_key{};
        for (std::size_t k = 0; k < n; ++k) {
            if (!alive[k]) continue;
            const std::int32_t u = in.order[k];
            const double cost = p.cost[u];
            // Both conditions are permanent: groups only fill up and the budget only shrinks.
            if (group_count[p.group_of[u]] >= in.group_capacity || used + cost > in.budget) {
                alive[k] = 0;
                continue;
            }
            if (gain[k] <= kWriterEpsilon) continue;
            const Key key{density(gain[k], cost), gain[k], -cost, in.id_rank[u]};
            if (best == n || key > best_key) {
                best = k;
                best_key = key;
            }
        }
        if (best == n) break;
        const std::int32_t chosen = in.order[best];
        out.push_back(chosen);
        used += p.cost[chosen];
        ++group_count[p.group_of[chosen]];
        alive[best] = 0;
        state.add(chosen);
        for (std::int64_t e = p.indptr[chosen]; e < p.indptr[chosen + 1]; ++e) {
            for (const std::size_t k : touching[p.indices[e]]) {
                if (!alive[k] || stamp[k] == round) continue;
                stamp[k] = round;
                gain[k] = state.marginal_gain(in.order[k]);
            }
        }
    }
    return out;
}

std::vector<std::int32_t> write_gvt(const WriterInput& in) {
    const Problem& p = *in.problem;
    CoverageState state(p);

    std::vector<double> thresholds{0.0};
    for (const std::int32_t u : in.order) {
        if (p.cost[u] <= in.budget) thresholds.push_back(density(state.marginal_gain(u), p.cost[u]));
    }
    std::sort(thresholds.begin(), thresholds.end(), [](double a, double b) { return a > b; });
    thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());

    std::vector<std::int32_t> best_store;
    double best_value = -1.0;
    double best_cost = 0.0;
    std::vector<std::int32_t> store;
    for (const double threshold : thresholds) {
        state.clear();
        store.clear();
        double used = 0.0;
        for_each_group(in, [&](std::size_t begin, std::size_t end) {
            for (std::int32_t taken = 0; taken < in.group_capacity; ++taken) {
                std::int32_t best = -1;
                Key best_key{};
                for (std::size_t k = begin; k < end; ++k) {
                    const std::int32_t u = in.order[k];
                    const double cost = p.cost[u];
                    // The group's insertions so far are the last `taken` entries of the store.
                    if (std::find(store.end() - taken, store.end(), u) != store.end()) continue;
                    if (used + cost > in.budget) continue;
                    const double gain = state.marginal_gain(u);
                    if (gain <= kWriterEpsilon) continue;
                    if (density(gain, cost) + kWriterEpsilon < threshold) continue;
                    const Key key{gain, -cost, 0.0, in.id_rank[u]};
                    if (best < 0 || key > best_key) {
                        best = u;
                        best_key = key;
                    }
                }
                if (best < 0) break;
                store.push_back(best);
                used += p.cost[best];
                state.add(best);
            }
        });
        const double value = state.value();
        if (value > best_value + kWriterEpsilon ||
            (std::fabs(value - best_value) <= kWriterEpsilon && used < best_cost)) {
            best_value = value;
            best_cost = used;
            best_store = store;
        }
    }
    return best_store;
}

} // namespace memaudit
