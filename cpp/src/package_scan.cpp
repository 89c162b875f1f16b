// The package scanner (package_scan.hpp): strict JSON (RFC 8259) read once, checked against
// the fields of package-format.md as it goes, with the cross-references (unit, experience,
// candidate and query ids) checked over flat arrays at the end.
//
// Every rule mirrors one of model/fastpath.py; where the Python fast path would answer
// "look closer", or where reproducing its answer exactly would take more than a few lines
// (escapes in strings whose value is needed, integers beyond 18 digits, underflowing or
// subnormal numbers, PWL saturations, nesting beyond 64 levels, sums near the edge of the
// double range), the scanner doubts: it throws Doubt and scan_package returns nullopt.
#include "memaudit/package_scan.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_set>

namespace memaudit {

namespace {

struct Doubt {};

[[noreturn]] void doubt() { throw Doubt{}; }

// key == word, with the length known at compile time (the comparison then inlines).
template <std::size_t N>
bool is(std::string_view key, const char (&word)[N]) {
    return key.size() == N - 1 && std::memcmp(key.data(), word, N - 1) == 0;
}

// jsonio.MAX_EXACT_INT: integers are exact in a double up to 2**53.
constexpr std::int64_t kMaxExactInt = std::int64_t{1} << 53;
// Sums that must stay finite (costs, F of everything) are trusted only well inside the range
// the Python checks allow (1e300), so that another order of summation cannot change the answer.
constexpr double kSafeSum = 1e299;
// Deeper text is left to the Python readers (their own limit is Limits.max_depth).
constexpr std::size_t kMaxScanDepth = 64;
// The integer digits that always fit an int64.
constexpr std::size_t kMaxIntegerDigits = 18;

struct Number {
    bool integer = false;
    std::int64_t i = 0;
    double d = 0.0;
};

// The keys of one object: a repeated key is refused by every Python reader. The first few are
// compared directly (objects of the format have a handful of keys); more go to a hash set.
class KeySet {
  public:
    void insert(std::string_view key) {
        if (count_ < kDirect) {
            for (std::size_t k = 0; k < count_; ++k)
                if (size_[k] == key.size() && std::memcmp(data_[k], key.data(), key.size()) == 0) doubt();
            data_[count_] = key.data();
            size_[count_] = key.size();
            ++count_;
            return;
        }
        if (!many_) {
            many_ = std::make_unique<std::unordered_set<std::string_view>>();
            for (std::size_t k = 0; k < kDirect; ++k) many_->emplace(data_[k], size_[k]);
        }
        if (!many_->insert(key).second) doubt();
    }

  private:
    static constexpr std::size_t kDirect = 16;
    const char* data_[kDirect];  // written before read: no need to clear
    std::size_t size_[kDirect];
    std::size_t count_ = 0;
    std::unique_ptr<std::unordered_set<std::string_view>> many_;
};

class Reader {
  public:
    Reader(std::string_view text, std::size_t max_depth)
        : p_(text.data()), end_(text.data() + text.size()), max_depth_(std::min(max_depth, kMaxScanDepth)) {}

    char peek() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
        if (p_ >= end_) doubt();
        return *p_;
    }

    std::size_t offset(const char* start) const { return static_cast<std::size_t>(p_ - start); }

    bool at_end() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
        return p_ == end_;
    }

    // The members of an object: on_member(key) reads the value.
    template <typename F>
    void object(F&& on_member) {
        if (peek() != '{') doubt();
        ++p_;
        enter();
        KeySet keys;
        if (peek() == '}') {
            ++p_;
        } else {
            for (;;) {
                if (peek() != '"') doubt();
                const std::string_view key = plain_string();
                keys.insert(key);
                if (peek() != ':') doubt();
                ++p_;
                on_member(key);
                const char c = peek();
                ++p_;
                if (c == '}') break;
                if (c != ',') doubt();
            }
        }
        --depth_;
    }

