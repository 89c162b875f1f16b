#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <vector>

#include "memaudit/objective.hpp"

namespace py = pybind11;
using namespace memaudit;

namespace {

template <typename T>
using carray = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
std::vector<T> to_vector(const carray<T>& a) {
    if (a.ndim() != 1) throw std::invalid_argument("expected a one-dimensional array");
    return std::vector<T>(a.data(), a.data() + a.size());
}

Problem make_problem(const carray<double>& cost, const carray<std::int32_t>& group_of,
                     std::int32_t num_groups, const carray<double>& weight,
                     const carray<std::int64_t>& indptr, const carray<std::int32_t>& indices,
                     const carray<double>& values, const carray<std::int32_t>& saturation_of,
                     const std::vector<std::int32_t>& saturation_kinds,
                     const std::vector<carray<double>>& saturation_z,
                     const std::vector<carray<double>>& saturation_h) {
    Problem p;
    p.cost = to_vector(cost);
    p.group_of = to_vector(group_of);
    p.weight = to_vector(weight);
    p.indptr = to_vector(indptr);
    p.indices = to_vector(indices);
    p.values = to_vector(values);
    p.saturation_of = to_vector(saturation_of);
    p.num_candidates = static_cast<std::int32_t>(p.cost.size());
    p.num_groups = num_groups;
    p.num_units = static_cast<std::int32_t>(p.weight.size());
    if (saturation_z.size() != saturation_kinds.size() || saturation_h.size() != saturation_kinds.size())
        throw std::invalid_argument("saturation lists differ in length");
    for (std::size_t i = 0; i < saturation_kinds.size(); ++i) {
        Saturation s;
        const auto kind = saturation_kinds[i];
        if (kind < 0 || kind > 3) throw std::invalid_argument("unknown saturation kind");
        s.kind = static_cast<SaturationKind>(kind);
        s.z = to_vector(saturation_z[i]);
        s.h = to_vector(saturation_h[i]);
        p.saturations.push_back(std::move(s));
    }
    p.validate();
    return p;
}

std::vector<std::int32_t> checked_selection(const Problem& p, const carray<std::int32_t>& selected) {
    auto v = to_vector(selected);
    for (auto u : v)
        if (u < 0 || u >= p.num_candidates) throw std::out_of_range("candidate index out of range");
    return v;
}

} // namespace

void register_objective(py::module_& m) {
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const std::invalid_argument& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        }
    });

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
                const auto& z = state.coverage();
                carray<double> out(static_cast<py::ssize_t>(z.size()));
                std::copy(z.begin(), z.end(), out.mutable_data());
                return out;
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
