// numpy arrays across the boundary: contiguous, converted on the way in (forcecast), copied
// into std::vector while the GIL is held, and copied back out into fresh arrays.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace memaudit_bindings {

namespace py = pybind11;

template <typename T>
using carray = py::array_t<T, py::array::c_style | py::array::forcecast>;

// A one-dimensional array as a vector; `name` says which argument was not one-dimensional.
template <typename T>
std::vector<T> to_vector(const carray<T>& a, const char* name) {
    if (a.ndim() != 1) throw std::invalid_argument(std::string(name) + " must be a one-dimensional array");
    return std::vector<T>(a.data(), a.data() + a.size());
}

template <typename T>
carray<T> to_array(const std::vector<T>& v) {
    carray<T> out(static_cast<py::ssize_t>(v.size()));
    std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
}

} // namespace memaudit_bindings