    // The items of an array: on_item() reads each.
    template <typename F>
    void array(F&& on_item) {
        if (peek() != '[') doubt();
        ++p_;
        enter();
        if (peek() == ']') {
            ++p_;
        } else {
            for (;;) {
                on_item();
                const char c = peek();
                ++p_;
                if (c == ']') break;
                if (c != ',') doubt();
            }
        }
        --depth_;
    }

    // A string whose value is needed: escapes would need decoding, so they are doubted.
    std::string_view plain_string() {
        bool escaped = false;
        const std::string_view s = string(escaped);
        if (escaped) doubt();
        return s;
    }

    // msgspec's `Annotated[str, Meta(min_length=1)]` (fastpath._Id).
    std::string_view id() {
        const std::string_view s = plain_string();
        if (s.empty()) doubt();
        return s;
    }

    // A `str` field whose value is not needed.
    void any_string() {
        bool escaped = false;
        string(escaped);
    }

    // fastpath._NonNeg: an int in [0, 2**53] or a float in [0, DBL_MAX].
    double non_negative() {
        const Number n = number();
        if (n.integer ? (n.i < 0 || n.i > kMaxExactInt) : !(n.d >= 0.0)) doubt();
        return n.d;
    }

    // fastpath._Real: an int in [-2**53, 2**53] or a finite float.
    double real() {
        const Number n = number();
        if (n.integer && (n.i < -kMaxExactInt || n.i > kMaxExactInt)) doubt();
        return n.d;
    }

    bool null() {
        if (peek() != 'n') return false;
        literal("null");
        return true;
    }

