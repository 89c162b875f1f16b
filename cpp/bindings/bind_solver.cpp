// Python bindings of the exact solver: inputs are checked holding the GIL, the search runs
// without it, and Ctrl-C or a CancelToken stops it with status "interrupted".
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "memaudit/cuts.hpp"
#include "memaudit/reduction.hpp"
#include "memaudit/solver.hpp"

namespace py = pybind11;
using namespace memaudit;

namespace {

// Shared so a token outlives every solve that watches it, whichever thread drops it last.
struct CancelToken {
    std::shared_ptr<std::atomic<bool>> flag = std::make_shared<std::atomic<bool>>(false);
};

// The budget whose search must stop, set by another thread without the GIL being needed by
// the search (a race against another solver polls nothing).
struct BudgetStop {
    std::shared_ptr<std::atomic<double>> budget =
        std::make_shared<std::atomic<double>>(std::numeric_limits<double>::quiet_NaN());
    // An upper bound on OPT of one budget proven elsewhere, for the search to prune with.
    std::shared_ptr<ExternalBound> bound = std::make_shared<ExternalBound>();
    // The search's best store of the budget it is on, for the thread racing it.
    std::shared_ptr<SharedIncumbent> incumbent = std::make_shared<SharedIncumbent>();
};

std::string result_repr(const SolveResult& r) {
    std::ostringstream out;
    out.precision(12);
    out << "SolveResult(budget=" << r.budget << ", status='" << status_name(r.status) << "', value=" << r.value
        << ", upper_bound=" << r.upper_bound << ", gap=" << r.gap << ", selected=" << r.selected.size()
        << " candidates, cost=" << r.cost << ", nodes=" << r.nodes << ", seconds=" << r.seconds << ")";
    return out.str();
}

} // namespace

