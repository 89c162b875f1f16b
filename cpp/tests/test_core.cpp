// Native tests of the core, built without Python so CI can run them under AddressSanitizer
// and UndefinedBehaviorSanitizer (cmake -DMEMAUDIT_PYTHON=OFF -DMEMAUDIT_NATIVE_TESTS=ON
// -DMEMAUDIT_SANITIZE=ON). Random packages are solved and checked against brute force; the
// objective's incremental state is checked against evaluation from scratch.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "memaudit/bounds.hpp"
#include "memaudit/cuts.hpp"
#include "memaudit/mir_cuts.hpp"
#include "memaudit/objective.hpp"
#include "memaudit/reduction.hpp"
#include "memaudit/solver.hpp"
#include "memaudit/warm_start.hpp"

using namespace memaudit;

std::pair<int, int> package_scan_tests();  // test_package_scan.cpp: (checks, failures)

namespace {

int failures = 0;
int checks = 0;

void check(bool ok, const char* what, int seed) {
    ++checks;
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s (seed %d)\n", what, seed);
        ++failures;
    }
}

Problem random_problem(std::mt19937& rng, int max_candidates) {
    std::uniform_int_distribution<int> n_dist(1, max_candidates), unit_dist(1, 6), sat_dist(0, 3);
    std::uniform_real_distribution<double> unif(0.0, 1.0);
    Problem p;
    p.num_candidates = n_dist(rng);
    p.num_units = unit_dist(rng);
    p.num_groups = std::uniform_int_distribution<int>(1, p.num_candidates)(rng);
    Saturation sat;
    sat.kind = static_cast<SaturationKind>(sat_dist(rng));
    if (sat.kind == SaturationKind::Pwl) {
        sat.z = {0.0, 0.5, 1.5};
        sat.h = {0.0, 0.8, 1.2};
    }
    p.saturations.push_back(sat);
    p.indptr.push_back(0);
    for (int u = 0; u < p.num_candidates; ++u) {
        p.cost.push_back(std::floor(unif(rng) * 4.0));
        p.group_of.push_back(std::uniform_int_distribution<int>(0, p.num_groups - 1)(rng));
        for (int r = 0; r < p.num_units; ++r) {
            if (unif(rng) < 0.4) {
                p.indices.push_back(r);
                p.values.push_back(unif(rng) < 0.5 ? 1.0 : 0.5);
            }
        }
        p.indptr.push_back(static_cast<std::int64_t>(p.indices.size()));
    }
    for (int r = 0; r < p.num_units; ++r) {
        p.weight.push_back(std::floor(unif(rng) * 3.0));
        p.saturation_of.push_back(0);
    }
    p.validate();
    return p;
}

double brute_force(const Problem& p, double budget) {
    double best = 0.0;
    const int n = p.num_candidates;
    for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
        std::vector<int> used(p.num_groups, 0);
        std::vector<std::int32_t> store;
        double cost = 0.0;
        bool ok = true;
        for (int u = 0; u < n && ok; ++u) {
            if (!(mask >> u & 1u)) continue;
            if (used[p.group_of[u]]++) ok = false;
            cost += p.cost[u];
            store.push_back(u);
        }
        if (!ok || cost > budget + 1e-9) continue;
        best = std::max(best, objective_value(p, store.data(), store.size()));
    }
    return best;
}