    Number number() {
        peek();
        const char* start = p_;
        if (*p_ == '-') ++p_;
        const char* first_digit = p_;
        if (p_ < end_ && *p_ == '0') {
            ++p_;
        } else if (p_ < end_ && *p_ >= '1' && *p_ <= '9') {
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        } else {
            doubt();
        }
        Number out;
        out.integer = true;
        if (p_ < end_ && *p_ == '.') {
            out.integer = false;
            ++p_;
            const char* fraction = p_;
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
            if (p_ == fraction) doubt();
        }
        const char* mantissa_end = p_;
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            out.integer = false;
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            const char* exponent = p_;
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
            if (p_ == exponent) doubt();
        }
        if (out.integer) {
            if (static_cast<std::size_t>(p_ - first_digit) > kMaxIntegerDigits) doubt();
            const auto parsed = std::from_chars(start, p_, out.i);
            if (parsed.ec != std::errc() || parsed.ptr != p_) doubt();
            out.d = static_cast<double>(out.i);  // -0 is the integer 0
            return out;
        }
        const auto parsed = std::from_chars(start, p_, out.d);
        if (parsed.ec != std::errc() || parsed.ptr != p_ || !std::isfinite(out.d)) doubt();
        if (std::fpclassify(out.d) == FP_SUBNORMAL) doubt();
        if (std::fabs(out.d) >= static_cast<double>(kMaxExactInt)) doubt();  // judged by the careful reader
        if (out.d == 0.0) {  // an exact zero only: a non-zero mantissa that underflowed is doubted
            for (const char* c = first_digit; c < mantissa_end; ++c)
                if (*c >= '1' && *c <= '9') doubt();
        }
        return out;
    }

    // Any JSON value, checked (repeated keys, UTF-8, escapes, grammar) and dropped.
    void skip_value() {
        switch (peek()) {
        case '{':
            object([&](std::string_view) { skip_value(); });
            return;
        case '[':
            array([&] { skip_value(); });
            return;
        case '"':
            any_string();
            return;
        case 't':
            literal("true");
            return;
        case 'f':
            literal("false");
            return;
        case 'n':
            literal("null");
            return;
        default:
            number();
            return;
        }
    }

  private:
    void enter() {
        if (++depth_ > max_depth_) doubt();
    }

    void literal(std::string_view word) {
        if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) doubt();
        p_ += word.size();
    }

    static unsigned hex_digit(char c) {
        if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
        if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
        if (c >= 'A' && c <= 'F') return static_cast<unsigned>(c - 'A' + 10);
        doubt();
    }

    // One UTF-8 sequence starting at p_ (a byte >= 0x80): its length, or doubt when it is
    // not well formed (overlong, a surrogate, beyond U+10FFFF, cut short).
    std::size_t utf8_sequence() const {
        const auto lead = static_cast<unsigned char>(*p_);
        std::size_t length = 0;
        std::uint32_t code = 0;
        if (lead >= 0xC2 && lead <= 0xDF) {
            length = 2;
            code = lead & 0x1Fu;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            length = 3;
            code = lead & 0x0Fu;
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            length = 4;
            code = lead & 0x07u;
        } else {
            doubt();
        }
        if (static_cast<std::size_t>(end_ - p_) < length) doubt();
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(p_[k]);
            if ((next & 0xC0u) != 0x80u) doubt();
            code = (code << 6) | (next & 0x3Fu);
        }
        if (length == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) doubt();
        if (length == 4 && (code < 0x10000 || code > 0x10FFFF)) doubt();
        return length;
    }

    // Steps over bytes that need no look, eight at a time: printable ASCII other than the
    // quote and the backslash. Each test below flags the first byte that matters exactly (a
    // borrow may also flag bytes after it, never before), so the step ends on that byte.
    void skip_plain_ascii() {
        constexpr std::uint64_t ones = 0x0101010101010101ull;
        constexpr std::uint64_t highs = 0x8080808080808080ull;
        while (end_ - p_ >= 8) {
            std::uint64_t w;
            std::memcpy(&w, p_, 8);
            const std::uint64_t quote = w ^ (ones * '"');
            const std::uint64_t backslash = w ^ (ones * '\\');
            const std::uint64_t flags = (w | ((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) |
                                         ((backslash - ones) & ~backslash)) &
                                        highs;
            if (flags != 0) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                p_ += __builtin_ctzll(flags) >> 3;  // the first flagged byte, in memory order
#endif
                return;
            }
            p_ += 8;
        }
        while (p_ < end_) {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return;
            ++p_;
        }
    }

    // The raw text between the quotes; `escaped` says whether it holds escapes.
    std::string_view string(bool& escaped) {
        if (peek() != '"') doubt();
        const char* start = ++p_;
        escaped = false;
        for (;;) {
            skip_plain_ascii();
            if (p_ >= end_) doubt();
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                const std::string_view s(start, static_cast<std::size_t>(p_ - start));
                ++p_;
                return s;
            }
            if (c < 0x20) doubt();  // control characters must be escaped
            if (c == '\\') {
                escaped = true;
                if (end_ - p_ < 2) doubt();
                const char e = p_[1];
                p_ += 2;
                if (e == 'u') {
                    if (end_ - p_ < 4) doubt();
                    unsigned code = 0;
                    for (int k = 0; k < 4; ++k) code = code * 16 + hex_digit(p_[k]);
                    p_ += 4;
                    if (code >= 0xD800 && code <= 0xDFFF) doubt();  // pairs and lone halves alike
                } else if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
                           e != 't') {
                    doubt();
                }
            } else if (c < 0x80) {
                ++p_;
            } else {
                p_ += utf8_sequence();
            }
        }
    }

    const char* p_;
    const char* end_;
    std::size_t depth_ = 0;
    std::size_t max_depth_;
};

SaturationKind saturation_named(std::string_view name) {
    if (name == "cap1") return SaturationKind::Cap1;
    if (name == "linear") return SaturationKind::Linear;
    if (name == "log1p") return SaturationKind::Log1p;
    doubt();  // unknown names get the careful message; PWL objects too (below)
}

struct Unit {
    std::string_view id;
    bool has_weight = false;
    double weight = 0.0;
    bool has_saturation = false;
    SaturationKind saturation = SaturationKind::Cap1;
};

