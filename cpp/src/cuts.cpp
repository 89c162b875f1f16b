// Coverage cuts of one cap1 unit (cuts.hpp has the three families and their proofs): building
// a cut of the rounding family, and separating the most violated cut of each family at a
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

// A group's choices for the reach cut's third rule: levels l (a coverage of one of its members
// the LP uses), each with what the members of coverage <= l take out of the right side.
struct LevelGroup {
    std::int32_t group;
    std::vector<std::pair<double, double>> levels; // (level, value), by level
};

// Depth-first search over the groups for levels (at most one per group, 0 for none) of sum
// <= capacity whose values sum to more than `needed`; the best found within kLevelNodes nodes
// goes to `chosen` (one level per group, by group index). A multiple-choice knapsack: the
// groups are few (those covering one unit at x > 0), and a node is pruned when even the best
// level of every group left cannot reach the best so far.
constexpr int kLevelNodes = 4000;

// Rooms tried per unit at most (a search each): dense units cover at dozens of values.
constexpr std::size_t kMaxRooms = 16;

struct LevelSearch {
    const std::vector<LevelGroup>& options;
    double capacity;
    double best;
    std::vector<double> rest; // sum of the best values of groups k..n-1
    std::vector<int> pick, best_pick;
    int nodes = 0;

    void dfs(std::size_t k, double value, double used) {
        if (++nodes > kLevelNodes || !(value + rest[k] > best)) return;
        if (k == options.size()) { // value > best: rest[n] is 0
            best = value;
            best_pick = pick;
            return;
        }
        const auto& levels = options[k].levels;
        for (auto c = levels.size(); c-- > 0;) {
            if (used + levels[c].first > capacity) continue;
            pick[k] = static_cast<int>(c);
            dfs(k + 1, value + levels[c].second, used + levels[c].first);
        }
        pick[k] = -1;
        dfs(k + 1, value, used);
    }
};

bool best_levels_within(std::vector<LevelGroup>& options, double capacity, double needed, std::size_t num_groups,
                        std::vector<double>* chosen) {
    if (options.empty() || !(capacity > 0.0)) return false;
    // Largest values first: good sets early, and the bound on the groups left prunes more.
    std::sort(options.begin(), options.end(),
              [](const LevelGroup& a, const LevelGroup& b) { return a.levels.back().second > b.levels.back().second; });
    LevelSearch search{options, capacity, needed, std::vector<double>(options.size() + 1, 0.0),
                       std::vector<int>(options.size(), -1), {}};
    for (std::size_t k = options.size(); k-- > 0;) search.rest[k] = search.rest[k + 1] + options[k].levels.back().second;
    search.dfs(0, 0.0, 0.0);
    if (search.best_pick.empty()) return false;
    chosen->assign(num_groups, 0.0);
    for (std::size_t j = 0; j < options.size(); ++j)
        if (search.best_pick[j] >= 0)
            (*chosen)[static_cast<std::size_t>(options[j].group)] = options[j].levels[static_cast<std::size_t>(search.best_pick[j])].first;
    return true;
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
                        double min_violation, CoverageCut* cut, bool over_candidates) {
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
    // Levels: per group, the members of coverage up to a level l_g go outside (all of a
    // group outside is the level of its largest coverage), and M = sum of the levels.
    std::vector<double> best_levels;
    if (!best_outside.empty()) {
        best_levels.assign(groups.size(), 0.0);
        for (auto i : best_outside) best_levels[static_cast<std::size_t>(i)] = groups[static_cast<std::size_t>(i)].largest;
    }
    // Third rule, over single candidates: for a room delta, the levels that take most of the
    // LP's coverage outside within a reach of kappa - delta (a multiple-choice knapsack over
    // the groups the LP uses), the cut then rebuilt at the levels' own sum.
    if (over_candidates) {
        std::vector<LevelGroup> options;
        std::vector<double> rooms;
        for (std::size_t i = 0; i < groups.size(); ++i)
            for (const auto& e : groups[i].entries)
                if (e.x > 1e-9 && e.t > 0.0 && e.t < kappa) rooms.push_back(e.t);
        // A room below every coverage too: the levels' sum may leave less room than any member
        // covers (0.5 and 0.3 outside leave 0.2), and there min(t, delta) x ranks by x alone.
        rooms.push_back(1e-6 * kappa);
        std::sort(rooms.begin(), rooms.end());
        rooms.erase(std::unique(rooms.begin(), rooms.end()), rooms.end());
        if (rooms.size() > kMaxRooms) { // units of many distinct coverages: every few, the lowest kept
            std::vector<double> spread;
            for (std::size_t k = 0; k < kMaxRooms; ++k) spread.push_back(rooms[k * (rooms.size() - 1) / (kMaxRooms - 1)]);
            rooms = std::move(spread);
        }
        for (double room : rooms) {
            options.clear();
            double all = 0.0;
            for (std::size_t i = 0; i < groups.size(); ++i) {
                LevelGroup g{static_cast<std::int32_t>(i), {}};
                for (const auto& e : groups[i].entries) {
                    all += std::min(e.t, room) * e.x;
                    if (e.x > 1e-9 && e.t > 0.0 && e.t <= kappa - room) g.levels.emplace_back(e.t, 0.0);
                }
                if (g.levels.empty()) continue;
                std::sort(g.levels.begin(), g.levels.end());
                g.levels.erase(std::unique(g.levels.begin(), g.levels.end(),
                                           [](const auto& a, const auto& b) { return a.first == b.first; }),
                               g.levels.end());
                for (auto& [level, value] : g.levels)
                    for (const auto& e : groups[i].entries)
                        if (e.t <= level) value += std::min(e.t, room) * e.x;
                options.push_back(std::move(g));
            }
            // Violated at reach kappa - delta iff the levels take more than this outside.
            const double needed = all + (kappa - room) - y + best_violation;
            std::vector<double> chosen;
            if (!best_levels_within(options, kappa - room, needed, groups.size(), &chosen)) continue;
            double reach = 0.0;
            for (double l : chosen) reach += l;
            if (!(reach < kappa)) continue;
            // Rebuilt at M = the levels' sum <= kappa - delta: the right side is concave in M on
            // [M, kappa] and kappa there, so it is at least as violated at M.
            double rhs = reach;
            for (std::size_t i = 0; i < groups.size(); ++i)
                for (const auto& e : groups[i].entries)
                    if (e.t > chosen[i]) rhs += std::min(e.t, kappa - reach) * e.x;
            if (y - rhs > best_violation) {
                best_violation = y - rhs;
                best_levels = chosen;
            }
        }
    }
    if (best_levels.empty()) return false;
    double reach = 0.0;
    for (double l : best_levels) reach += l;
    *cut = CoverageCut();
    cut->unit = unit;
    cut->group = kReachCutGroup;
    cut->lambda = 1.0 - reach / kappa;
    cut->intercept = reach;
    cut->violation = best_violation;
    const double room = kappa - reach;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        for (const auto& e : groups[i].entries) {
            if (e.t <= best_levels[i]) continue; // outside: counted in M
            cut->candidates.push_back(e.candidate);
            cut->coefficients.push_back(std::min(e.t, room));
        }
    }
    return true;
}

