#include "memaudit/warm_start.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace memaudit {

namespace {

constexpr double kMinGain = 1e-12;

double density(double gain, double cost) { return gain / std::max(cost, 1e-12); }

// The greedy's entries (key, candidate) and their order: higher key first, then lower index.
using Entry = std::pair<double, std::int32_t>;
bool ahead(const Entry& a, const Entry& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); }

} // namespace

WarmStart::WarmStart(const ReducedProblem& problem, double budget_limit, std::int64_t work_limit)
    : p_(problem), limit_(budget_limit), work_limit_(work_limit), z_(static_cast<std::size_t>(problem.num_units), 0.0),
      group_used_(static_cast<std::size_t>(problem.num_groups), 0) {}

double WarmStart::gain(std::int32_t u) const {
    double g = 0.0;
    for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
        const auto r = p_.indices[k];
        const double before = z_[r];
        if (before >= p_.cap[r]) continue;
        g += p_.unit_value(r, before + p_.values[k]) - p_.unit_value(r, before);
    }
    return g;
}

void WarmStart::add(std::int32_t u) {
    for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
        const auto r = p_.indices[k];
        const double before = z_[r];
        z_[r] = before + p_.values[k];
        value_ += p_.unit_value(r, z_[r]) - p_.unit_value(r, before);
    }
    group_used_[p_.group_of[u]] = 1;
    store_.push_back(u);
    cost_ += p_.cost[u];
}

void WarmStart::remove(std::int32_t u) {
    for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
        const auto r = p_.indices[k];
        const double before = z_[r];
        z_[r] = std::max(0.0, before - p_.values[k]);
        value_ += p_.unit_value(r, z_[r]) - p_.unit_value(r, before);
    }
    group_used_[p_.group_of[u]] = 0;
    store_.erase(std::find(store_.begin(), store_.end(), u));
    cost_ -= p_.cost[u];
}

void WarmStart::reset() {
    std::fill(z_.begin(), z_.end(), 0.0);
    std::fill(group_used_.begin(), group_used_.end(), 0);
    store_.clear();
    value_ = 0.0;
    cost_ = 0.0;
}

Store WarmStart::snapshot() const {
    Store s;
    s.candidates = store_;
    std::sort(s.candidates.begin(), s.candidates.end());
    s.value = p_.value_of(s.candidates);
    for (auto u : s.candidates) s.cost += p_.cost[u];
    return s;
}

void WarmStart::load(const Store& store) {
    reset();
    for (auto u : store.candidates) add(u);
}

void WarmStart::collect(bool by_density) {
    // Candidates by cost: the scan ends at the first that does not fit. A fill after one
    // removal (local search) then looks at the few candidates the freed budget affords, not
    // at all of them; the greedy's order, and so the result, does not depend on the scan's.
    if (by_cost_.empty() && p_.num_candidates > 0) {
        by_cost_.resize(static_cast<std::size_t>(p_.num_candidates));
        for (std::int32_t u = 0; u < p_.num_candidates; ++u) by_cost_[static_cast<std::size_t>(u)] = u;
        std::sort(by_cost_.begin(), by_cost_.end(), [this](std::int32_t a, std::int32_t b) {
            return p_.cost[a] < p_.cost[b] || (p_.cost[a] == p_.cost[b] && a < b);
        });
    }
    heap_.clear();
    for (auto u : by_cost_) {
        if (cost_ + p_.cost[u] > limit_) break;
        if (group_used_[p_.group_of[u]]) continue;
        const double g = gain(u);
        if (g > kMinGain) heap_.emplace_back(by_density ? density(g, p_.cost[u]) : g, u);
    }
}

void WarmStart::drain(bool by_density) {
    // Max-heap in the order of `ahead`: stale keys are upper bounds because gains only shrink.
    auto cmp = [](const Entry& a, const Entry& b) { return ahead(b, a); };
    std::make_heap(heap_.begin(), heap_.end(), cmp);
    while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), cmp);
        const auto u = heap_.back().second;
        heap_.pop_back();
        // Budget left only shrinks and a used group stays used: such candidates are done.
        if (group_used_[p_.group_of[u]] || cost_ + p_.cost[u] > limit_) continue;
        const double g = gain(u);
        if (g <= kMinGain) continue;
        const double fresh = by_density ? density(g, p_.cost[u]) : g;
        // Taken once it is still first by (key, -index): with the index in the order, what
        // the heap holds beyond the candidates that still fit does not change the result.
        if (!heap_.empty() && cmp(Entry{fresh, u}, heap_.front())) {
            heap_.emplace_back(fresh, u);
            std::push_heap(heap_.begin(), heap_.end(), cmp);
            continue;
        }
        add(u);
    }
}

