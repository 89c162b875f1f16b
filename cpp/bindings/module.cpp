// The only translation unit that defines the Python module; each file registers its part.
#include <pybind11/pybind11.h>

#include <stdexcept>

namespace py = pybind11;

void register_cuts(py::module_& m);
void register_objective(py::module_& m);
void register_scan(py::module_& m);
void register_solver(py::module_& m);
void register_writers(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "memaudit_fast compiled core: objective evaluation, bounds and exact search";
    // Bad input detected in C++ (a malformed array, an out-of-range index) is the caller's
    // error: ValueError / IndexError, never a crash or a RuntimeError.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const std::invalid_argument& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const std::out_of_range& e) {
            PyErr_SetString(PyExc_IndexError, e.what());
        }
    });
    register_cuts(m);
    register_objective(m);
    register_scan(m);
    register_solver(m);
    register_writers(m);
}