namespace {

// One covering member of a group for the third family.
struct PairEntry {
    std::int32_t candidate;
    double t, x;
};

// The envelope of min(kappa, t_i + t_j) over groups a and b at the masses x (see cuts.hpp):
// the potentials of none (u0, v0) and of every member (by entry). False when the staircase's
// potentials are not dual feasible (rounding), so that no cut is made.
bool pair_envelope(const std::vector<PairEntry>& a, const std::vector<PairEntry>& b, double kappa, double* u0,
                   double* v0, std::vector<double>* ua, std::vector<double>* vb) {
    // Rows: none, then A by coverage ascending; columns: B by coverage descending, then none.
    std::vector<std::size_t> rows(a.size()), cols(b.size());
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
    for (std::size_t j = 0; j < cols.size(); ++j) cols[j] = j;
    std::sort(rows.begin(), rows.end(), [&](std::size_t i, std::size_t k) { return a[i].t < a[k].t; });
    std::sort(cols.begin(), cols.end(), [&](std::size_t j, std::size_t k) { return b[j].t > b[k].t; });
    const std::size_t m = a.size() + 1, n = b.size() + 1;
    std::vector<double> rt(m, 0.0), rmass(m, 0.0), ct(n, 0.0), cmass(n, 0.0);
    double sa = 0.0, sb = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        rt[i + 1] = a[rows[i]].t;
        rmass[i + 1] = a[rows[i]].x;
        sa += a[rows[i]].x;
    }
    for (std::size_t j = 0; j < b.size(); ++j) {
        ct[j] = b[cols[j]].t;
        cmass[j] = b[cols[j]].x;
        sb += b[cols[j]].x;
    }
    // A group row the LP meets within its tolerance may sum a hair over 1: scaled back.
    if (sa > 1.0)
        for (std::size_t i = 1; i < m; ++i) rmass[i] /= sa;
    if (sb > 1.0)
        for (std::size_t j = 0; j + 1 < n; ++j) cmass[j] /= sb;
    rmass[0] = std::max(0.0, 1.0 - std::min(1.0, sa));
    cmass[n - 1] = std::max(0.0, 1.0 - std::min(1.0, sb));
    auto f = [&](std::size_t i, std::size_t j) { return std::min(kappa, rt[i] + ct[j]); };
    // North-west corner: the staircase from (0, 0) to (m-1, n-1), moving down when the row's
    // mass is used up first (both at once: down, and the next cell carries none).
    std::vector<double> u(m, 0.0), v(n, 0.0);
    std::size_t i = 0, j = 0;
    v[0] = f(0, 0);
    while (true) {
        const double moved = std::min(rmass[i], cmass[j]);
        rmass[i] -= moved;
        cmass[j] -= moved;
        if (i + 1 == m && j + 1 == n) break;
        if ((rmass[i] <= cmass[j] && i + 1 < m) || j + 1 == n) {
            ++i;
            u[i] = f(i, j) - v[j];
        } else {
            ++j;
            v[j] = f(i, j) - u[i];
        }
    }
    const double slack = 1e-12 * kappa;
    for (std::size_t r = 0; r < m; ++r)
        for (std::size_t c = 0; c < n; ++c)
            if (u[r] + v[c] < f(r, c) - slack) return false;
    *u0 = u[0];
    *v0 = v[n - 1];
    ua->assign(a.size(), 0.0);
    vb->assign(b.size(), 0.0);
    for (std::size_t r = 0; r < a.size(); ++r) (*ua)[rows[r]] = u[r + 1];
    for (std::size_t c = 0; c < b.size(); ++c) (*vb)[cols[c]] = v[c];
    return true;
}