struct Candidate {
    std::string_view id;
    std::string_view experience;  // empty: none (an id is never empty)
    std::string_view group;       // empty: none
    std::string_view representation;
    bool has_time = false;
    double time = 0.0;
    double cost = 0.0;
    std::size_t coverage_end = 0;  // entries [previous end, coverage_end) of the flat lists
};

struct Experience {
    std::string_view id;
    bool has_time = false;
    double time = 0.0;
};

// Ids to positions: open addressing over one array (a package has thousands of ids at most,
// and a node per id would cost more than the lookups).
class Index {
  public:
    explicit Index(std::size_t expected) {
        std::size_t capacity = 16;
        while (capacity < 2 * expected) capacity *= 2;
        slots_.assign(capacity, Slot{});
    }

    // Adds `id` at `position`; false when it is there already (the position it has is kept).
    bool add(std::string_view id, std::int32_t position) {
        Slot& slot = probe(id);
        if (slot.position >= 0) return false;
        slot = Slot{id, position};
        return true;
    }

    // The position of `id`, or -1.
    std::int32_t find(std::string_view id) const { return probe(id).position; }

    // The position of `id`, added at `position` when it is new.
    std::int32_t find_or_add(std::string_view id, std::int32_t position) {
        Slot& slot = probe(id);
        if (slot.position < 0) slot = Slot{id, position};
        return slot.position;
    }

  private:
    struct Slot {
        std::string_view id;
        std::int32_t position = -1;
    };

    static std::size_t hash(std::string_view id) {
        std::uint64_t h = 1469598103934665603ull;  // FNV-1a
        for (const char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
        return static_cast<std::size_t>(h ^ (h >> 29));
    }

    Slot& probe(std::string_view id) const {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t k = hash(id) & mask;; k = (k + 1) & mask) {
            Slot& slot = slots_[k];
            if (slot.position < 0 || slot.id == id) return slot;
        }
    }

    mutable std::vector<Slot> slots_;
};

// Ids to their positions; doubt on a repeated id.
Index index_of(const std::vector<std::string_view>& ids) {
    Index index(ids.size());
    for (std::size_t k = 0; k < ids.size(); ++k)
        if (!index.add(ids[k], static_cast<std::int32_t>(k))) doubt();
    return index;
}

class PackageScan {
  public:
    PackageScan(std::string_view text, const ScanLimits& limits)
        : text_(text), in_(text, limits.max_depth), limits_(limits) {}

    ScannedPackage run() {
        in_.object([&](std::string_view key) { top_level(key); });
        if (!in_.at_end()) doubt();
        if (!has_format_ || out_.package_id.empty() || units_.empty() || candidates_.empty()) doubt();
        if (has_budgets_ && has_budget_) doubt();
        if (candidates_.size() > limits_.max_candidates || units_.size() > limits_.max_units ||
            out_.budgets.size() > limits_.max_budgets || coverage_keys_.size() > limits_.max_nonzeros)
            doubt();
        cross_check();
        return std::move(out_);
    }

  private:
    void top_level(std::string_view key) {
        if (is(key, "format")) {
            if (in_.plain_string() != "memaudit.package/1") doubt();
            has_format_ = true;
        } else if (is(key, "package_id")) {
            out_.package_id = in_.id();
        } else if (is(key, "units")) {
            in_.array([&] { unit(); });
        } else if (is(key, "candidates")) {
            in_.array([&] { candidate(); });
        } else if (is(key, "experiences")) {
            in_.array([&] { experience(); });
        } else if (is(key, "queries")) {
            in_.array([&] { query(); });
        } else if (is(key, "objective")) {
            in_.object([&](std::string_view field) { objective(field); });
        } else if (is(key, "budgets")) {
            has_budgets_ = true;
            in_.array([&] { out_.budgets.push_back(in_.non_negative()); });
            if (out_.budgets.empty()) doubt();
        } else if (is(key, "budget")) {
            has_budget_ = true;
            out_.budgets.push_back(in_.non_negative());
        } else if (is(key, "cost_model")) {
            in_.any_string();
        } else if (is(key, "meta")) {
            in_.peek();
            out_.meta_begin = in_.offset(text_.data());
            in_.object([&](std::string_view) { in_.skip_value(); });
            out_.meta_end = in_.offset(text_.data());
        } else {
            in_.skip_value();  // unknown keys are kept by the package, ignored here
        }
    }

