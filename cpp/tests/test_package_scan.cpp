// Native tests of the package scanner (package_scan.hpp), run under the sanitizers with the
// rest of the core: a known package gives known arrays; every prefix and every one-byte edit
// of it is read without a fault; each class of text the scanner must leave to the Python
// readers is doubted. (Exact agreement with the Python validators is tested in Python:
// tests/test_readers_scanner.py.)
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "memaudit/package_scan.hpp"

using namespace memaudit;

namespace {

int scan_checks = 0;
int scan_failures = 0;

void expect(bool ok, const char* what) {
    ++scan_checks;
    if (!ok) {
        std::fprintf(stderr, "FAILED: package scan: %s\n", what);
        ++scan_failures;
    }
}

const ScanLimits kLimits{1000, 1000, 10000, 100, 500};

const std::string kPackage =
    R"({"format":"memaudit.package/1","package_id":"p/1","budgets":[2,4.5],)"
    R"("objective":{"saturation":"cap1","note":[1,{"x":null}]},)"
    R"("experiences":[{"experience_id":"e0","timestamp":7,"text":"caf\u00e9 \"quoted\" \u65e5"},)"
    R"({"experience_id":"e1"}],)"
    R"("units":[{"unit_id":"u0","weight":1.5},{"unit_id":"u1","weight":0,"saturation":"linear"}],)"
    R"("candidates":[)"
    R"({"candidate_id":"c0","experience_id":"e0","representation":"raw_span","cost":3,"coverage":{"u0":1.0,"u1":0}},)"
    R"({"candidate_id":"c1","experience_id":"e1","cost":1e0,"coverage":{"u1":0.25},"timestamp":-2.5},)"
    R"({"candidate_id":"c2","group":"e0","cost":0.5,"coverage":{}},)"
    R"({"candidate_id":"c3","cost":-0.0,"coverage":{"u0":2},"x_extra":{"deep":[[1],[2]]}}],)"
    R"("meta":{"distribution":"base"}}
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    if (at == std::string::npos) return "";  // the edit does not apply: an empty text, doubted
    return text.replace(at, from.size(), to);
}

bool doubted(const std::string& text) { return !scan_package(text, kLimits).has_value(); }

} // namespace

