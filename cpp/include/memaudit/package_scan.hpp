// One pass from a package's JSON text to the arrays the solver needs.
//
// The scanner reads the single-file layout `memaudit.package/1` (package-format.md) and
// answers only "valid, and here are its arrays" or "look closer" (std::nullopt). It accepts
// exactly what the Python fast validator (model/fastpath.py) accepts and builds the same
// arrays; whatever it is unsure of (an escape in an id, an integer beyond 18 digits, a
// number that underflows, a PWL saturation, a limit reached, any malformed text) it leaves
// to the Python readers, which find and word every error. Being stricter than the Python
// path only costs time; being looser would be a bug, so each rule below names the check it
// mirrors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memaudit/objective.hpp"

namespace memaudit {

struct ScanLimits {
    std::size_t max_candidates = 0;
    std::size_t max_units = 0;
    std::size_t max_nonzeros = 0;
    std::size_t max_budgets = 0;
    std::size_t max_depth = 0;
};

// Every view points into the scanned text: the text must outlive the result.
struct ScannedPackage {
    std::string_view package_id;
    bool weights_explicit = true;  // false: weights are query demand
    SaturationKind default_saturation = SaturationKind::Cap1;  // never Pwl: the scanner doubts those
    std::vector<SaturationKind> unit_saturation;  // per unit
    std::vector<double> weight;                    // per unit
    std::vector<std::string_view> unit_ids;
    std::vector<std::string_view> candidate_ids;
    std::vector<std::string_view> representations;  // empty when absent
    // Groups in order of first appearance: the group's name, or for a candidate in a group of
    // its own (no group, no experience) that candidate's id, flagged in own_group; its key in
    // Python is then kOwnGroupPrefix + the id (model/spec.py OWN_GROUP).
    std::vector<std::string_view> group_names;
    std::vector<std::uint8_t> own_group;
    std::vector<std::int32_t> group_of;  // per candidate
    std::vector<double> cost;            // per candidate
    std::vector<double> time;            // per candidate: arrival time
    // Coverage as CSR over the non-zero entries, plus every entry (zeros too) in text order.
    std::vector<std::int64_t> indptr;
    std::vector<std::int32_t> indices;
    std::vector<double> values;
    std::vector<std::int32_t> raw_units;
    std::vector<double> raw_values;
    std::vector<double> budgets;  // "budgets", or the one "budget"; empty when neither
    std::int64_t group_capacity = 1;  // objective.group_capacity
    // Where the text of the top-level "meta" object is (begin == end: there is none).
    std::size_t meta_begin = 0;
    std::size_t meta_end = 0;
};

inline constexpr std::string_view kOwnGroupPrefix{"\0own:", 5};

std::optional<ScannedPackage> scan_package(std::string_view text, const ScanLimits& limits);

// How much a package's text holds, counted without keeping any of it: so that a package
// above the limits is refused before anything decodes it whole. nullopt when the text is not
// a JSON object the scanner reads (the Python readers then look).
struct PackageCounts {
    std::string_view package_id;  // empty when absent or not a plain string
    std::size_t candidates = 0;
    std::size_t units = 0;
    std::size_t nonzeros = 0;  // coverage entries over every candidate
    std::size_t budgets = 0;   // items of "budgets"
};

std::optional<PackageCounts> count_package(std::string_view text, std::size_t max_depth);

// The text without the whitespace between JSON tokens (space, tab, line feed, carriage return
// outside strings); strings are copied as they are, escapes included. Any text is accepted: it
// need not be JSON. What batch keys a package's content by.
std::string compact_json(std::string_view text);

} // namespace memaudit