void WarmStart::lazy_greedy(bool by_density) {
    collect(by_density);
    drain(by_density);
}

Store WarmStart::greedy_by_density() {
    reset();
    lazy_greedy(true);
    return snapshot();
}

Store WarmStart::greedy_by_gain() {
    reset();
    lazy_greedy(false);
    return snapshot();
}

void WarmStart::fill_by_density() { lazy_greedy(true); }

Store WarmStart::filled(const Store& start, bool few) {
    load(start);
    if (few) refill();
    else fill_by_density();
    return snapshot();
}

void WarmStart::refill() {
    // fill_by_density for a nearly full store (local search), where a few candidates go in:
    // the heap would pop every entry, most of them no longer fitting. Instead each step scans
    // the entries left, drops those that no longer fit or whose group is used (they never
    // come back; the heap drops them when they come up), and takes the first by
    // (density, -index) once it is still first with its fresh density: the heap's rule, so
    // the same store. After log2(entries) steps the heap is cheaper, and the rest goes to it.
    collect(true);
    const double heap_after = 2.0 + std::log2(static_cast<double>(heap_.size()) + 1.0);
    for (int step = 0; !heap_.empty(); ++step) {
        if (step > heap_after) {
            drain(true);
            return;
        }
        std::size_t kept = 0, best = 0;
        Entry runner_up{-std::numeric_limits<double>::infinity(), -1};
        for (std::size_t i = 0; i < heap_.size(); ++i) {
            const auto entry = heap_[i];
            if (group_used_[p_.group_of[entry.second]] || cost_ + p_.cost[entry.second] > limit_) continue;
            heap_[kept] = entry;
            if (kept > 0) {
                if (ahead(entry, heap_[best])) {
                    runner_up = heap_[best];
                    best = kept;
                } else if (ahead(entry, runner_up)) {
                    runner_up = entry;
                }
            }
            ++kept;
        }
        heap_.resize(kept);
        if (kept == 0) break;
        const auto u = heap_[best].second;
        const double g = gain(u);
        const double fresh = density(g, p_.cost[u]);
        if (g > kMinGain && kept > 1 && ahead(runner_up, {fresh, u})) {
            heap_[best].first = fresh;
            continue;
        }
        heap_[best] = heap_.back();
        heap_.pop_back();
        if (g > kMinGain) add(u);
    }
}

Store WarmStart::value_thresholds(std::size_t max_thresholds) {
    std::vector<double> singles;
    reset();
    for (std::int32_t u = 0; u < p_.num_candidates; ++u)
        if (p_.cost[u] <= limit_) singles.push_back(density(gain(u), p_.cost[u]));
    std::sort(singles.begin(), singles.end(), std::greater<>());
    singles.erase(std::unique(singles.begin(), singles.end()), singles.end());
    std::vector<double> thresholds;
    if (singles.size() <= max_thresholds) {
        thresholds = singles;
    } else {
        for (std::size_t k = 0; k < max_thresholds; ++k)
            thresholds.push_back(singles[k * (singles.size() - 1) / (max_thresholds - 1)]);
    }
    thresholds.push_back(0.0);

    Store best;
    for (double t : thresholds) {
        reset();
        for (std::int32_t g = 0; g < p_.num_groups; ++g) {
            std::int32_t pick = -1;
            double pick_gain = 0.0;
            for (auto m = p_.group_ptr[g]; m < p_.group_ptr[g + 1]; ++m) {
                const auto u = p_.group_members[m];
                if (cost_ + p_.cost[u] > limit_) continue;
                const double gu = gain(u);
                if (gu <= kMinGain || density(gu, p_.cost[u]) + 1e-12 < t) continue;
                if (pick < 0 || gu > pick_gain || (gu == pick_gain && p_.cost[u] < p_.cost[pick])) {
                    pick = u;
                    pick_gain = gu;
                }
            }
            if (pick >= 0) add(pick);
        }
        if (value_ > best.value + kMinGain || (std::abs(value_ - best.value) <= kMinGain && cost_ < best.cost))
            best = snapshot();
    }
    return best;
}