std::pair<int, int> package_scan_tests() {
    const auto scanned = scan_package(kPackage, kLimits);
    expect(scanned.has_value(), "a valid package is read");
    if (scanned) {
        const ScannedPackage& p = *scanned;
        expect(p.package_id == "p/1", "package id");
        expect((p.budgets == std::vector<double>{2.0, 4.5}), "budgets");
        expect(p.weights_explicit && (p.weight == std::vector<double>{1.5, 0.0}), "explicit weights");
        expect(p.unit_saturation.size() == 2 && p.unit_saturation[1] == SaturationKind::Linear, "unit saturation");
        expect((p.cost == std::vector<double>{3.0, 1.0, 0.5, -0.0}), "costs");
        expect((p.indptr == std::vector<std::int64_t>{0, 1, 2, 2, 3}), "zero entries are left out of the CSR");
        expect((p.indices == std::vector<std::int32_t>{0, 1, 0}), "CSR units");
        expect((p.raw_units == std::vector<std::int32_t>{0, 1, 1, 0}), "every entry in order");
        expect((p.group_of == std::vector<std::int32_t>{0, 1, 0, 2}), "groups: experience, named, own");
        expect(p.group_names.size() == 3 && p.group_names[2] == "c3" && p.own_group[2] == 1, "own group");
        expect((p.time == std::vector<double>{7.0, -2.5, 2.0, 3.0}), "times: experience, own, position");
        expect(p.representations[0] == "raw_span" && p.representations[1].empty(), "representations");
        const std::string meta = kPackage.substr(p.meta_begin, p.meta_end - p.meta_begin);
        expect(meta == R"({"distribution":"base"})", "meta span");
    }

    // Every prefix (a text cut short) and every one-byte edit: read or doubted, never a fault.
    for (std::size_t n = 0; n < kPackage.size() - 1; ++n) expect(doubted(kPackage.substr(0, n)), "a cut text is doubted");
    const char bytes[] = {'\0', '"', '\\', '{', '}', '[', ']', ',', ':', '0', '-', 'e', '\x80', '\xc3', '\xff', ' '};
    std::size_t read = 0;
    for (std::size_t at = 0; at < kPackage.size(); ++at) {
        for (const char b : bytes) {
            std::string edited = kPackage;
            edited[at] = b;
            read += scan_package(edited, kLimits).has_value();
        }
    }
    expect(read > 0, "some one-byte edits still read");

    // What the scanner leaves to the Python readers, one class each.
    const std::vector<std::pair<std::string, std::string>> doubts = {
        {R"("package_id":"p/1")", R"("package_id":"p/1","package_id":"p/2")"},  // a repeated key
        {R"({"distribution":"base"})", R"({"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,)"
                                       R"("k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"a":18})"},  // repeated, late
        {R"("unit_id":"u0")", R"("unit_id":"\u0075\u0030")"},  // an escape in an id
        {R"("cost":3)", R"("cost":1e-400)"},                     // underflow
        {R"("cost":3)", R"("cost":4e-320)"},                     // subnormal
        {R"("cost":3)", R"("cost":1e400)"},                      // overflow
        {R"("cost":3)", R"("cost":1234567890123456789)"},        // beyond 18 digits
        {R"("cost":3)", R"("cost":9007199254740993)"},           // beyond 2**53
        {R"("cost":3)", R"("cost":-1)"},
        {R"("cost":3)", R"("cost":"3")"},
        {R"("cost":3)", R"("cost":true)"},
        {R"("cost":3)", R"("cost":03)"},
        {R"("weight":1.5)", R"("weight":null)"},
        {R"("timestamp":7)", R"("timestamp":9007199254740993)"},
        {R"(\u65e5)", R"(\ud83d\ude00)"},                        // surrogates, paired or not
        {R"(\u65e5)", "\xed\xa0\x80"},                           // a surrogate in UTF-8
        {R"(\u65e5)", "\xc0\xaf"},                               // overlong
        {R"(\u65e5)", "\t"},                                      // a raw control character
        {R"("saturation":"linear")", R"("saturation":"sqrt")"},
        {R"("saturation":"linear")", R"("saturation":{"pwl":[[0,0],[1,1]]})"},
        {R"("u1":0.25)", R"("nope":0.25)"},                      // an unknown unit
        {R"("experience_id":"e1","cost")", R"("experience_id":"e9","cost")"},  // an unknown experience
        {R"("candidate_id":"c2")", R"("candidate_id":"c1")"},  // a repeated id
        {R"("weight":0,)", ""},                                   // weights on some units only
        {R"("format":"memaudit.package/1")", R"("format":"memaudit.package/2")"},
        {R"([[1],[2]])", std::string(70, '[') + std::string(70, ']')},  // nesting too deep
        {R"("budgets":[2,4.5])", R"("budgets":[])"},
        {R"("budgets":[2,4.5])", R"("budgets":[2],"budget":2)"},
        {R"("meta":{"distribution":"base"}})", R"("meta":[]})"},
        {R"(}}
)", "}} x"},  // text after the package
    };
    for (const auto& [from, to] : doubts) {
        const std::string edited = replaced(kPackage, from, to);
        expect(!edited.empty() && doubted(edited), ("doubted: " + to).c_str());
    }

    // Query demand: no unit weighted, queries given.
    const std::string demand = replaced(replaced(kPackage, R"("weight":1.5)", R"("kind":"x")"), R"("weight":0,)", "");
    const std::string with_queries = replaced(demand, R"("meta":)",
        R"("queries":[{"query_id":"q0","required_unit_ids":["u1","u1"]},{"query_id":"q1","required_unit_ids":["u0","u1"]}],"meta":)");
    const auto q = scan_package(with_queries, kLimits);
    // u1, named twice by q0 and once by q1, weighs 2 (two queries ask for it); u0 weighs 1.
    expect(q && !q->weights_explicit && (q->weight == std::vector<double>{1.0, 2.0}), "query-demand weights");
    expect(doubted(demand), "no weights and no queries");

    // Counts, and a scan above a limit stops (doubted) while the count still reads it.
    const auto counts = count_package(kPackage, 500);
    expect(counts && counts->package_id == "p/1" && counts->candidates == 4 && counts->units == 2 &&
               counts->nonzeros == 4 && counts->budgets == 2,
           "counts of the known package");
    expect(!scan_package(kPackage, ScanLimits{3, 1000, 10000, 100, 500}).has_value(), "above max_candidates");
    expect(!scan_package(kPackage, ScanLimits{1000, 1, 10000, 100, 500}).has_value(), "above max_units");
    expect(!scan_package(kPackage, ScanLimits{1000, 1000, 3, 100, 500}).has_value(), "above max_nonzeros");
    expect(!count_package("{\"units\":[1,2", 500).has_value(), "a cut text is not counted");
    for (std::size_t k = 0; k < kPackage.size(); ++k) count_package(kPackage.substr(0, k), 500);

    // The compact form: whitespace between tokens goes, strings (escaped quotes too) stay.
    expect(compact_json(" { \"a b\" :\t[1 ,\r\n2], \"q\\\" x\":\"\\\\\" } ") ==
               "{\"a b\":[1,2],\"q\\\" x\":\"\\\\\"}",
           "compact form");
    // (its text has two characters spelt as \u escapes, which the compact form spells as themselves)
    const std::string spelt = replaced(replaced(kPackage, R"(\u00e9)", "\u00e9"), R"(\u65e5)", "\u65e5");
    expect(spelt != kPackage && compact_json(kPackage) == spelt.substr(0, spelt.find_last_not_of('\n') + 1),
           "a compact package is its own compact form, but for its line feed and escapes");
    for (std::size_t k = 0; k < kPackage.size(); ++k) compact_json(kPackage.substr(0, k));  // cut texts: no fault
    expect(compact_json("\"ab\\") == "\"ab\\", "a text cut after a backslash");
    // One spelling per character: \u escapes as UTF-8 (surrogate pairs joined), "\/" as "/", the
    // quote, the backslash and control characters escaped (short forms, else \u00xx), lone
    // surrogates as \udxxx in lower case.
    expect(compact_json(R"(["\u00ac\u00AC¬", "\ud83d\ude00😀", "\/", "\u0022\"", "\u005c\\"])") ==
               R"(["¬¬¬","😀😀","/","\"\"","\\\\"])",
           "escapes spelt one way");
    expect(compact_json(R"(["\u000a\n", "\u0001", "\uD800x", "\udc00", "\u12", "\q"])") ==
               R"(["\n\n","\u0001","\ud800x","\udc00","\u12","\q"])",
           "control characters, lone surrogates and broken escapes");
    return {scan_checks, scan_failures};
}
