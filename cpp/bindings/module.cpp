// The only translation unit that defines the Python module; each file registers its part.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_objective(py::module_& m);
void register_solver(py::module_& m);
void register_writers(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "memaudit_fast compiled core: objective evaluation, bounds and exact search";
    register_objective(m);
    register_solver(m);
    register_writers(m);
}
