#include "memaudit/solver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "memaudit/reduction.hpp"
#include "memaudit/search.hpp"
#include "memaudit/warm_start.hpp"

namespace memaudit {

const char* status_name(SolveStatus status) {
    switch (status) {
    case SolveStatus::Optimal:
        return "optimal";
    case SolveStatus::TimeLimit:
        return "time_limit";
    case SolveStatus::NodeLimit:
        return "node_limit";
    case SolveStatus::Interrupted:
        return "interrupted";
    }
    return "unknown";
}

namespace {

Clock::time_point deadline_after(Clock::time_point start, double seconds) {
    if (!(seconds < 1e9)) return Clock::time_point::max();
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)));
}

// OPT lies on the lattice granularity * Z, so a proven bound rounds down to it. `slack`
// (half the search tolerance) absorbs rounding in the bound arithmetic; the search prunes at
// incumbent + granularity - tol, so a completed search rounds to the incumbent. Skipped when
// the step is too fine next to the tolerance, exactly as the search skips it.
double on_lattice(double bound, double granularity, double tol) {
    if (!(granularity > 1e3 * tol)) return bound;
    return granularity * std::floor((bound + 0.5 * tol) / granularity);
}

// Whether the caller asked the whole solve to stop (not one budget: budget_stop, a progress
// callback's true and the limits end only the budget they concern).
bool stop_asked(const SolveOptions& options) {
    if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) return true;
    return options.poll && options.poll();
}

} // namespace

void check_solve_inputs(const std::vector<double>& budgets, const SolveOptions& options) {
    for (double b : budgets)
        if (!std::isfinite(b) || b < 0.0) throw std::invalid_argument("budgets must be finite and >= 0");
    if (std::isnan(options.time_limit) || options.time_limit < 0.0)
        throw std::invalid_argument("time_limit must be >= 0");
    if (options.node_limit < 0) throw std::invalid_argument("node_limit must be >= 0");
    if (!(options.relative_tolerance >= 0.0) || !std::isfinite(options.relative_tolerance))
        throw std::invalid_argument("relative_tolerance must be finite and >= 0");
    if (!(options.poll_interval > 0.0)) throw std::invalid_argument("poll_interval must be > 0");
    if (!(options.progress_interval > 0.0)) throw std::invalid_argument("progress_interval must be > 0");
    if (!(options.progress_first >= 0.0) || !std::isfinite(options.progress_first))
        throw std::invalid_argument("progress_first must be finite and >= 0");
    for (auto u : options.start)
        if (u < 0) throw std::invalid_argument("start holds a negative candidate index");
    if (options.cut_rounds < 0) throw std::invalid_argument("cut_rounds must be >= 0");
    if (options.root_iterations < 0 || options.node_iterations < 1)
        throw std::invalid_argument("root_iterations must be >= 0 (0: automatic) and node_iterations >= 1");
}