// The multiple-choice knapsack LP against its definition: every group's upper hull
// increments sorted by ratio and taken while they fit, then a fraction of the next.
void check_knapsack_lp(std::mt19937& rng, int seed) {
    std::uniform_int_distribution<int> groups_dist(1, 40), items_dist(1, 5), cost_dist(0, 6), profit_dist(-2, 9);
    std::uniform_int_distribution<int> tie_dist(0, 1);
    const bool ties = tie_dist(rng) == 1; // integer data: many equal ratios
    struct Inc { double ratio, cost, profit; };
    std::vector<Inc> incs;
    double base = 0.0, total_cost = 0.0;
    MultipleChoiceKnapsackLP lp;
    const int groups = groups_dist(rng);
    for (int g = 0; g < groups; ++g) {
        std::vector<std::pair<double, double>> items(static_cast<std::size_t>(items_dist(rng)));
        for (auto& [c, pr] : items) {
            c = cost_dist(rng) + (ties ? 0.0 : std::uniform_real_distribution<double>(0.0, 1.0)(rng));
            pr = profit_dist(rng) + (ties ? 0.0 : std::uniform_real_distribution<double>(0.0, 1.0)(rng));
        }
        std::sort(items.begin(), items.end());
        for (const auto& [c, pr] : items) lp.add(static_cast<std::int32_t>(g), c, pr);
        lp.close_group();
        // Reference hull: the best profit at each cost, then the upper concave chain.
        std::vector<std::pair<double, double>> hull{{0.0, 0.0}};
        for (const auto& [c, pr] : items) {
            if (!(pr > hull.back().second)) continue;
            if (c <= hull.back().first) {
                hull.back() = {c, pr};
                if (hull.size() == 1) continue;
            }
            while (hull.size() >= 2) {
                const auto& a = hull[hull.size() - 2];
                const auto& b = hull.back();
                if ((b.second - a.second) / (b.first - a.first) > (pr - b.second) / (c - b.first)) break;
                hull.pop_back();
            }
            if (hull.back().first != c) hull.emplace_back(c, pr);
        }
        base += hull.front().second;
        for (std::size_t h = 1; h < hull.size(); ++h) {
            const double dc = hull[h].first - hull[h - 1].first, dp = hull[h].second - hull[h - 1].second;
            incs.push_back({dp / dc, dc, dp});
            total_cost += dc;
        }
    }
    std::stable_sort(incs.begin(), incs.end(), [](const Inc& a, const Inc& b) { return a.ratio > b.ratio; });
    for (double share : {0.0, 0.1, 0.35, 0.7, 1.0, 1.5}) {
        const double capacity = std::floor(share * total_cost);
        double remaining = capacity, value = base, price = 0.0;
        for (const auto& inc : incs) {
            if (inc.cost <= remaining) {
                remaining -= inc.cost;
                value += inc.profit;
            } else {
                value += remaining / inc.cost * inc.profit;
                price = inc.ratio;
                break;
            }
        }
        const double got = lp.solve(capacity);
        check(std::fabs(got - value) <= 1e-9 * std::max(1.0, std::fabs(value)), "knapsack LP value", seed);
        check(std::fabs(lp.price() - price) <= 1e-12 * std::max(1.0, price), "knapsack LP critical ratio", seed);
        check(lp.dual_value() + 1e-9 * std::max(1.0, std::fabs(value)) >= got, "knapsack LP dual bounds it", seed);
        double x_cost = 0.0;
        for (std::size_t g = 0; g < lp.num_groups(); ++g) {
            double x_sum = 0.0;
            for (std::size_t i = lp.item_begin(g); i < lp.item_end(g); ++i) {
                x_sum += lp.item_x(i);
                x_cost += lp.item_x(i) * lp.item_cost(i);
            }
            check(x_sum <= 1.0 + 1e-12, "knapsack LP takes at most one per group", seed);
        }
        check(x_cost <= capacity + 1e-9 * std::max(1.0, capacity), "knapsack LP fits", seed);
    }
}


} // namespace