// Pairs of groups tried per unit at most (the groups the LP uses most on it).
constexpr std::size_t kMaxPairGroups = 6;

} // namespace

bool separate_pair_cut(const ReducedProblem& p, std::int32_t unit, const std::vector<double>& x,
                       double min_violation, CoverageCut* cut) {
    if (!coverage_cut_unit(p, unit)) return false;
    const double kappa = p.cap[unit];
    struct Group {
        std::int32_t id;
        double used = 0.0; // sum of t x
        std::vector<PairEntry> entries;
    };
    std::vector<Group> groups;
    {
        std::vector<std::pair<std::int32_t, std::int32_t>> by_group; // (group, candidate)
        for (auto c = p.unit_ptr[unit]; c < p.unit_ptr[unit + 1]; ++c)
            by_group.emplace_back(p.group_of[p.unit_candidates[c]], p.unit_candidates[c]);
        std::sort(by_group.begin(), by_group.end());
        for (const auto& [g, v] : by_group) {
            const double t = entry(p, v, unit);
            if (!(t > 0.0)) continue;
            if (groups.empty() || groups.back().id != g) groups.push_back(Group{g, 0.0, {}});
            const double xv = std::min(1.0, std::max(0.0, x[static_cast<std::size_t>(v)]));
            groups.back().entries.push_back(PairEntry{v, t, xv});
            groups.back().used += t * xv;
        }
    }
    if (groups.size() < 2) return false;
    double covered = 0.0;
    for (const auto& g : groups) covered += g.used;
    const double y = std::min(kappa, covered);
    // The groups the LP uses most; a pair of them exact, the others at their coverage.
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < groups.size(); ++k)
        if (groups[k].used > 0.0) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return groups[a].used > groups[b].used; });
    if (order.size() > kMaxPairGroups) order.resize(kMaxPairGroups);
    if (order.size() < 2) return false;
    double best_violation = min_violation;
    std::size_t best_a = 0, best_b = 0;
    double u0 = 0.0, v0 = 0.0, best_u0 = 0.0, best_v0 = 0.0;
    std::vector<double> ua, vb, best_ua, best_vb;
    for (std::size_t s = 0; s < order.size(); ++s)
        for (std::size_t t = s + 1; t < order.size(); ++t) {
            const auto& ga = groups[order[s]];
            const auto& gb = groups[order[t]];
            if (!pair_envelope(ga.entries, gb.entries, kappa, &u0, &v0, &ua, &vb)) continue;
            // The right side at x itself (the envelope's value where both groups' rows hold).
            double rhs = u0 + v0 + covered - ga.used - gb.used;
            for (std::size_t e = 0; e < ga.entries.size(); ++e) rhs += (ua[e] - u0) * ga.entries[e].x;
            for (std::size_t e = 0; e < gb.entries.size(); ++e) rhs += (vb[e] - v0) * gb.entries[e].x;
            const double violation = y - rhs;
            if (violation > best_violation) {
                best_violation = violation;
                best_a = order[s];
                best_b = order[t];
                best_u0 = u0;
                best_v0 = v0;
                best_ua.swap(ua);
                best_vb.swap(vb);
            }
        }
    if (best_a == best_b) return false;
    *cut = CoverageCut();
    cut->unit = unit;
    cut->group = kPairCutGroup;
    cut->intercept = best_u0 + best_v0;
    cut->lambda = cut->intercept / kappa;
    cut->violation = best_violation;
    for (std::size_t k = 0; k < groups.size(); ++k) {
        for (std::size_t e = 0; e < groups[k].entries.size(); ++e) {
            const auto& en = groups[k].entries[e];
            const double coef = k == best_a ? best_ua[e] - best_u0 : k == best_b ? best_vb[e] - best_v0 : en.t;
            if (coef == 0.0) continue;
            cut->candidates.push_back(en.candidate);
            cut->coefficients.push_back(coef);
        }
    }
    return true;
}

} // namespace memaudit
