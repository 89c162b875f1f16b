// scan_package: a package's JSON text to the fields and arrays of model/fastpath.py, or None
// for "look closer" (package_scan.hpp says what the scanner leaves to the Python readers).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arrays.hpp"
#include "memaudit/package_scan.hpp"

namespace py = pybind11;
using namespace memaudit;
using memaudit_bindings::to_array;

namespace {

// A fresh array the caller only reads (as the compiled package's arrays are).
template <typename T>
py::array read_only(const std::vector<T>& values) {
    auto out = to_array(values);
    py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return out;
}

py::str text(std::string_view s) { return py::str(s.data(), s.size()); }

py::list texts(const std::vector<std::string_view>& values) {
    py::list out(values.size());
    for (std::size_t k = 0; k < values.size(); ++k) out[k] = text(values[k]);
    return out;
}

py::list floats(const std::vector<double>& values) {
    py::list out(values.size());
    for (std::size_t k = 0; k < values.size(); ++k) out[k] = py::float_(values[k]);
    return out;
}

const char* saturation_name(SaturationKind s) {  // the names of SATURATIONS in model/spec.py
    switch (s) {
    case SaturationKind::Linear:
        return "linear";
    case SaturationKind::Log1p:
        return "log1p";
    default:
        return "cap1";
    }
}

py::dict to_python(const ScannedPackage& p) {
    py::dict out;
    const py::list unit_ids = texts(p.unit_ids);
    py::list groups(p.group_of.size());
    py::list group_keys(p.group_names.size());
    py::list group_ids(p.group_names.size());
    std::string own(kOwnGroupPrefix);
    for (std::size_t g = 0; g < p.group_names.size(); ++g) {
        group_ids[g] = text(p.group_names[g]);
        if (p.own_group[g] != 0) {
            own.resize(kOwnGroupPrefix.size());
            own.append(p.group_names[g]);
            group_keys[g] = text(own);
        } else {
            group_keys[g] = group_ids[g];
        }
    }
    for (std::size_t i = 0; i < p.group_of.size(); ++i) groups[i] = group_keys[static_cast<std::size_t>(p.group_of[i])];
    bool uniform = true;
    for (SaturationKind s : p.unit_saturation) uniform = uniform && s == p.default_saturation;
    if (uniform) {
        out["unit_saturations"] = py::none();
    } else {
        py::list names(p.unit_saturation.size());
        for (std::size_t r = 0; r < p.unit_saturation.size(); ++r) names[r] = py::str(saturation_name(p.unit_saturation[r]));
        out["unit_saturations"] = names;
    }
    out["package_id"] = text(p.package_id);
    out["weights_rule"] = py::str(p.weights_explicit ? "explicit" : "query_demand");
    out["default_saturation"] = py::str(saturation_name(p.default_saturation));
    out["unit_weights"] = floats(p.weight);
    out["candidate_groups"] = groups;
    out["candidate_times"] = floats(p.time);
    out["cost"] = read_only(p.cost);
    out["weight"] = read_only(p.weight);
    out["times"] = read_only(p.time);
    out["indptr"] = read_only(p.indptr);
    out["indices"] = read_only(p.indices);
    out["values"] = read_only(p.values);
    out["group_of"] = read_only(p.group_of);
    out["raw_units"] = read_only(p.raw_units);
    out["raw_values"] = read_only(p.raw_values);
    out["candidate_ids"] = texts(p.candidate_ids);
    out["representations"] = texts(p.representations);
    out["group_ids"] = group_ids;
    out["unit_ids"] = unit_ids;
    out["budgets"] = floats(p.budgets);
    out["group_capacity"] = py::int_(p.group_capacity);
    out["meta_span"] = p.meta_end > p.meta_begin ? py::object(py::make_tuple(p.meta_begin, p.meta_end)) : py::none();
    return out;
}

} // namespace

void register_scan(py::module_& m) {
    m.def(
        "scan_package",
        [](const py::bytes& raw, std::size_t max_candidates, std::size_t max_units, std::size_t max_nonzeros,
           std::size_t max_budgets, std::size_t max_depth) -> py::object {
            char* data = nullptr;
            Py_ssize_t size = 0;
            if (PyBytes_AsStringAndSize(raw.ptr(), &data, &size) != 0) throw py::error_already_set();
            const ScanLimits limits{max_candidates, max_units, max_nonzeros, max_budgets, max_depth};
            std::optional<ScannedPackage> scanned;
            {
                py::gil_scoped_release release;  // `raw` is held by the caller for the whole call
                scanned = scan_package(std::string_view(data, static_cast<std::size_t>(size)), limits);
            }
            if (!scanned) return py::none();
            return to_python(*scanned);
        },
        py::arg("raw"), py::arg("max_candidates"), py::arg("max_units"), py::arg("max_nonzeros"),
        py::arg("max_budgets"), py::arg("max_depth"),
        "The fields and arrays of a valid package's JSON text, read in one pass; None whenever the "
        "Python readers must look (they word every error).");
    m.def(
        "count_package",
        [](const py::bytes& raw, std::size_t max_depth) -> py::object {
            char* data = nullptr;
            Py_ssize_t size = 0;
            if (PyBytes_AsStringAndSize(raw.ptr(), &data, &size) != 0) throw py::error_already_set();
            std::optional<PackageCounts> counts;
            {
                py::gil_scoped_release release;
                counts = count_package(std::string_view(data, static_cast<std::size_t>(size)), max_depth);
            }
            if (!counts) return py::none();
            py::dict out;
            out["package_id"] = counts->package_id.empty()
                                    ? py::object(py::none())
                                    : py::object(py::str(counts->package_id.data(), counts->package_id.size()));
            out["candidates"] = counts->candidates;
            out["units"] = counts->units;
            out["nonzeros"] = counts->nonzeros;
            out["budgets"] = counts->budgets;
            return out;
        },
        py::arg("raw"), py::arg("max_depth"),
        "How many candidates, units, coverage entries and budgets a package's JSON text holds, "
        "counted in one pass that keeps nothing; None when the scanner cannot read the text.");
    m.def(
        "compact_json",
        [](const py::bytes& raw) -> py::bytes {
            char* data = nullptr;
            Py_ssize_t size = 0;
            if (PyBytes_AsStringAndSize(raw.ptr(), &data, &size) != 0) throw py::error_already_set();
            std::string out;
            {
                py::gil_scoped_release release;
                out = compact_json(std::string_view(data, static_cast<std::size_t>(size)));
            }
            return py::bytes(out);
        },
        py::arg("raw"),
        "The text without the whitespace between JSON tokens (outside strings); any text is "
        "accepted.");
}