    void objective(std::string_view field) {
        if (is(field, "saturation")) {
            if (in_.peek() != '"') doubt();
            out_.default_saturation = saturation_named(in_.plain_string());
        } else if (is(field, "group_capacity")) {
            const Number k = in_.number();
            if (!k.integer || k.i < 1 || k.i > kMaxExactInt) doubt();
            out_.group_capacity = k.i;
        } else {
            in_.skip_value();
        }
    }

    void unit() {
        Unit u;
        in_.object([&](std::string_view key) {
            if (is(key, "unit_id")) {
                u.id = in_.id();
            } else if (is(key, "weight")) {
                u.weight = in_.non_negative();
                u.has_weight = true;
            } else if (is(key, "saturation")) {
                if (in_.peek() != '"') doubt();
                u.saturation = saturation_named(in_.plain_string());
                u.has_saturation = true;
            } else if (is(key, "text") || is(key, "kind") || is(key, "state")) {
                in_.any_string();
            } else {
                in_.skip_value();
            }
        });
        if (u.id.empty()) doubt();
        units_.push_back(u);
        if (units_.size() > limits_.max_units) doubt();
    }

    void candidate() {
        Candidate c;
        bool has_cost = false;
        bool has_coverage = false;
        in_.object([&](std::string_view key) {
            if (is(key, "candidate_id")) {
                c.id = in_.id();
            } else if (is(key, "cost")) {
                c.cost = in_.non_negative();
                has_cost = true;
            } else if (is(key, "coverage")) {
                has_coverage = true;
                in_.object([&](std::string_view unit) {
                    coverage_keys_.push_back(unit);
                    coverage_values_.push_back(in_.non_negative());
                });
            } else if (is(key, "experience_id")) {
                if (!in_.null()) c.experience = in_.id();
            } else if (is(key, "group")) {
                c.group = in_.id();
            } else if (is(key, "representation")) {
                c.representation = in_.plain_string();
            } else if (is(key, "text")) {
                in_.any_string();
            } else if (is(key, "timestamp")) {
                c.time = in_.real();
                c.has_time = true;
            } else if (is(key, "estimated_value")) {
                if (!in_.null()) in_.non_negative();
            } else if (is(key, "estimated_coverage")) {
                if (!in_.null()) {
                    in_.object([&](std::string_view unit) {
                        estimated_keys_.push_back(unit);
                        in_.non_negative();
                    });
                }
            } else {
                in_.skip_value();
            }
        });
        if (c.id.empty() || !has_cost || !has_coverage) doubt();
        c.coverage_end = coverage_keys_.size();
        candidates_.push_back(c);
        // Above a limit: stop here (count_package words the refusal without keeping anything).
        if (candidates_.size() > limits_.max_candidates || coverage_keys_.size() > limits_.max_nonzeros) doubt();
    }

    void experience() {
        Experience e;
        in_.object([&](std::string_view key) {
            if (is(key, "experience_id")) {
                e.id = in_.id();
            } else if (is(key, "timestamp")) {
                e.time = in_.real();
                e.has_time = true;
            } else {
                in_.skip_value();
            }
        });
        if (e.id.empty()) doubt();
        experiences_.push_back(e);
    }

    void query() {
        std::string_view id;
        bool has_required = false;
        in_.object([&](std::string_view key) {
            if (is(key, "query_id")) {
                id = in_.id();
            } else if (is(key, "required_unit_ids")) {
                has_required = true;
                in_.array([&] { required_.push_back(in_.plain_string()); });
            } else {
                in_.skip_value();
            }
        });
        if (id.empty() || !has_required) doubt();
        query_ids_.push_back(id);
        query_ends_.push_back(required_.size());
    }

