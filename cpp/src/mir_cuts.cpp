// c-MIR cuts of one row (mir_cuts.hpp has the inequality and its separation).
#include "memaudit/mir_cuts.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace memaudit {

namespace {

// Deltas tried per row, and columns tried measured from their other bound, at the most.
constexpr std::size_t kMaxDeltas = 8;
constexpr std::size_t kMaxComplements = 10;

// The row measured from its columns' bounds (t_j >= 0): coefficient, range (upper - lower in
// steps; inf without one), the LP point's t, whether the column is on a lattice, and the
// sign and bound that take t back to v = bound + sign * step * t.
struct Term {
    std::int32_t column;
    double alpha, range, t, step, bound, sign;
    bool lattice;
};

// The MIR inequality of sum alpha_j t_j <= beta at delta (terms may be measured from the other
// bound: flipped), its coefficients on t; false when frac(beta / delta) is too near a whole
// number for a safe cut.
bool mir_at(const std::vector<Term>& terms, const std::vector<char>& flipped, double beta, double delta,
            std::vector<double>* g, double* rhs, double* efficacy) {
    double b = beta;
    for (std::size_t k = 0; k < terms.size(); ++k)
        if (flipped[k]) b -= terms[k].alpha * terms[k].range;
    const double bd = b / delta;
    const double f = bd - std::floor(bd);
    if (!(f > 0.01 && f < 0.99) || !std::isfinite(bd)) return false;
    g->assign(terms.size(), 0.0);
    double lhs = 0.0, norm = 0.0;
    for (std::size_t k = 0; k < terms.size(); ++k) {
        const Term& e = terms[k];
        const double a = (flipped[k] ? -e.alpha : e.alpha) / delta;
        const double t = flipped[k] ? e.range - e.t : e.t;
        double c;
        if (e.lattice) {
            const double fl = std::floor(a);
            c = fl + std::max(0.0, a - fl - f) / (1.0 - f);
        } else {
            c = std::min(0.0, a) / (1.0 - f);
        }
        (*g)[k] = c;
        lhs += c * t;
        const double per_v = c / e.step; // the coefficient on v
        norm += per_v * per_v;
    }
    *rhs = std::floor(bd);
    if (!(norm > 0.0)) return false;
    *efficacy = (lhs - *rhs) * delta / std::sqrt(norm * delta * delta);
    return true;
}

} // namespace

