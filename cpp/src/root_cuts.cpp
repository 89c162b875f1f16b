// Relax-and-cut at the root (cuts.hpp has the cut family and its proof). A cut k on unit r,
//     h_r(z_r(X)) <= c_k + sum_{u in X} pi_ku    for every store X,
// holds in every subtree; below a node with store S it reads, for a completion T,
//     g_r(T) = h_r(z_r(S) + z_r(T)) - h_r(z_r(S)) <= [c_k + pi_k(S) - h_r(z_r(S))] + sum_{u in T} pi_ku,
// so the node bound (node_bound.cpp) takes it as one more overestimator of g_r, weighted by
// its multiplier nu_k. Cuts are separated at the root, at an exponential average of the
// knapsack LP solutions of the subgradient steps (a primal estimate as in the volume
// algorithm of Barahona and Anbil, Math. Programming 87, 2000), for a few rounds, each
// followed by subgradient steps on (lambda, nu) (Lucena's relax-and-cut; Lucena,
// "Non delayed relax-and-cut algorithms", Annals of OR 140, 2005).
#include "memaudit/search.hpp"

#include <algorithm>
#include <cmath>

#include "search_tuning.hpp"

namespace memaudit {

void BranchAndBound::prepare_cuts() {
    // cut k: h_r(z_r(S) + z_r(T)) <= intercept + pi(S) + pi(T), so the residual gain of T is
    // at most intercept + pi(S) - h_r(z_r(S)) + pi(T).
    for (std::size_t k = 0; k < cuts_.size(); ++k) {
        const auto r = cuts_[k].unit;
        cut_intercept_[k] = cuts_[k].intercept - (*p_.saturation[r])(z_[r]);
    }
    for (auto u : store_)
        for (const auto& [k, pi] : candidate_cuts_[u]) cut_intercept_[k] += pi;
    for (auto& c : cut_intercept_) c = std::max(c, 0.0);
}

std::size_t BranchAndBound::add_cuts() {
    // The most violated cut of each unit (weighted), the strongest few of them: every cut
    // costs a term in each evaluation of every candidate it touches.
    std::vector<CoverageCut> found;
    CoverageCut cut;
    for (auto r : touched_) {
        if (!coverage_cut_unit(p_, r) || unit_cuts_[r].size() >= kMaxCutsPerUnit) continue;
        // The more violated of the two families' cuts (cuts.hpp) per unit and round.
        CoverageCut reach;
        const bool rounding = separate_coverage_cut(p_, r, xbar_, kMinCutViolation, &cut);
        if (separate_reach_cut(p_, r, xbar_, rounding ? cut.violation : kMinCutViolation, &reach)) cut = std::move(reach);
        else if (!rounding) continue;
        bool seen = false;
        for (auto k : unit_cuts_[r]) seen = seen || (cuts_[k].lambda == cut.lambda && cuts_[k].group == cut.group);
        if (seen) continue;
        cut.violation *= p_.weight[r];
        found.push_back(std::move(cut));
        cut = CoverageCut();
    }
    const std::size_t keep = std::min(found.size(), kMaxCutsPerRound);
    std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(keep), found.end(),
                      [](const CoverageCut& a, const CoverageCut& b) { return a.violation > b.violation; });
    found.resize(keep);
    for (auto& c : found) {
        const auto id = static_cast<std::int32_t>(cuts_.size());
        for (std::size_t j = 0; j < c.candidates.size(); ++j) candidate_cuts_[c.candidates[j]].emplace_back(id, c.coefficients[j]);
        unit_cuts_[c.unit].push_back(id);
        cuts_.push_back(std::move(c));
    }
    nu_.resize(cuts_.size(), 0.0);
    nu_direction_.resize(cuts_.size(), 0.0);
    cut_intercept_.resize(cuts_.size(), 0.0);
    cut_value_.resize(cuts_.size(), 0.0);
    return keep;
}

void BranchAndBound::purge_cuts() {
    // Cuts the multipliers left at 0 do not change the bound: dropped, so that the tree
    // pays only for the ones in use.
    if (std::all_of(nu_.begin(), nu_.end(), [](double nu) { return nu > 0.0; })) return;
    std::vector<CoverageCut> kept;
    std::vector<double> kept_nu;
    for (std::size_t k = 0; k < cuts_.size(); ++k)
        if (nu_[k] > 0.0) {
            kept.push_back(std::move(cuts_[k]));
            kept_nu.push_back(nu_[k]);
        }
    cuts_ = std::move(kept);
    nu_ = std::move(kept_nu);
    for (auto& list : unit_cuts_) list.clear();
    for (auto& list : candidate_cuts_) list.clear();
    for (std::size_t k = 0; k < cuts_.size(); ++k) {
        const auto id = static_cast<std::int32_t>(k);
        unit_cuts_[cuts_[k].unit].push_back(id);
        for (std::size_t j = 0; j < cuts_[k].candidates.size(); ++j)
            candidate_cuts_[cuts_[k].candidates[j]].emplace_back(id, cuts_[k].coefficients[j]);
    }
    nu_direction_.assign(cuts_.size(), 0.0);
    cut_intercept_.assign(cuts_.size(), 0.0);
    cut_value_.assign(cuts_.size(), 0.0);
    saved_nu_ = nu_;
}

double BranchAndBound::cut_rounds(double capacity, double best) {
    for (int round = 0; round < limits_.cut_rounds && above_threshold(best); ++round) {
        if (halted()) break;
        if (add_cuts() == 0) break;
        prepare_cuts();
        const double before = best;
        best = std::min(best, subgradient(capacity, kCutIterations, kCutTheta, kCutPatience));
        if (!(best < before - kMinDescentGain * std::max(1.0, std::abs(before))) && round > 0) break;
    }
    purge_cuts();
    prepare_cuts();
    // The loaded LP must be the one of the multipliers kept (fixing and branching read it).
    return std::min(best, evaluate_bound(capacity));
}

void BranchAndBound::inherit_cuts(const BranchAndBound& parent) {
    if (parent.cuts_.empty()) return;
    cuts_ = parent.cuts_;
    nu_ = parent.nu_;
    unit_cuts_ = parent.unit_cuts_;
    candidate_cuts_ = parent.candidate_cuts_;
    unit_scale_ = parent.unit_scale_;
    nu_direction_.assign(cuts_.size(), 0.0);
    cut_intercept_.assign(cuts_.size(), 0.0);
    cut_value_.assign(cuts_.size(), 0.0);
}

} // namespace memaudit