    void cross_check() {
        const std::size_t n = candidates_.size();
        const std::size_t m = units_.size();
        out_.unit_ids.reserve(m);
        out_.candidate_ids.reserve(n);
        for (const Unit& u : units_) out_.unit_ids.push_back(u.id);
        const Index units = index_of(out_.unit_ids);
        std::vector<std::string_view> experience_ids;
        for (const Experience& e : experiences_) experience_ids.push_back(e.id);
        const Index experiences = index_of(experience_ids);
        for (const Candidate& c : candidates_) out_.candidate_ids.push_back(c.id);
        index_of(out_.candidate_ids);
        index_of(query_ids_);
        for (std::string_view ref : required_)
            if (units.find(ref) < 0) doubt();
        for (std::string_view ref : estimated_keys_)
            if (units.find(ref) < 0) doubt();

        // Weights: all explicit, or none and then the demand of the queries.
        std::size_t weighted = 0;
        out_.weight.assign(m, 0.0);
        out_.unit_saturation.assign(m, out_.default_saturation);
        for (std::size_t r = 0; r < m; ++r) {
            if (units_[r].has_weight) {
                ++weighted;
                out_.weight[r] = units_[r].weight;
            }
            if (units_[r].has_saturation) out_.unit_saturation[r] = units_[r].saturation;
        }
        if (weighted == 0 && !query_ids_.empty()) {
            out_.weights_explicit = false;
            // A unit weighs the number of queries that require it: a query naming it twice counts once.
            std::vector<std::size_t> asked;
            std::size_t begin = 0;
            for (const std::size_t end : query_ends_) {
                asked.clear();
                for (std::size_t k = begin; k < end; ++k) asked.push_back(static_cast<std::size_t>(units.find(required_[k])));
                std::sort(asked.begin(), asked.end());
                asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
                for (const std::size_t r : asked) out_.weight[r] += 1.0;
                begin = end;
            }
        } else if (weighted != m) {
            doubt();
        }

        // Coverage as CSR; zero entries are left out of the kept arrays.
        out_.indptr.reserve(n + 1);
        out_.indices.reserve(coverage_keys_.size());
        out_.values.reserve(coverage_keys_.size());
        out_.indptr.push_back(0);
        out_.raw_units.reserve(coverage_keys_.size());
        out_.raw_values = coverage_values_;
        for (std::size_t k = 0; k < coverage_keys_.size(); ++k) {
            const std::int32_t r = units.find(coverage_keys_[k]);
            if (r < 0) doubt();
            out_.raw_units.push_back(r);
        }
        std::size_t entry = 0;
        for (const Candidate& c : candidates_) {
            for (; entry < c.coverage_end; ++entry) {
                if (coverage_values_[entry] > 0.0) {
                    out_.indices.push_back(out_.raw_units[entry]);
                    out_.values.push_back(coverage_values_[entry]);
                }
            }
            out_.indptr.push_back(static_cast<std::int64_t>(out_.indices.size()));
        }

        // Groups (the candidate's, else its experience's, else its own) and arrival times (the
        // candidate's, else its experience's timestamp, else the experience's position, else
        // the candidate's own).
        Index groups(n);  // named groups; a group of its own is new by construction (ids are unique)
        out_.group_of.reserve(n);
        out_.time.reserve(n);
        out_.cost.reserve(n);
        out_.representations.reserve(n);
        double total_cost = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            const Candidate& c = candidates_[i];
            const std::int32_t exp = c.experience.empty() ? -1 : experiences.find(c.experience);
            if (!experiences_.empty() && !c.experience.empty() && exp < 0) doubt();
            const auto next = static_cast<std::int32_t>(out_.group_names.size());
            const std::string_view name = !c.group.empty() ? c.group : c.experience;
            if (name.empty()) {
                out_.group_names.push_back(c.id);
                out_.own_group.push_back(1);
                out_.group_of.push_back(next);
            } else {
                const std::int32_t g = groups.find_or_add(name, next);
                if (g == next) {
                    out_.group_names.push_back(name);
                    out_.own_group.push_back(0);
                }
                out_.group_of.push_back(g);
            }
            double time = static_cast<double>(i);
            if (c.has_time) {
                time = c.time;
            } else if (exp >= 0) {
                const Experience& e = experiences_[static_cast<std::size_t>(exp)];
                time = e.has_time ? e.time : static_cast<double>(exp);
            }
            out_.time.push_back(time);
            out_.cost.push_back(c.cost);
            out_.representations.push_back(c.representation);
            total_cost += c.cost;
        }
        if (!(total_cost <= kSafeSum)) doubt();