bool separate_mir_cut(const std::vector<std::int32_t>& columns, const std::vector<double>& values, double b,
                      const MirColumns& cols, double min_efficacy, MirCut* cut) {
    std::vector<Term> terms;
    terms.reserve(columns.size());
    double beta = b;
    for (std::size_t k = 0; k < columns.size(); ++k) {
        const auto j = static_cast<std::size_t>(columns[k]);
        const double a = values[k];
        if (a == 0.0) continue;
        const double lo = cols.lower[j], up = cols.upper[j], v = cols.point[j];
        double step = cols.step[j];
        bool lattice = step > 0.0 && std::isfinite(lo);
        double range = std::isfinite(up) && std::isfinite(lo) ? (up - lo) : INFINITY;
        if (lattice) {
            range /= step;
            // Measuring from the upper bound needs it on the lattice too.
            if (std::isfinite(range) && std::fabs(range - std::round(range)) > 1e-9) range = INFINITY;
        } else {
            step = 1.0;
        }
        bool from_upper;
        if (lattice)
            from_upper = std::isfinite(range) && up - v < v - lo;
        else
            from_upper = a > 0.0 && std::isfinite(up);
        const double bound = from_upper ? up : lo;
        if (!std::isfinite(bound)) return false; // a free column: no MIR of this row
        const double sign = from_upper ? -1.0 : 1.0;
        beta -= a * bound;
        const double alpha = a * sign * step;
        const double t = std::max(0.0, (v - bound) * sign / step);
        terms.push_back(Term{columns[k], alpha, range, t, step, bound, sign, lattice});
    }
    if (terms.empty() || !std::isfinite(beta)) return false;
    // Deltas: |alpha| of the lattice columns strictly inside their range at the LP point.
    // Those of the kMaxDeltas columns furthest inside their range (each delta costs a pass over
    // the row, and tableau rows are long).
    std::vector<std::pair<double, double>> inside; // (distance to the nearer bound, |alpha|)
    for (const auto& e : terms)
        if (e.lattice && e.t > 1e-9 && e.t < e.range - 1e-9 && std::fabs(e.alpha) > 1e-6)
            inside.emplace_back(std::min(e.t, e.range - e.t), std::fabs(e.alpha));
    if (inside.empty()) return false;
    std::sort(inside.begin(), inside.end(), [](const auto& p, const auto& q) { return p.first > q.first; });
    std::vector<double> deltas;
    for (const auto& [distance, alpha] : inside) {
        if (std::find(deltas.begin(), deltas.end(), alpha) == deltas.end()) deltas.push_back(alpha);
        if (deltas.size() == kMaxDeltas) break;
    }
    std::vector<char> flipped(terms.size(), 0);
    std::vector<double> g, best_g;
    double rhs = 0.0, best_rhs = 0.0, eff = 0.0, best_eff = -INFINITY, best_delta = 0.0;
    auto consider = [&](double delta) {
        if (mir_at(terms, flipped, beta, delta, &g, &rhs, &eff) && eff > best_eff + 1e-12) {
            best_eff = eff, best_delta = delta, best_rhs = rhs;
            best_g = g;
            return true;
        }
        return false;
    };
    for (double d : deltas) consider(d);
    if (!(best_eff > 0.0)) return false;
    const double d0 = best_delta;
    for (double d : {d0 / 2.0, d0 / 4.0, d0 / 8.0}) consider(d);
    // Complementing: the lattice columns nearest the middle of their range first.
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < terms.size(); ++k)
        if (terms[k].lattice && std::isfinite(terms[k].range) && terms[k].t > 1e-9 && terms[k].t < terms[k].range - 1e-9)
            order.push_back(k);
    std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) {
        return std::fabs(terms[p].t - 0.5 * terms[p].range) < std::fabs(terms[q].t - 0.5 * terms[q].range);
    });
    if (order.size() > kMaxComplements) order.resize(kMaxComplements);
    std::vector<char> best_flipped = flipped;
    for (auto k : order) {
        flipped[k] = 1;
        if (consider(best_delta))
            best_flipped = flipped;
        else
            flipped[k] = 0;
    }
    flipped = best_flipped;
    if (!(best_eff > min_efficacy)) return false;
    // Back to v: the cut is best_g . t' <= best_rhs, times delta; t' = range - t where flipped,
    // t = sign (v - bound) / step.
    double out_rhs = best_rhs * best_delta;
    std::vector<double> coef(terms.size());
    double largest = 0.0;
    for (std::size_t k = 0; k < terms.size(); ++k) {
        const Term& e = terms[k];
        double c = best_g[k] * best_delta; // on t' (or t)
        if (flipped[k]) {
            out_rhs -= c * e.range;
            c = -c;
        }
        const double cv = c * e.sign / e.step;
        out_rhs += cv * e.bound;
        coef[k] = cv;
        largest = std::max(largest, std::fabs(cv));
    }
    if (!(largest > 0.0) || !std::isfinite(out_rhs)) return false;
    cut->columns.clear();
    cut->coefficients.clear();
    double smallest = INFINITY, scale = std::fabs(out_rhs), lhs = 0.0, norm = 0.0;
    for (std::size_t k = 0; k < terms.size(); ++k) {
        const auto j = static_cast<std::size_t>(terms[k].column);
        const double c = coef[k], lo = cols.lower[j], up = cols.upper[j];
        if (std::fabs(c) < 1e-9 * largest) {
            // Dropping c v_j: the right side takes the most it can add, max(-c lo, -c up) if > 0.
            const double most = std::max(-c * lo, -c * up);
            if (most > 0.0) {
                if (!std::isfinite(most)) return false;
                out_rhs += most;
            }
            continue;
        }
        if (c == 0.0) continue;
        cut->columns.push_back(terms[k].column);
        cut->coefficients.push_back(c);
        smallest = std::min(smallest, std::fabs(c));
        const double reach = std::max(std::fabs(lo), std::isfinite(up) ? std::fabs(up) : 0.0);
        scale += std::fabs(c) * reach;
        lhs += c * cols.point[j];
        norm += c * c;
    }
    if (cut->columns.empty() || largest > 1e6 * smallest) return false;
    out_rhs += 1e-9 * scale + 1e-12;
    cut->rhs = out_rhs;
    cut->efficacy = (lhs - out_rhs) / std::sqrt(norm);
    return cut->efficacy > min_efficacy;
}

} // namespace memaudit
