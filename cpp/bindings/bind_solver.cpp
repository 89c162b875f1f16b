#include <pybind11/pybind11.h>

namespace py = pybind11;

// The branch-and-bound solver registers its bindings here.
void register_solver(py::module_& m) { (void)m; }