        // F of every candidate at once stays well inside the double range.
        double total = 0.0;
        bool all_cap1 = true;
        for (SaturationKind s : out_.unit_saturation) all_cap1 = all_cap1 && s == SaturationKind::Cap1;
        if (all_cap1) {
            for (double w : out_.weight) total += w;
        } else {
            std::vector<double> reach(m, 0.0);
            for (std::size_t k = 0; k < out_.indices.size(); ++k)
                reach[static_cast<std::size_t>(out_.indices[k])] += out_.values[k];
            for (std::size_t r = 0; r < m; ++r) {
                Saturation h;  // the core's own h (named kinds only)
                h.kind = out_.unit_saturation[r];
                total += out_.weight[r] * h(reach[r]);
            }
        }
        if (!(total <= kSafeSum)) doubt();
    }

    std::string_view text_;
    Reader in_;
    const ScanLimits& limits_;
    ScannedPackage out_;
    bool has_format_ = false;
    bool has_budgets_ = false;
    bool has_budget_ = false;
    std::vector<Unit> units_;
    std::vector<Candidate> candidates_;
    std::vector<Experience> experiences_;
    std::vector<std::string_view> query_ids_;
    std::vector<std::string_view> required_;  // every query's required unit ids, in order
    std::vector<std::size_t> query_ends_;     // where each query's ids end in required_
    std::vector<std::string_view> coverage_keys_;
    std::vector<double> coverage_values_;
    std::vector<std::string_view> estimated_keys_;
};