std::vector<SolveResult> solve_budgets(const Problem& problem, const std::vector<double>& budgets,
                                       const SolveOptions& options) {
    check_solve_inputs(budgets, options);

    auto clock_start = Clock::now();
    const ReducedProblem reduced = reduce(problem);
    std::vector<double> lambda(static_cast<std::size_t>(reduced.num_units), 1.0);
    const double granularity = objective_granularity(reduced);

    std::vector<std::size_t> order(budgets.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return budgets[a] < budgets[b]; });

    // The caller's start store in reduced indices (candidates removed by the reductions are
    // left out: the store stays feasible, and the reductions keep OPT).
    std::vector<std::int32_t> to_reduced(static_cast<std::size_t>(problem.num_candidates), -1);
    for (std::int32_t u = 0; u < reduced.num_candidates; ++u) to_reduced[reduced.original[u]] = u;
    std::vector<std::int32_t> start_store;
    for (auto u : options.start)
        if (u >= 0 && u < problem.num_candidates && to_reduced[u] >= 0) start_store.push_back(to_reduced[u]);

    std::vector<SolveResult> results(budgets.size());
    Store previous; // optimum (or incumbent) of the previous, smaller budget
    double everything = -1.0; // F(all candidates), once needed
    for (auto index : order) {
        const double budget = budgets[index];
        if (index != order.front() && stop_asked(options)) { // the first budget's search polls itself
            // Ctrl-C, the cancel token or a failed callback ends the sweep: a budget not begun
            // is not searched (its warm start and root alone took seconds on large packages).
            // It keeps the last budget's store (smaller, so it fits) and the bound F(every
            // candidate), which holds since F is monotone.
            if (everything < 0.0) {
                std::vector<std::int32_t> all(static_cast<std::size_t>(problem.num_candidates));
                std::iota(all.begin(), all.end(), std::int32_t{0});
                everything = objective_value(problem, all.data(), all.size());
            }
            SolveResult& res = results[index];
            res.budget = budget;
            res.status = SolveStatus::Interrupted;
            for (auto u : previous.candidates) res.selected.push_back(reduced.original[u]);
            std::sort(res.selected.begin(), res.selected.end());
            res.value = objective_value(problem, res.selected.data(), res.selected.size());
            for (auto u : res.selected) res.cost += problem.cost[u];
            res.upper_bound = res.root_bound = std::max(everything, res.value);
            res.gap = res.upper_bound > 0.0 ? std::max(0.0, (res.upper_bound - res.value) / res.upper_bound) : 0.0;
            res.reduced_candidates = reduced.num_candidates;
            continue;
        }
        SearchLimits limits;
        limits.deadline = deadline_after(clock_start, options.time_limit);
        limits.node_limit = options.node_limit;
        limits.relative_tolerance = options.relative_tolerance;
        limits.granularity = granularity;
        limits.cancel = options.cancel;
        limits.poll = options.poll;
        limits.poll_interval = options.poll_interval;
        limits.root_iterations = options.root_iterations;
        limits.node_iterations = options.node_iterations;
        limits.cut_rounds = options.cut_rounds;
        limits.cut_min_candidates = options.cut_min_candidates;
        if (options.progress) {
            // The log speaks of the caller's candidates, not of the reduced problem's.
            limits.progress = [&options, &reduced](const SearchProgress& line) {
                SearchProgress out = line;
                for (auto& u : out.incumbent_store) u = reduced.original[u];
                for (auto& u : out.open_candidates) u = reduced.original[u];
                std::sort(out.incumbent_store.begin(), out.incumbent_store.end());
                std::sort(out.open_candidates.begin(), out.open_candidates.end());
                return options.progress(out);
            };
        }
        limits.progress_interval = options.progress_interval;
        limits.progress_first = options.progress_first;
        limits.stop_budget = options.stop_budget;
        limits.external_bound = options.external_bound;
        if (options.shared_incumbent) {
            limits.on_incumbent = [&options, &reduced, budget](const std::vector<std::int32_t>& store, double value) {
                std::vector<std::int32_t> out(store.size());
                for (std::size_t k = 0; k < store.size(); ++k) out[k] = reduced.original[store[k]];
                std::sort(out.begin(), out.end());
                options.shared_incumbent->set(budget, value, out);
            };
        }

        WarmStart warm(reduced, budget_limit(budget));
        const Store start = warm.best(previous);
        BranchAndBound search(reduced, budget, lambda, limits);
        search.offer(start.candidates);
        if (!start_store.empty()) search.offer(start_store);
        // Polishing during the search gets a small work cap: it runs on every new incumbent.
        const std::int64_t size = static_cast<std::int64_t>(reduced.indices.size()) + reduced.num_candidates;
        WarmStart polisher(reduced, budget_limit(budget), 20 * size);
        search.set_polisher(&polisher);
        const SearchOutcome outcome = search.run();

        SolveResult& res = results[index];
        res.budget = budget;
        res.status = outcome.status;
        res.nodes = outcome.nodes;
        res.external_bound_used = outcome.external_bound_used;
        res.reduced_candidates = reduced.num_candidates;
        for (auto u : outcome.store) res.selected.push_back(reduced.original[u]);
        // A completed search leaves nothing open: no store beats the optimum.
        if (outcome.status != SolveStatus::Optimal)
            for (auto u : outcome.open_candidates) res.open_candidates.push_back(reduced.original[u]);
        std::sort(res.open_candidates.begin(), res.open_candidates.end());
        std::sort(res.selected.begin(), res.selected.end());
        res.value = objective_value(problem, res.selected.data(), res.selected.size());
        for (auto u : res.selected) res.cost += problem.cost[u];
        const double tol = options.relative_tolerance * std::max(1.0, std::abs(outcome.value));
        res.upper_bound = std::max(on_lattice(outcome.upper_bound, granularity, tol), res.value);
        res.root_bound = std::max(on_lattice(outcome.root_bound, granularity, tol), res.upper_bound);
        res.gap = res.upper_bound > 0.0 ? std::max(0.0, (res.upper_bound - res.value) / res.upper_bound) : 0.0;
        previous.candidates = outcome.store;
        previous.value = outcome.value;
        const auto now = Clock::now();
        res.seconds = std::chrono::duration<double>(now - clock_start).count();
        clock_start = now;
    }
    return results;
}

} // namespace memaudit