void register_solver(py::module_& m) {
    // The one budget slack: a store fits when its cost sum is at most B + COST_SLACK * max(1, B).
    m.attr("COST_SLACK") = kBudgetSlack;
    py::class_<CancelToken>(m, "CancelToken",
                            "A flag any thread may set to stop the solves watching it (status 'interrupted').")
        .def(py::init<>())
        .def("cancel", [](CancelToken& t) { t.flag->store(true); }, "Ask every solve watching this token to stop.")
        .def("reset", [](CancelToken& t) { t.flag->store(false); }, "Clear the flag so the token can be reused.")
        .def_property_readonly("cancelled", [](const CancelToken& t) { return t.flag->load(); });
    py::class_<BudgetStop>(m, "BudgetStop",
                           "Names, from any thread, the one budget whose search must stop (status 'time_limit').")
        .def(py::init<>())
        .def("stop", [](BudgetStop& s, double budget) { s.budget->store(budget); }, py::arg("budget"),
             "Stop the search of ``budget`` (of every solve watching this object) at its next check.")
        .def_property_readonly("budget", [](const BudgetStop& s) { return s.budget->load(); })
        .def("share", [](BudgetStop& s, double budget, double share) { s.bound->set_share(budget, share); },
             py::arg("budget"), py::arg("share"),
             "Let the search of ``budget`` use only ``share`` (in (0, 1]) of its thread's time, "
             "asleep the rest, while other solvers want the cores; 1 lifts it. Its results are "
             "the same, later.")
        .def("share_of", [](const BudgetStop& s, double budget) { return s.bound->share(budget); },
             py::arg("budget"), "The share of its time the search of ``budget`` may use (1: all).")
        .def("bound", [](BudgetStop& s, double budget, double bound) { s.bound->set(budget, bound); },
             py::arg("budget"), py::arg("bound"),
             "Hand the search of ``budget`` an upper bound on its OPT proven elsewhere: it prunes "
             "with it, and a result whose proof used it says so (``external_bound_used``). A bound "
             "that is not proven makes a wrong proof.")
        .def("bound_of", [](const BudgetStop& s, double budget) { return s.bound->get(budget); },
             py::arg("budget"), "The bound handed for ``budget`` (inf: none).")
        .def(
            "incumbent_of",
            [](const BudgetStop& s, double budget) -> py::object {
                double value = 0.0;
                std::vector<std::int32_t> store;
                if (!s.incumbent->get(budget, value, store)) return py::none();
                return py::make_tuple(value, py::cast(store));
            },
            py::arg("budget"),
            "The best store the search of ``budget`` has found so far, as (value, package candidate "
            "indices), or None before its first store (or once the search moved to another budget).");

    py::class_<SolveResult>(m, "SolveResult", "Outcome of one budget: incumbent, proven bound, status.")
        .def_readonly("budget", &SolveResult::budget)
        .def_property_readonly("status", [](const SolveResult& r) { return std::string(status_name(r.status)); })
        .def_property_readonly("proven_optimal", &SolveResult::proven_optimal)
        .def_readonly("value", &SolveResult::value)
        .def_readonly("upper_bound", &SolveResult::upper_bound)
        .def_readonly("gap", &SolveResult::gap)
        .def_property_readonly("selected",
                               [](const SolveResult& r) {
                                   py::array_t<std::int32_t> out(static_cast<py::ssize_t>(r.selected.size()));
                                   std::copy(r.selected.begin(), r.selected.end(), out.mutable_data());
                                   return out;
                               })
        .def_readonly("cost", &SolveResult::cost)
        .def_readonly("nodes", &SolveResult::nodes)
        .def_readonly("seconds", &SolveResult::seconds)
        .def_readonly("root_bound", &SolveResult::root_bound)
        .def_readonly("reduced_candidates", &SolveResult::reduced_candidates)
        .def_readonly("external_bound_used", &SolveResult::external_bound_used)
        .def_property_readonly("open_candidates",
                               [](const SolveResult& r) {
                                   return py::array_t<std::int32_t>(static_cast<py::ssize_t>(r.open_candidates.size()),
                                                                    r.open_candidates.data());
                               })
        .def("__repr__", &result_repr);

    // Cut families, exposed for validity tests: (kept, cuts), each cut (unit, intercept,
    // candidates, coefficients) in the Problem's own indices. A store X of kept candidates
    // (those the exact reductions leave: the search space) satisfies
    // h_r(z_r(X)) <= intercept + sum coef.
    m.def(
        "coverage_cut_family",
        [](const Problem& problem) {
            const ReducedProblem reduced = reduce(problem);
            py::list out;
            for (std::int32_t r = 0; r < reduced.num_units; ++r) {
                if (!coverage_cut_unit(reduced, r)) continue;
                // lambda = 0 (a cut with a lifted group only), 1/2, the entries' breakpoints and
                // M_G / kappa for every group G covering the unit.
                std::vector<double> lambdas{0.0, 0.5};
                std::vector<std::int32_t> groups{-1};
                std::vector<std::pair<std::int32_t, double>> largest; // (group, its largest entry)
                double reach = 0.0;
                for (auto c = reduced.unit_ptr[r]; c < reduced.unit_ptr[r + 1]; ++c) {
                    const auto v = reduced.unit_candidates[c];
                    groups.push_back(reduced.group_of[v]);
                    for (auto k = reduced.indptr[v]; k < reduced.indptr[v + 1]; ++k) {
                        if (reduced.indices[k] != r) continue;
                        const double f = std::min(reduced.values[k], reduced.cap[r]) / reduced.cap[r];
                        largest.emplace_back(reduced.group_of[v], f * reduced.cap[r]);
                        if (f > 0.0 && f < 1.0) {
                            lambdas.push_back(f);
                            lambdas.push_back(1.0 - f);
                        }
                    }
                }
                std::sort(largest.begin(), largest.end());
                for (std::size_t i = 0; i < largest.size(); ++i)
                    if (i + 1 == largest.size() || largest[i + 1].first != largest[i].first) reach += largest[i].second;
                for (std::size_t i = 0; i < largest.size(); ++i)
                    if (i + 1 == largest.size() || largest[i + 1].first != largest[i].first) {
                        const double f = (reach - largest[i].second) / reduced.cap[r];
                        if (f > 0.0 && f < 1.0) lambdas.push_back(f);
                    }
                for (double lambda : lambdas)
                    for (auto g : groups) {
                        if (lambda == 0.0 && g < 0) continue; // y <= kappa
                        const CoverageCut cut = make_coverage_cut(reduced, r, lambda, g);
                        std::vector<std::int32_t> candidates;
                        for (auto v : cut.candidates) candidates.push_back(reduced.original[v]);
                        out.append(py::make_tuple(reduced.original_unit[r], cut.intercept, candidates, cut.coefficients));
                    }
            }
            return py::make_tuple(reduced.original, out);
        },
        py::arg("problem"), "Every coverage cut of the family (cuts.hpp) at the breakpoints of each cap1 unit.");
    m.def(
        "separate_coverage_cuts",
        [](const Problem& problem, const std::vector<double>& x, bool pairs) {
            const ReducedProblem reduced = reduce(problem);
            if (x.size() != static_cast<std::size_t>(problem.num_candidates))
                throw std::invalid_argument("x needs one value per candidate");
            std::vector<double> xr(static_cast<std::size_t>(reduced.num_candidates));
            for (std::int32_t u = 0; u < reduced.num_candidates; ++u) xr[u] = x[reduced.original[u]];
            py::list out;
            CoverageCut cut;
            for (std::int32_t r = 0; r < reduced.num_units; ++r)
                for (int family = 0; family < (pairs ? 3 : 2); ++family) {
                    const bool separated = family == 0   ? separate_coverage_cut(reduced, r, xr, 1e-9, &cut)
                                           : family == 1 ? separate_reach_cut(reduced, r, xr, 1e-9, &cut, true)
                                                         : separate_pair_cut(reduced, r, xr, 1e-9, &cut);
                    if (!separated) continue;
                    std::vector<std::int32_t> candidates;
                    for (auto v : cut.candidates) candidates.push_back(reduced.original[v]);
                    out.append(py::make_tuple(reduced.original_unit[r], cut.intercept, candidates, cut.coefficients));
                }
            return py::make_tuple(reduced.original, out);
        },
        py::arg("problem"), py::arg("x"), py::arg("pairs") = true,
        "The most violated cut of each family (cuts.hpp; the second over single candidates too; the third, over two "
        "groups, unless pairs is False) of each unit at a fractional x.");

    m.def(
        "objective_granularity", [](const Problem& problem) { return objective_granularity(reduce(problem)); },
        py::arg("problem"),
        "The largest delta > 0 with F(X) in delta * Z for every store X (0: none known), as the search "
        "uses it to prune: a bound below incumbent + delta proves the incumbent.");

    py::class_<SearchProgress>(m, "SolveProgress", "One line of the solver log (see solve(progress=...)).")
        .def_readonly("budget", &SearchProgress::budget)
        .def_readonly("nodes", &SearchProgress::nodes)
        .def_readonly("incumbent", &SearchProgress::incumbent)
        .def_readonly("upper_bound", &SearchProgress::upper_bound)
        .def_readonly("gap", &SearchProgress::gap)
        .def_readonly("seconds", &SearchProgress::seconds)
        .def_readonly("root_done", &SearchProgress::root_done)
        .def_readonly("incumbent_store", &SearchProgress::incumbent_store,
                      "Candidate indices of the incumbent store.")
        .def_readonly("open_candidates", &SearchProgress::open_candidates,
                      "Once the root is done, the candidate indices any better store must be made of (empty before).");

    m.def(
        "solve",
        [](const Problem& problem, const std::vector<double>& budgets, std::optional<double> time_limit,
           std::optional<std::int64_t> node_limit, std::optional<CancelToken> cancel, double relative_tolerance,
           int root_iterations, int node_iterations, std::vector<std::int32_t> start,
           std::optional<py::function> progress, double progress_interval, int cut_rounds,
           std::int32_t cut_min_candidates, double progress_first, std::optional<BudgetStop> budget_stop) {
            SolveOptions options;
            if (time_limit) options.time_limit = *time_limit;
            if (node_limit) options.node_limit = *node_limit;
            options.relative_tolerance = relative_tolerance;
            options.root_iterations = root_iterations;
            options.node_iterations = node_iterations;
            options.start = std::move(start);
            options.progress_interval = progress_interval;
            options.progress_first = progress_first;
            // Held for the whole call even if the caller drops its object.
            std::shared_ptr<std::atomic<double>> stop_at = budget_stop ? budget_stop->budget : nullptr;
            options.stop_budget = stop_at.get();
            std::shared_ptr<ExternalBound> external = budget_stop ? budget_stop->bound : nullptr;
            options.external_bound = external.get();
            std::shared_ptr<SharedIncumbent> shared = budget_stop ? budget_stop->incumbent : nullptr;
            options.shared_incumbent = shared.get();
            options.cut_rounds = cut_rounds;
            options.cut_min_candidates = cut_min_candidates;
            // The log callback runs Python: it takes the GIL for the call. An exception it
            // raises stops the solve (status "interrupted") and is raised again afterwards.
            // A KeyboardInterrupt raised inside it (Ctrl-C, or SIGTERM turned into one, landing
            // while the callback runs) is an interruption like any other.
            std::optional<py::error_already_set> callback_error;
            bool callback_failed = false;
            bool signalled = false;
            if (progress) {
                options.progress = [&progress, &callback_error, &callback_failed, &signalled](const SearchProgress& line) {
                    if (callback_failed || signalled) return false;
                    py::gil_scoped_acquire acquire;
                    try {
                        // A true return value stops this budget (status "time_limit").
                        return py::bool_((*progress)(line)).cast<bool>();
                    } catch (py::error_already_set& e) {
                        if (e.matches(PyExc_KeyboardInterrupt)) {
                            signalled = true;
                        } else {
                            callback_error.emplace(std::move(e));
                            callback_failed = true;
                        }
                    }
                    return false;
                };
            }
            // Keeps the flag alive for the whole call even if the caller drops its token.
            std::shared_ptr<std::atomic<bool>> flag = cancel ? cancel->flag : nullptr;
            options.cancel = flag.get();
            // Ctrl-C: signal handlers run only with the GIL, so the search takes it back
            // briefly every poll_interval seconds to let Python look at pending signals.
            options.poll = [&signalled, &callback_failed]() {
                if (signalled || callback_failed) return true;
                py::gil_scoped_acquire acquire;
                if (PyErr_CheckSignals() != 0) {
                    PyErr_Clear(); // turned into status "interrupted"
                    signalled = true;
                }
                return signalled;
            };
            check_solve_inputs(budgets, options);
            std::vector<SolveResult> results;
            {
                py::gil_scoped_release release;
                results = solve_budgets(problem, budgets, options);
            }
            if (callback_error) throw std::move(*callback_error);
            // A second Ctrl-C while the solve was stopping for the first is the same request:
            // raised here it would throw away the results of the first (an interrupted record).
            if (signalled && PyErr_CheckSignals() != 0) {
                if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) throw py::error_already_set();
                PyErr_Clear();
            }
            return results;
        },
        py::arg("problem"), py::arg("budgets"), py::arg("time_limit") = py::none(),
        py::arg("node_limit") = py::none(), py::arg("cancel") = py::none(), py::arg("relative_tolerance") = 1e-9,
        py::arg("root_iterations") = 0, py::arg("node_iterations") = 3,
        py::arg("start") = std::vector<std::int32_t>{}, py::arg("progress") = py::none(),
        py::arg("progress_interval") = 1.0, py::arg("cut_rounds") = 8, py::arg("cut_min_candidates") = 400,
        py::arg("progress_first") = 0.0, py::arg("budget_stop") = py::none(),
        R"doc(Exact OPT(B) for every budget of ``budgets`` (a sweep sharing preprocessing and warm starts).

time_limit (seconds) and node_limit apply to each budget. Ctrl-C, or ``cancel.cancel()`` from
another thread, stops the search: the result then has status ``"interrupted"``, the best store
found and a proven upper bound. The GIL is released while searching.

start: candidate indices of a feasible store offered as incumbent (ignored where it does not fit).
progress: called about every ``progress_interval`` seconds with a ``SolveProgress`` (nodes,
incumbent, upper_bound, gap, seconds); a true return value stops that budget (status
"time_limit"), an exception it raises stops the solve and is re-raised. progress_first: seconds
before each budget's first line (0: progress_interval).
budget_stop: a ``BudgetStop``; the budget another thread names there stops (status "time_limit").
Each result's ``open_candidates`` lists the candidates that any better store must be made of.)doc");
}
