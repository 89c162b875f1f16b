#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <vector>

#include "arrays.hpp"
#include "memaudit/objective.hpp"

namespace py = pybind11;
using namespace memaudit;
using memaudit_bindings::carray;
using memaudit_bindings::to_array;
using memaudit_bindings::to_vector;

namespace {

Problem make_problem(const carray<double>& cost, const carray<std::int32_t>& group_of,
                     std::int32_t num_groups, const carray<double>& weight,
                     const carray<std::int64_t>& indptr, const carray<std::int32_t>& indices,
                     const carray<double>& values, const carray<std::int32_t>& saturation_of,
                     const std::vector<SaturationKind>& saturation_kinds,
                     const std::vector<carray<double>>& saturation_z,
                     const std::vector<carray<double>>& saturation_h) {
    Problem p;
    p.cost = to_vector(cost, "cost");
    p.group_of = to_vector(group_of, "group_of");
    p.weight = to_vector(weight, "weight");
    p.indptr = to_vector(indptr, "indptr");
    p.indices = to_vector(indices, "indices");
    p.values = to_vector(values, "values");
    p.saturation_of = to_vector(saturation_of, "saturation_of");
    p.num_candidates = static_cast<std::int32_t>(p.cost.size());
    p.num_groups = num_groups;
    p.num_units = static_cast<std::int32_t>(p.weight.size());
    if (saturation_z.size() != saturation_kinds.size() || saturation_h.size() != saturation_kinds.size())
        throw std::invalid_argument("saturation lists differ in length");
    for (std::size_t i = 0; i < saturation_kinds.size(); ++i) {
        Saturation s;
        s.kind = saturation_kinds[i];
        // Plain integers convert implicitly (older callers pass 0..3): reject any other value.
        if (static_cast<std::int32_t>(s.kind) < 0 || static_cast<std::int32_t>(s.kind) > 3)
            throw std::invalid_argument("unknown saturation kind");
        s.z = to_vector(saturation_z[i], "saturation_z");
        s.h = to_vector(saturation_h[i], "saturation_h");
        p.saturations.push_back(std::move(s));
    }
    p.validate();
    return p;
}

std::vector<std::int32_t> checked_selection(const Problem& p, const carray<std::int32_t>& selected) {
    auto v = to_vector(selected, "selected");
    for (auto u : v)
        if (u < 0 || u >= p.num_candidates) throw std::out_of_range("candidate index out of range");
    return v;
}

} // namespace

void register_objective(py::module_& m) {
    py::enum_<SaturationKind>(m, "SaturationKind", "The family of a saturation h.")
        .value("cap1", SaturationKind::Cap1, "h(z) = min(1, z)")
        .value("linear", SaturationKind::Linear, "h(z) = z")
        .value("log1p", SaturationKind::Log1p, "h(z) = log(1 + z)")
        .value("pwl", SaturationKind::Pwl, "concave piecewise-linear through (0, 0)");
    py::implicitly_convertible<py::int_, SaturationKind>();

    py::class_<Problem>(m, "Problem", "A compiled package: costs, groups, weights, CSR coverage, saturations.")
        .def(py::init(&make_problem), py::arg("cost"), py::arg("group_of"), py::arg("num_groups"),
             py::arg("weight"), py::arg("indptr"), py::arg("indices"), py::arg("values"),
             py::arg("saturation_of"), py::arg("saturation_kinds"), py::arg("saturation_z"),
             py::arg("saturation_h"))
        .def_readonly("num_candidates", &Problem::num_candidates)
        .def_readonly("num_groups", &Problem::num_groups)
        .def_readonly("num_units", &Problem::num_units)
        .def(
            "objective",
            [](const Problem& p, const carray<std::int32_t>& selected) {
                auto v = checked_selection(p, selected);
                return objective_value(p, v.data(), v.size());
            },
            py::arg("selected"), "F(X) for candidate indices X.")
        .def(
            "marginal_gains",
            [](const Problem& p, const carray<std::int32_t>& selected) {
                auto v = checked_selection(p, selected);
                CoverageState state(p);
                for (auto u : v) state.add(u);
                carray<double> out(p.num_candidates);
                auto* o = out.mutable_data();
                for (std::int32_t u = 0; u < p.num_candidates; ++u) o[u] = state.marginal_gain(u);
                return out;
            },
            py::arg("selected"), "F(u | X) for every candidate u.")
        .def(
            "coverage",
            [](const Problem& p, const carray<std::int32_t>& selected) {
                auto v = checked_selection(p, selected);
                CoverageState state(p);
                for (auto u : v) state.add(u);
                return to_array(state.coverage());
            },
            py::arg("selected"), "Coverage vector z(X).");

    // Holds the Problem alive and checks indices: a bad index from Python must not crash.
    struct PyCoverageState {
        const Problem* problem;
        CoverageState state;
        std::int32_t checked(std::int32_t u) const {
            if (u < 0 || u >= problem->num_candidates) throw std::out_of_range("candidate index out of range");
            return u;
        }
    };
    py::class_<PyCoverageState>(m, "CoverageState", "Incremental coverage vector and F(X).")
        .def(py::init([](const Problem& p) { return PyCoverageState{&p, CoverageState(p)}; }),
             py::keep_alive<1, 2>())
        .def_property_readonly("value", [](const PyCoverageState& s) { return s.state.value(); })
        .def("marginal_gain", [](const PyCoverageState& s, std::int32_t u) { return s.state.marginal_gain(s.checked(u)); })
        .def("marginal_loss", [](const PyCoverageState& s, std::int32_t u) { return s.state.marginal_loss(s.checked(u)); })
        .def("add", [](PyCoverageState& s, std::int32_t u) { s.state.add(s.checked(u)); })
        .def("remove", [](PyCoverageState& s, std::int32_t u) { s.state.remove(s.checked(u)); })
        .def("clear", [](PyCoverageState& s) { s.state.clear(); });
}
