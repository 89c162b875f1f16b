#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "memaudit/writers.hpp"

namespace py = pybind11;
using namespace memaudit;
using memaudit_bindings::carray;
using memaudit_bindings::to_array;
using memaudit_bindings::to_vector;

namespace {

using WriterFn = std::vector<std::int32_t> (*)(const WriterInput&);

WriterFn writer_named(const std::string& name) {
    if (name == "density_only") return &write_density_only;
    if (name == "greedy") return &write_greedy;
    if (name == "gvt") return &write_gvt;
    throw std::invalid_argument("unknown core writer '" + name + "'; expected density_only, greedy or gvt");
}

} // namespace

void register_writers(py::module_& m) {
    m.def(
        "run_writer",
        [](const Problem& problem, const std::string& name, double budget,
           const carray<std::int32_t>& order, const carray<std::int32_t>& id_rank,
           std::int32_t group_capacity) {
            const WriterFn fn = writer_named(name);
            WriterInput input;
            input.problem = &problem;
            input.budget = budget;
            input.order = to_vector(order, "order");
            input.id_rank = to_vector(id_rank, "id_rank");
            input.group_capacity = group_capacity;
            input.validate(); // with the GIL held, so a bad input raises cleanly
            std::vector<std::int32_t> selected;
            {
                py::gil_scoped_release release;
                selected = fn(input);
            }
            return to_array(selected);
        },
        py::arg("problem"), py::arg("name"), py::arg("budget"), py::arg("order"), py::arg("id_rank"),
        py::arg("group_capacity") = 1,
        "Run the core writer `name` (density_only, greedy, gvt) over the admitted candidates\n"
        "`order` (grouped, groups in arrival order); `id_rank[u]` ranks candidate ids for\n"
        "tie-breaking; a group stays open until `group_capacity` of its candidates are stored.\n"
        "Returns the inserted candidate indices in insertion order.");
}