int main() {
    // Objective: incremental add/remove agrees with evaluation from scratch.
    for (int seed = 0; seed < 200; ++seed) {
        std::mt19937 rng(seed);
        Problem p = random_problem(rng, 12);
        CoverageState state(p);
        std::vector<std::int32_t> store;
        for (std::int32_t u = 0; u < p.num_candidates; u += 2) {
            const double gain = state.marginal_gain(u);
            const double before = state.value();
            state.add(u);
            store.push_back(u);
            check(std::fabs(state.value() - before - gain) < 1e-9, "marginal gain", seed);
        }
        check(std::fabs(state.value() - objective_value(p, store.data(), store.size())) < 1e-9, "incremental value", seed);
        for (auto u : store) state.remove(u);
        check(std::fabs(state.value()) < 1e-9, "remove all", seed);
    }

    // Solver: exact against brute force on every saturation, several budgets in one sweep.
    for (int seed = 0; seed < 300; ++seed) {
        std::mt19937 rng(1000 + seed);
        Problem p = random_problem(rng, 11);
        const std::vector<double> budgets = {0.0, 1.0, 3.0, 6.0};
        const auto results = solve_budgets(p, budgets);
        SolveOptions with_cuts; // relax-and-cut at every size (by default from 400 candidates)
        with_cuts.cut_min_candidates = 0;
        const auto cut_results = solve_budgets(p, budgets, with_cuts);
        for (std::size_t k = 0; k < budgets.size(); ++k) {
            const double opt = brute_force(p, budgets[k]);
            check(cut_results[k].status == SolveStatus::Optimal, "status optimal (cuts)", seed);
            check(std::fabs(cut_results[k].value - opt) <= 1e-9 * std::max(1.0, opt), "value equals brute force (cuts)", seed);
            check(cut_results[k].root_bound + 1e-9 >= opt, "root bound with cuts >= OPT", seed);
            check(results[k].status == SolveStatus::Optimal, "status optimal", seed);
            check(std::fabs(results[k].value - opt) <= 1e-9 * std::max(1.0, opt), "value equals brute force", seed);
            check(results[k].upper_bound + 1e-9 >= opt, "upper bound", seed);
            check(results[k].cost <= budgets[k] + 1e-9, "cost within budget", seed);
        }
    }

    // Coverage cuts: separated at random fractional points, every cut holds for every store
    // of the reduced problem (brute force over all group-feasible stores).
    for (int seed = 0; seed < 300; ++seed) {
        std::mt19937 rng(5000 + seed);
        Problem p = random_problem(rng, 10);
        for (auto& s : p.saturations) s = Saturation{}; // cap1: the family's saturation
        const ReducedProblem rp = reduce(p);
        std::uniform_int_distribution<int> quarter(0, 4);
        std::vector<double> x(static_cast<std::size_t>(rp.num_candidates));
        for (auto& v : x) v = 0.25 * quarter(rng);
        CoverageCut cut;
        for (std::int32_t r = 0; r < rp.num_units; ++r)
            for (int family = 0; family < 4; ++family) {
                const bool separated = family == 0   ? separate_coverage_cut(rp, r, x, 1e-9, &cut)
                                       : family == 3 ? separate_pair_cut(rp, r, x, 1e-9, &cut)
                                                     : separate_reach_cut(rp, r, x, 1e-9, &cut, family == 2);
                if (!separated) continue;
                std::vector<double> coef(static_cast<std::size_t>(rp.num_candidates), 0.0);
                for (std::size_t j = 0; j < cut.candidates.size(); ++j) coef[cut.candidates[j]] = cut.coefficients[j];
                const int n = rp.num_candidates;
                for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
                    std::vector<int> used(static_cast<std::size_t>(rp.num_groups), 0);
                    bool ok = true;
                    double z = 0.0, rhs = cut.intercept;
                    for (int u = 0; u < n && ok; ++u) {
                        if (!(mask >> u & 1u)) continue;
                        if (used[rp.group_of[u]]++) ok = false;
                        for (auto k = rp.indptr[u]; k < rp.indptr[u + 1]; ++k)
                            if (rp.indices[k] == r) z += rp.values[k];
                        rhs += coef[u];
                    }
                    if (ok) check(std::min(rp.cap[r], z) <= rhs + 1e-9, "coverage cut holds for every store", seed);
                }
            }
    }

    // Local improvement: from a greedy store, a feasible store no worse than the start that
    // no single swap improves (checked exhaustively: remove s, insert any u that then fits).
    for (int seed = 0; seed < 300; ++seed) {
        std::mt19937 rng(9000 + seed);
        Problem p = random_problem(rng, 30);
        const ReducedProblem rp = reduce(p);
        const double limit = budget_limit(std::uniform_int_distribution<int>(1, 12)(rng));
        WarmStart warm(rp, limit, 1'000'000'000);
        const Store start = warm.greedy_by_gain();
        const Store out = warm.improve(start);
        std::vector<int> used(static_cast<std::size_t>(rp.num_groups), 0);
        double cost = 0.0;
        bool groups_ok = true;
        for (auto u : out.candidates) {
            groups_ok = groups_ok && used[rp.group_of[u]]++ == 0;
            cost += rp.cost[u];
        }
        check(groups_ok && cost <= limit, "improved store is feasible", seed);
        check(out.value + 1e-12 >= start.value, "improved store is no worse", seed);
        check(std::fabs(out.value - rp.value_of(out.candidates)) <= 1e-9, "improved store's value", seed);
        const double eps = 1e-9 * std::max(1.0, out.value);
        bool local_optimum = true;
        for (std::size_t i = 0; i < out.candidates.size() && local_optimum; ++i) {
            for (std::int32_t u = 0; u < rp.num_candidates && local_optimum; ++u) {
                if (std::find(out.candidates.begin(), out.candidates.end(), u) != out.candidates.end()) continue;
                std::vector<std::int32_t> swapped = out.candidates;
                swapped[i] = u;
                bool ok = true;
                std::vector<int> seen(static_cast<std::size_t>(rp.num_groups), 0);
                double c = 0.0;
                for (auto v : swapped) {
                    ok = ok && seen[rp.group_of[v]]++ == 0;
                    c += rp.cost[v];
                }
                if (ok && c <= limit && rp.value_of(swapped) > out.value + eps) local_optimum = false;
            }
        }
        check(local_optimum, "no single swap improves the improved store", seed);
    }

    // Limits: a node limit of 1 on a larger problem is honest about what it proved.
    {
        std::mt19937 rng(7);
        Problem p = random_problem(rng, 60);
        SolveOptions options;
        options.node_limit = 1;
        const auto limited = solve_budgets(p, {5.0}, options);
        const auto full = solve_budgets(p, {5.0});
        check(limited[0].upper_bound + 1e-9 >= full[0].value, "limited bound >= optimum", 7);
        check(limited[0].value <= full[0].value + 1e-9, "limited value <= optimum", 7);
    }

    // Concurrency: the same problem solved from several threads gives identical results.
    {
        std::mt19937 rng(11);
        Problem p = random_problem(rng, 40);
        const auto reference = solve_budgets(p, {2.0, 5.0, 9.0});
        std::vector<std::thread> threads;
        std::atomic<int> mismatches{0};
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&] {
                for (int i = 0; i < 5; ++i) {
                    const auto again = solve_budgets(p, {2.0, 5.0, 9.0});
                    for (std::size_t k = 0; k < again.size(); ++k)
                        if (again[k].value != reference[k].value || again[k].selected != reference[k].selected)
                            ++mismatches;
                }
            });
        }
        for (auto& th : threads) th.join();
        check(mismatches.load() == 0, "threads agree", 11);
    }

    // Bad input is an exception, never a crash.
    {
        Problem p;
        p.num_candidates = 1;
        p.cost = {-1.0};
        bool threw = false;
        try {
            p.validate();
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        check(threw, "invalid problem throws", 0);
    }

    // Local search's fill (a scan per step) and the greedy's (a heap) give the same store.
    for (int seed = 0; seed < 300; ++seed) {
        std::mt19937 rng(seed);
        Problem p = random_problem(rng, 40);
        const ReducedProblem rp = reduce(p);
        double total = 0.0;
        for (auto c : rp.cost) total += c;
        for (double share : {0.2, 0.5, 0.9}) {
            WarmStart ws(rp, budget_limit(share * total));
            Store start = ws.greedy_by_density();
            std::vector<std::int32_t> kept;
            for (auto u : start.candidates)
                if (rng() % 3 != 0) kept.push_back(u);
            start.candidates = kept;
            const Store a = ws.filled(start, false), b = ws.filled(start, true);
            check(a.candidates == b.candidates && a.value == b.value, "both fills give the same store", seed);
        }
    }

    // The multiple-choice knapsack LP of every bound.
    for (int seed = 0; seed < 300; ++seed) {
        std::mt19937 rng(seed);
        check_knapsack_lp(rng, seed);
    }

    // c-MIR cuts of random rows (mir_cuts.hpp): lattice columns of steps 1, 0.5 and 0.25 and at
    // most one continuous column; every cut holds at every lattice point of its row, the
    // continuous column at both ends of the interval the row leaves it.
    for (int seed = 0; seed < 2000; ++seed) {
        std::mt19937 rng(9000 + seed);
        std::uniform_int_distribution<int> count(1, 5), kind(0, 4), pick(0, 11);
        const double coefficients[] = {-2.0, -1.0, -0.75, -0.5, -0.3, -0.25, 0.25, 0.3, 0.5, 0.7, 1.0, 1.5};
        const double steps[] = {1.0, 1.0, 0.5, 0.25};
        const int n = count(rng);
        MirColumns cols;
        std::vector<std::int32_t> columns;
        std::vector<double> values;
        int continuous = -1;
        for (int j = 0; j < n; ++j) {
            const int k = kind(rng);
            const bool is_continuous = k == 4 && continuous < 0;
            const double step = is_continuous ? 0.0 : steps[k % 4];
            const double upper = is_continuous ? 1.5 : step * (1 + pick(rng) % 3);
            if (is_continuous) continuous = j;
            cols.lower.push_back(0.0);
            cols.upper.push_back(upper);
            cols.step.push_back(step);
            cols.point.push_back(upper * std::uniform_real_distribution<double>(0.0, 1.0)(rng));
            columns.push_back(j);
            values.push_back(coefficients[pick(rng)]);
        }
        const double b = 0.25 * (pick(rng) - 3);
        MirCut cut;
        if (!separate_mir_cut(columns, values, b, cols, 1e-9, &cut)) continue;
        std::vector<double> g(static_cast<std::size_t>(n), 0.0);
        for (std::size_t k = 0; k < cut.columns.size(); ++k) g[cut.columns[k]] = cut.coefficients[k];
        double at_point = 0.0, norm = 0.0;
        for (int j = 0; j < n; ++j) at_point += g[j] * cols.point[j], norm += g[j] * g[j];
        check(at_point - cut.rhs > 0.0 && std::fabs((at_point - cut.rhs) / std::sqrt(norm) - cut.efficacy) < 1e-9,
              "c-MIR cut violated at its point by its efficacy", seed);
        // Every lattice point: index k counts steps per lattice column.
        std::vector<int> at(static_cast<std::size_t>(n), 0);
        for (;;) {
            double fixed = 0.0, left = 0.0;
            for (int j = 0; j < n; ++j)
                if (j != continuous) fixed += values[j] * at[j] * cols.step[j], left += g[j] * at[j] * cols.step[j];
            if (continuous < 0) {
                if (fixed <= b + 1e-12) check(left <= cut.rhs + 1e-9, "c-MIR cut holds (lattice)", seed);
            } else {
                const double a = values[continuous];
                double lo = 0.0, hi = cols.upper[continuous];
                if (a > 0) hi = std::min(hi, (b - fixed) / a);
                else lo = std::max(lo, (b - fixed) / a);
                if (lo <= hi + 1e-12)
                    for (double w : {lo, hi})
                        check(left + g[continuous] * w <= cut.rhs + 1e-9, "c-MIR cut holds (mixed)", seed);
            }
            int j = 0;
            for (; j < n; ++j) {
                if (j == continuous) continue;
                if (++at[j] * cols.step[j] <= cols.upper[j] + 1e-12) break;
                at[j] = 0;
            }
            if (j == n) break;
        }
    }

    // The package scanner (test_package_scan.cpp).
    const std::pair<int, int> scan = package_scan_tests();
    checks += scan.first;
    failures += scan.second;

    // One line per check would be noise; the closing line counts checks.
    std::printf("%d passed, %d failed\n", checks - failures, failures);
    return failures == 0 ? 0 : 1;
}