Store WarmStart::improve(Store start, std::int64_t work_limit) {
    load(start);
    fill_by_density();
    const std::int64_t nnz = p_.indptr[p_.num_candidates] + p_.num_candidates;
    const std::int64_t cap = work_limit > 0 ? work_limit : work_limit_;
    std::int64_t work = 0;
    for (int round = 0; round < 500 && work < cap; ++round) {
        const double eps = kMinGain * std::max(1.0, std::abs(value_));
        // Best single swap: remove s, insert u (u may come from s's group).
        std::int32_t best_out = -1, best_in = -1;
        if (best_swap(eps, work, best_out, best_in)) {
            remove(best_out);
            add(best_in);
            refill();
            continue;
        }
        // No swap gains: try removing one candidate and refilling the freed budget greedily
        // (a one-for-several exchange), keeping the first that gains.
        bool improved = false;
        const std::vector<std::int32_t> current = store_;
        for (auto s : current) {
            if (work >= cap) break;
            const double before = value_;
            remove(s);
            const std::size_t mark = store_.size();
            refill();
            work += nnz;
            if (value_ > before + eps && std::find(store_.begin() + static_cast<std::ptrdiff_t>(mark), store_.end(), s) == store_.end()) {
                improved = true;
                break;
            }
            while (store_.size() > mark) remove(store_.back());
            add(s);
        }
        if (!improved) break;
    }
    Store out = snapshot();
    return out.value >= start.value ? out : start;
}

bool WarmStart::best_swap(double eps, std::int64_t& work, std::int32_t& out, std::int32_t& in) {
    // Removing s changes the gains of its neighbours only (candidates sharing a unit with
    // it): every other candidate of a free group gains what it gains now. So one ranking of
    // the free groups' candidates by their gains, read from the top, gives the best
    // non-neighbour insertion for each s; neighbours and the members of s's own group (free
    // once s is out) are evaluated exactly with s removed.
    const auto n = static_cast<std::size_t>(p_.num_candidates);
    if (near_.size() != n) {
        near_.assign(n, 0);
        seen_.assign(n, 0);
        stamp_ = 0;
    }
    ranked_.clear();
    for (std::int32_t u = 0; u < p_.num_candidates; ++u) {
        if (group_used_[p_.group_of[u]]) continue;
        const double g = gain(u);
        if (g > kMinGain) ranked_.emplace_back(g, u);
    }
    work += p_.indptr[p_.num_candidates] + p_.num_candidates;
    std::sort(ranked_.begin(), ranked_.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    double best = eps;
    out = in = -1;
    const std::vector<std::int32_t> current = store_;
    for (auto s : current) {
        if (++stamp_ == 0) {
            std::fill(near_.begin(), near_.end(), 0);
            std::fill(seen_.begin(), seen_.end(), 0);
            stamp_ = 1;
        }
        for (std::int64_t k = p_.indptr[s]; k < p_.indptr[s + 1]; ++k) {
            const auto r = p_.indices[k];
            for (auto c = p_.unit_ptr[r]; c < p_.unit_ptr[r + 1]; ++c) near_[p_.unit_candidates[c]] = stamp_;
            work += p_.unit_ptr[r + 1] - p_.unit_ptr[r];
        }
        const double before = value_;
        remove(s);
        const double loss = before - value_;
        for (const auto& [g, u] : ranked_) {
            ++work;
            if (g - loss <= best) break;
            if (near_[u] == stamp_ || cost_ + p_.cost[u] > limit_) continue;
            best = g - loss;
            out = s;
            in = u;
            break;
        }
        auto exact = [&](std::int32_t v) {
            if (v == s || seen_[v] == stamp_) return;
            seen_[v] = stamp_;
            if (group_used_[p_.group_of[v]] || cost_ + p_.cost[v] > limit_) return;
            work += p_.indptr[v + 1] - p_.indptr[v];
            const double delta = gain(v) - loss;
            if (delta > best) {
                best = delta;
                out = s;
                in = v;
            }
        };
        for (std::int64_t k = p_.indptr[s]; k < p_.indptr[s + 1]; ++k) {
            const auto r = p_.indices[k];
            for (auto c = p_.unit_ptr[r]; c < p_.unit_ptr[r + 1]; ++c) exact(p_.unit_candidates[c]);
        }
        const auto gs = p_.group_of[s];
        for (auto m = p_.group_ptr[gs]; m < p_.group_ptr[gs + 1]; ++m) exact(p_.group_members[m]);
        add(s);
    }
    return out >= 0;
}

Store WarmStart::best(const Store& seed) {
    // Each threshold is one pass over the package, like one subgradient step of the root:
    // small packages, whose roots take a few steps, get fewer thresholds.
    const auto thresholds = std::clamp<std::size_t>(static_cast<std::size_t>(p_.num_candidates) / 6, 8, 32);
    std::vector<Store> pool{greedy_by_density(), greedy_by_gain(), value_thresholds(thresholds), seed};
    std::sort(pool.begin(), pool.end(), [](const Store& a, const Store& b) { return a.value > b.value; });
    return pool[0];
}

} // namespace memaudit
