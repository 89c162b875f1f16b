#include "memaudit/bounds.hpp"

#include <algorithm>
#include <cmath>

namespace memaudit {

namespace {

// Right derivative of a piecewise-linear h at z, and the index of the segment holding z.
double pwl_slope(const Saturation& s, double z, std::size_t* segment) {
    const auto it = std::upper_bound(s.z.begin(), s.z.end(), z);
    const auto k = static_cast<std::size_t>(it - s.z.begin());
    *segment = k;
    if (k == 0 || k >= s.z.size()) return 0.0;
    return (s.h[k] - s.h[k - 1]) / (s.z[k] - s.z[k - 1]);
}

} // namespace

void ResidualUnit::reset(double w, double coverage, double cap, const Saturation* saturation) {
    weight = w;
    z = coverage;
    h = saturation;
    room = cap - coverage; // inf - z stays inf
    if (!(room > 0.0)) {
        room = 0.0;
        slope = 0.0;
        return;
    }
    switch (h->kind) {
    case SaturationKind::Cap1:
    case SaturationKind::Linear:
        slope = 1.0;
        break;
    case SaturationKind::Log1p:
        slope = 1.0 / (1.0 + z);
        break;
    case SaturationKind::Pwl: {
        std::size_t segment = 0;
        slope = pwl_slope(*h, z, &segment);
        break;
    }
    }
}

double ResidualUnit::gain(double t) const {
    switch (h->kind) {
    case SaturationKind::Cap1:
    case SaturationKind::Linear:
        return t;
    case SaturationKind::Log1p:
        return std::log1p(t / (1.0 + z));
    case SaturationKind::Pwl:
        return (*h)(z + t) - (*h)(z);
    }
    return 0.0;
}

double ResidualUnit::intercept(double lambda) const {
    switch (h->kind) {
    case SaturationKind::Cap1:
        return (1.0 - lambda) * room;
    case SaturationKind::Linear:
        return 0.0;
    case SaturationKind::Log1p:
        return lambda - 1.0 - std::log(lambda);
    case SaturationKind::Pwl: {
        // g is concave: the supremum sits on a breakpoint beyond z (or at y = 0).
        const double beta = lambda * slope;
        const double hz = (*h)(z);
        double best = 0.0;
        for (std::size_t k = 0; k < h->z.size(); ++k) {
            if (h->z[k] <= z) continue;
            best = std::max(best, (h->h[k] - hz) - beta * (h->z[k] - z));
        }
        return best;
    }
    }
    return 0.0;
}

double ResidualUnit::peak(double lambda) const {
    switch (h->kind) {
    case SaturationKind::Cap1:
        return room;
    case SaturationKind::Linear:
        return 0.0;
    case SaturationKind::Log1p:
        return (1.0 + z) * (1.0 / lambda - 1.0);
    case SaturationKind::Pwl: {
        // The farthest breakpoint whose incoming slope is still >= beta.
        const double beta = lambda * slope;
        double best = 0.0;
        for (std::size_t k = 1; k < h->z.size(); ++k) {
            if (h->z[k] <= z) continue;
            const double s = (h->h[k] - h->h[k - 1]) / (h->z[k] - h->z[k - 1]);
            if (s >= beta && s > 0.0) best = h->z[k] - z;
            else break;
        }
        return std::min(best, room);
    }
    }
    return 0.0;
}

void MultipleChoiceKnapsackLP::clear() {
    items_.clear();
    groups_.clear();
    hull_.clear();
    increments_.clear();
    open_begin_ = 0;
    price_ = 0.0;
    dual_value_ = 0.0;
}

void MultipleChoiceKnapsackLP::close_group() {
    Group g;
    g.item_begin = open_begin_;
    g.item_end = items_.size();
    open_begin_ = items_.size();
    const auto group_index = static_cast<std::uint32_t>(groups_.size());

    // Upper concave hull from the empty choice (cost 0, profit 0); items arrive cheapest
    // first, so one pass suffices. A free item with profit replaces the empty choice.
    g.hull_begin = hull_.size();
    hull_.push_back(HullPoint{-1, 0.0, 0.0});
    for (std::size_t i = g.item_begin; i < g.item_end; ++i) {
        const Item& it = items_[i];
        if (!(it.profit > hull_.back().profit)) continue;
        if (it.cost <= hull_.back().cost) {
            // Same cost as the last point (costs never decrease), more profit: it replaces it.
            hull_.pop_back();
            if (hull_.size() == g.hull_begin) {
                hull_.push_back(HullPoint{static_cast<std::int64_t>(i), it.cost, it.profit});
                continue;
            }
        }
        while (hull_.size() - g.hull_begin >= 2) {
            const HullPoint& a = hull_[hull_.size() - 2];
            const HullPoint& b = hull_.back();
            const double r_ab = (b.profit - a.profit) / (b.cost - a.cost);
            const double r_bi = (it.profit - b.profit) / (it.cost - b.cost);
            if (r_ab > r_bi) break;
            hull_.pop_back();
        }
        hull_.push_back(HullPoint{static_cast<std::int64_t>(i), it.cost, it.profit});
    }
    g.base_profit = hull_[g.hull_begin].profit;
    g.hull_end = hull_.size();
    for (std::size_t h = g.hull_begin + 1; h < g.hull_end; ++h) {
        const double dc = hull_[h].cost - hull_[h - 1].cost;
        const double dp = hull_[h].profit - hull_[h - 1].profit;
        increments_.push_back(Increment{dp / dc, dc, dp, group_index, static_cast<std::uint32_t>(increments_.size())});
    }
    groups_.push_back(g);
}

double MultipleChoiceKnapsackLP::solve(double capacity) {
    capacity = std::max(capacity, 0.0);
    double value = 0.0;
    for (auto& g : groups_) {
        value += g.base_profit;
        g.taken = 0;
        g.fraction = 0.0;
    }
    for (auto& it : items_) it.x = 0.0;

    // The LP takes increments by decreasing ratio (index breaks ties, so a group's increments,
    // appended in hull order with decreasing ratios, stay in that order) while they fit,
    // then a fraction of the next: the critical one. It is found by weighted selection
    // (expected linear time; Balas and Zemel 1980 find the critical item of a knapsack the
    // same way): partition around a pivot; if the increments ahead of it fit, take them all
    // and go on behind it, else look among them.
    const auto ahead = [](const Increment& a, const Increment& b) {
        return a.ratio > b.ratio || (a.ratio == b.ratio && a.index < b.index);
    };
    double remaining = capacity;
    price_ = 0.0;
    std::size_t lo = 0, hi = increments_.size();
    while (lo < hi) {
        // Median of three as the pivot, moved to the end of the range.
        const std::size_t mid = lo + (hi - lo) / 2;
        if (ahead(increments_[hi - 1], increments_[lo])) std::swap(increments_[hi - 1], increments_[lo]);
        if (ahead(increments_[mid], increments_[lo])) std::swap(increments_[mid], increments_[lo]);
        if (ahead(increments_[hi - 1], increments_[mid])) std::swap(increments_[hi - 1], increments_[mid]);
        std::swap(increments_[mid], increments_[hi - 1]);
        const Increment pivot = increments_[hi - 1];
        std::size_t split = lo;
        double cost = 0.0, profit = 0.0;
        for (std::size_t i = lo; i + 1 < hi; ++i)
            if (ahead(increments_[i], pivot)) {
                cost += increments_[i].cost;
                profit += increments_[i].profit;
                std::swap(increments_[i], increments_[split++]);
            }
        std::swap(increments_[split], increments_[hi - 1]);
        if (cost <= remaining) {
            remaining -= cost;
            value += profit;
            for (std::size_t i = lo; i < split; ++i) ++groups_[increments_[i].group].taken;
            if (pivot.cost <= remaining) {
                remaining -= pivot.cost;
                value += pivot.profit;
                ++groups_[pivot.group].taken;
                lo = split + 1;
            } else {
                const double f = remaining / pivot.cost;
                value += f * pivot.profit;
                groups_[pivot.group].fraction = f;
                price_ = pivot.ratio;
                break;
            }
        } else {
            hi = split;
        }
    }

    dual_value_ = price_ * capacity;
    for (auto& g : groups_) {
        const HullPoint& lo = hull_[g.hull_begin + g.taken];
        g.integral_item = lo.item;
        if (lo.item >= 0) items_[static_cast<std::size_t>(lo.item)].x = 1.0 - g.fraction;
        if (g.fraction > 0.0) {
            const HullPoint& hi = hull_[g.hull_begin + g.taken + 1];
            items_[static_cast<std::size_t>(hi.item)].x = g.fraction;
        }
        double pi = 0.0;
        for (std::size_t i = g.item_begin; i < g.item_end; ++i)
            pi = std::max(pi, items_[i].profit - price_ * items_[i].cost);
        g.price = pi;
        dual_value_ += pi;
    }
    return value;
}

} // namespace memaudit
