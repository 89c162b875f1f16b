// Python binding of the c-MIR separator (mir_cuts.hpp): rows in CSR over columns given by
// arrays, cuts back in CSR; the separation runs without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "memaudit/mir_cuts.hpp"

namespace py = pybind11;
using namespace memaudit;
using memaudit_bindings::carray;
using memaudit_bindings::to_array;
using memaudit_bindings::to_vector;

void register_cuts(py::module_& m) {
    m.def(
        "rows_times",
        [](const carray<std::int64_t>& row_starts, const carray<std::int32_t>& row_columns,
           const carray<double>& row_values, std::int64_t num_columns, const carray<double>& multipliers) {
            const auto starts = to_vector(row_starts, "row_starts");
            const auto columns = to_vector(row_columns, "row_columns");
            const auto values = to_vector(row_values, "row_values");
            if (multipliers.ndim() != 2) throw std::invalid_argument("multipliers must be a two-dimensional array");
            const auto k = static_cast<std::size_t>(multipliers.shape(0));
            const auto m = static_cast<std::size_t>(multipliers.shape(1));
            if (num_columns < 0) throw std::invalid_argument("num_columns must not be negative");
            if (starts.size() != m + 1 || starts.front() != 0 ||
                starts.back() != static_cast<std::int64_t>(columns.size()) || values.size() != columns.size())
                throw std::invalid_argument("row_starts must run from 0 to len(row_columns), one row per multiplier");
            for (std::size_t r = 0; r < m; ++r)
                if (starts[r + 1] < starts[r]) throw std::invalid_argument("row_starts must not decrease");
            for (auto c : columns)
                if (c < 0 || c >= num_columns)
                    throw std::out_of_range("row column " + std::to_string(c) + " is not one of the " +
                                            std::to_string(num_columns) + " columns");
            const auto n = static_cast<std::size_t>(num_columns);
            carray<double> out({static_cast<py::ssize_t>(k), static_cast<py::ssize_t>(n)});
            double* o = out.mutable_data();
            const double* lam = multipliers.data();
            {
                py::gil_scoped_release release;
                std::fill(o, o + k * n, 0.0);
                // Row by row, each row's entries in order: every column's sum is taken in the
                // order of the entries (as numpy's bincount over them does); rows of multiplier
                // 0 add nothing and are skipped.
                for (std::size_t t = 0; t < k; ++t) {
                    double* row_out = o + t * n;
                    for (std::size_t r = 0; r < m; ++r) {
                        const double l = lam[t * m + r];
                        if (l == 0.0) continue;
                        for (auto e = starts[r]; e < starts[r + 1]; ++e)
                            row_out[columns[static_cast<std::size_t>(e)]] += values[static_cast<std::size_t>(e)] * l;
                    }
                }
            }
            return out;
        },
        py::arg("row_starts"), py::arg("row_columns"), py::arg("row_values"), py::arg("num_columns"),
        py::arg("multipliers"),
        "lam A for each row lam of multipliers (k x m), the m rows of A in CSR over num_columns columns: "
        "a k x num_columns array.");
    m.def(
        "mir_cuts",
        [](const carray<std::int64_t>& row_starts, const carray<std::int32_t>& row_columns,
           const carray<double>& row_values, const carray<double>& rhs, const carray<double>& lower,
           const carray<double>& upper, const carray<double>& step, const carray<double>& point,
           double min_efficacy) {
            const auto starts = to_vector(row_starts, "row_starts");
            const auto columns = to_vector(row_columns, "row_columns");
            const auto values = to_vector(row_values, "row_values");
            const auto b = to_vector(rhs, "rhs");
            MirColumns cols{to_vector(lower, "lower"), to_vector(upper, "upper"), to_vector(step, "step"),
                            to_vector(point, "point")};
            const auto num_cols = static_cast<std::int64_t>(cols.lower.size());
            if (cols.upper.size() != cols.lower.size() || cols.step.size() != cols.lower.size() ||
                cols.point.size() != cols.lower.size())
                throw std::invalid_argument("lower, upper, step and point need one value per column");
            if (starts.empty() || starts.size() != b.size() + 1 || starts.front() != 0 ||
                starts.back() != static_cast<std::int64_t>(columns.size()) || values.size() != columns.size())
                throw std::invalid_argument("row_starts must run from 0 to len(row_columns), one row per rhs");
            for (std::size_t r = 0; r + 1 < starts.size(); ++r)
                if (starts[r + 1] < starts[r]) throw std::invalid_argument("row_starts must not decrease");
            for (auto c : columns)
                if (c < 0 || c >= num_cols)
                    throw std::out_of_range("row column " + std::to_string(c) + " is not one of the " +
                                            std::to_string(num_cols) + " columns");
            std::vector<std::int64_t> out_starts{0};
            std::vector<std::int32_t> out_cols, out_rows;
            std::vector<double> out_vals, out_rhs, out_eff;
            {
                py::gil_scoped_release release;
                MirCut cut;
                std::vector<std::int32_t> rc;
                std::vector<double> rv;
                for (std::size_t r = 0; r < b.size(); ++r) {
                    rc.assign(columns.begin() + starts[r], columns.begin() + starts[r + 1]);
                    rv.assign(values.begin() + starts[r], values.begin() + starts[r + 1]);
                    if (!separate_mir_cut(rc, rv, b[r], cols, min_efficacy, &cut)) continue;
                    out_cols.insert(out_cols.end(), cut.columns.begin(), cut.columns.end());
                    out_vals.insert(out_vals.end(), cut.coefficients.begin(), cut.coefficients.end());
                    out_starts.push_back(static_cast<std::int64_t>(out_cols.size()));
                    out_rhs.push_back(cut.rhs);
                    out_eff.push_back(cut.efficacy);
                    out_rows.push_back(static_cast<std::int32_t>(r));
                }
            }
            return py::make_tuple(to_array(out_starts), to_array(out_cols), to_array(out_vals), to_array(out_rhs),
                                  to_array(out_eff), to_array(out_rows));
        },
        py::arg("row_starts"), py::arg("row_columns"), py::arg("row_values"), py::arg("rhs"), py::arg("lower"),
        py::arg("upper"), py::arg("step"), py::arg("point"), py::arg("min_efficacy") = 1e-6,
        "The c-MIR cut (mir_cuts.hpp) of each row sum values * v[columns] <= rhs, where one is found: columns "
        "with bounds lower..upper, on a lattice of step (0: continuous), the LP at point. Returns the cuts in "
        "CSR (starts, columns, values, rhs), their efficacies and the row each came from.");
}