// The counting pass: the scanner's grammar, nothing kept but counts.
PackageCounts count(std::string_view text, std::size_t max_depth) {
    Reader in(text, max_depth);
    PackageCounts out;
    const auto counted = [&](std::size_t& n) { in.array([&] { ++n; in.skip_value(); }); };
    in.object([&](std::string_view key) {
        if (is(key, "package_id") && in.peek() == '"') {
            out.package_id = in.plain_string();
        } else if (is(key, "units") && in.peek() == '[') {
            counted(out.units);
        } else if (is(key, "budgets") && in.peek() == '[') {
            counted(out.budgets);
        } else if (is(key, "candidates") && in.peek() == '[') {
            in.array([&] {
                ++out.candidates;
                if (in.peek() != '{') return in.skip_value();
                in.object([&](std::string_view field) {
                    if (is(field, "coverage") && in.peek() == '{') {
                        in.object([&](std::string_view) { ++out.nonzeros; in.skip_value(); });
                    } else {
                        in.skip_value();
                    }
                });
            });
        } else {
            in.skip_value();
        }
    });
    if (!in.at_end()) doubt();
    return out;
}

} // namespace

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The four hex digits of a \u escape at p (p + 6 <= end), or -1.
long hex4(const char* p, const char* end) {
    if (end - p < 6 || p[0] != '\\' || p[1] != 'u') return -1;
    long v = 0;
    for (int k = 2; k < 6; ++k) {
        const int d = hex_digit(p[k]);
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

// One escape, at the backslash p, written at o in its one canonical spelling: a character
// escaped with \u is written as itself (UTF-8), but for the quote, the backslash and control
// characters (short forms where JSON has them, else \u00xx) and lone surrogates (\udxxx, lower
// case); "\/" is "/". So the same text spelt with escapes or without (Python's json.dump
// escapes every non-ASCII character) compacts the same. Returns where the escape ends. The
// output never grows: a character written as itself takes at most the bytes of its escape.
const char* canonical_escape(const char* p, const char* end, char*& o) {
    auto put_hex = [&](long cp) {
        static const char digits[] = "0123456789abcdef";
        *o++ = '\\';
        *o++ = 'u';
        for (int shift = 12; shift >= 0; shift -= 4) *o++ = digits[(cp >> shift) & 0xF];
    };
    if (end - p < 2) {  // a text cut after a backslash: kept as it is
        *o++ = *p;
        return p + 1;
    }
    long cp = -1;
    const char* next = p + 2;
    switch (p[1]) {
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case 'u':
            cp = hex4(p, end);
            if (cp >= 0) {
                next = p + 6;
                const long low = cp >= 0xD800 && cp < 0xDC00 ? hex4(next, end) : -1;
                if (low >= 0xDC00 && low < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    next += 6;
                }
            }
            break;
        default: break;
    }
    if (cp < 0) {  // not an escape JSON knows: copied as it is (the readers refuse it)
        *o++ = p[0];
        *o++ = p[1];
        return p + 2;
    }
    switch (cp) {
        case '"': *o++ = '\\'; *o++ = '"'; return next;
        case '\\': *o++ = '\\'; *o++ = '\\'; return next;
        case '\b': *o++ = '\\'; *o++ = 'b'; return next;
        case '\f': *o++ = '\\'; *o++ = 'f'; return next;
        case '\n': *o++ = '\\'; *o++ = 'n'; return next;
        case '\r': *o++ = '\\'; *o++ = 'r'; return next;
        case '\t': *o++ = '\\'; *o++ = 't'; return next;
        default: break;
    }
    if (cp < 0x20 || (cp >= 0xD800 && cp < 0xE000)) {
        put_hex(cp);
    } else if (cp < 0x80) {
        *o++ = static_cast<char>(cp);
    } else if (cp < 0x800) {
        *o++ = static_cast<char>(0xC0 | (cp >> 6));
        *o++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = static_cast<char>(0xE0 | (cp >> 12));
        *o++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *o++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        *o++ = static_cast<char>(0xF0 | (cp >> 18));
        *o++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        *o++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *o++ = static_cast<char>(0x80 | (cp & 0x3F));
    }
    return next;
}

} // namespace

std::string compact_json(std::string_view text) {
    std::string out(text.size(), '\0');
    const char* p = text.data();
    const char* const end = p + text.size();
    char* o = out.data();
    while (p < end) {
        const char c = *p++;
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        *o++ = c;
        if (c != '"') continue;
        // A string: copied in runs up to its closing quote; an escaped character (a quote
        // included) is copied with its backslash and does not end it.
        for (;;) {
            const auto* quote = static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(end - p)));
            const char* stop = quote != nullptr ? quote : end;
            const auto* slash = static_cast<const char*>(std::memchr(p, '\\', static_cast<std::size_t>(stop - p)));
            if (slash == nullptr) {
                const char* next = quote != nullptr ? quote + 1 : end;
                std::memcpy(o, p, static_cast<std::size_t>(next - p));
                o += next - p;
                p = next;
                break;
            }
            std::memcpy(o, p, static_cast<std::size_t>(slash - p));
            o += slash - p;
            p = canonical_escape(slash, end, o);
        }
    }
    out.resize(static_cast<std::size_t>(o - out.data()));
    return out;
}

std::optional<PackageCounts> count_package(std::string_view text, std::size_t max_depth) {
    try {
        return count(text, max_depth);
    } catch (const Doubt&) {
        return std::nullopt;
    }
}

std::optional<ScannedPackage> scan_package(std::string_view text, const ScanLimits& limits) {
    try {
        return PackageScan(text, limits).run();
    } catch (const Doubt&) {
        return std::nullopt;
    }
}

} // namespace memaudit
