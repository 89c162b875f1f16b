// Python bindings of the exact solver: inputs are checked holding the GIL, the search runs
// without it, and Ctrl-C or a CancelToken stops it with status "interrupted".
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "memaudit/solver.hpp"

namespace py = pybind11;
using namespace memaudit;

namespace {

// Shared so a token outlives every solve that watches it, whichever thread drops it last.
struct CancelToken {
    std::shared_ptr<std::atomic<bool>> flag = std::make_shared<std::atomic<bool>>(false);
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
        .def("__repr__", &result_repr);

    m.def(
        "solve",
        [](const Problem& problem, const std::vector<double>& budgets, std::optional<double> time_limit,
           std::optional<std::int64_t> node_limit, std::optional<CancelToken> cancel, double relative_tolerance,
           int root_iterations, int node_iterations) {
            SolveOptions options;
            if (time_limit) options.time_limit = *time_limit;
            if (node_limit) options.node_limit = *node_limit;
            options.relative_tolerance = relative_tolerance;
            options.root_iterations = root_iterations;
            options.node_iterations = node_iterations;
            // Keeps the flag alive for the whole call even if the caller drops its token.
            std::shared_ptr<std::atomic<bool>> flag = cancel ? cancel->flag : nullptr;
            options.cancel = flag.get();
            // Ctrl-C: signal handlers run only with the GIL, so the search takes it back
            // briefly every poll_interval seconds to let Python look at pending signals.
            bool signalled = false;
            options.poll = [&signalled]() {
                if (signalled) return true;
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
            return results;
        },
        py::arg("problem"), py::arg("budgets"), py::arg("time_limit") = py::none(),
        py::arg("node_limit") = py::none(), py::arg("cancel") = py::none(), py::arg("relative_tolerance") = 1e-9,
        py::arg("root_iterations") = 0, py::arg("node_iterations") = 3,
        R"doc(Exact OPT(B) for every budget of ``budgets`` (a sweep sharing preprocessing and warm starts).

time_limit (seconds) and node_limit apply to each budget. Ctrl-C, or ``cancel.cancel()`` from
another thread, stops the search: the result then has status ``"interrupted"``, the best store
found and a proven upper bound. The GIL is released while searching.)doc");
}
