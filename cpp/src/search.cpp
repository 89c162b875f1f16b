// The tree of the branch-and-bound (search.hpp): node state kept on a path with undo logs,
// incumbents, dominance in the "group stays empty" child, reduced-cost fixing
//     any completion holding u is worth at most UB + rc_u (LP duality): u goes when that is
//     at most incumbent + tol (or + granularity - tol on a lattice objective),
// branching on a group, child order by inherited bound, limits, the solver log and run().
// The bound of a node is in node_bound.cpp, its cuts in root_cuts.cpp, the integral knapsack
// bound in knapsack_dp.cpp and the heuristics in root_heuristics.cpp.
#include "memaudit/search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "search_tuning.hpp"

namespace memaudit {

BranchAndBound::BranchAndBound(const ReducedProblem& problem, double budget, std::vector<double>& lambda,
                               const SearchLimits& limits, const std::vector<char>* allowed)
    : p_(problem), budget_(budget), limit_(budget_limit(budget)), lambda_(lambda), limits_(limits) {
    const auto n = static_cast<std::size_t>(p_.num_candidates);
    const auto groups = static_cast<std::size_t>(p_.num_groups);
    const auto units = static_cast<std::size_t>(p_.num_units);
    available_.init(n);
    open_groups_.init(groups);
    group_available_.assign(groups, 0);
    for (auto g : p_.group_of) ++group_available_[g];
    for (std::size_t g = groups; g-- > 0;)
        if (group_available_[g] == 0) open_groups_.erase(static_cast<std::int32_t>(g));
    // Candidates that never fit are gone for good: the root state is never undone.
    for (std::int32_t u = 0; u < p_.num_candidates; ++u)
        if (p_.cost[u] > limit_ || (allowed && !(*allowed)[u])) remove_candidate(u);
    removal_log_.clear();
    group_used_.assign((groups + 63) / 64, 0);
    z_.assign(units, 0.0);
    unit_stamp_.assign(units, 0);
    unit_.resize(units);
    coef_.assign(units, 0.0);
    lp_coverage_.assign(units, 0.0);
    direction_.assign(units, 0.0);
    candidate_stamp_.assign(n, 0);
    entry_room_.assign(p_.values.size(), 0.0);
    entry_gain_.assign(p_.values.size(), 0.0);
    if (lambda_.size() != units) lambda_.assign(units, 1.0);
    integral_costs_ = true;
    for (auto c : p_.cost) integral_costs_ = integral_costs_ && c == std::floor(c) && c < 1e9;
    unit_scale_.assign(units, 1.0);
    if (limits_.cut_rounds > 0 && p_.num_candidates >= limits_.cut_min_candidates)
        for (std::int32_t r = 0; r < p_.num_units && !cuts_enabled_; ++r) cuts_enabled_ = coverage_cut_unit(p_, r);
    if (cuts_enabled_) {
        unit_cuts_.resize(units);
        candidate_cuts_.resize(n);
        xbar_.assign(n, 0.0);
    }
    started_ = Clock::now();
    next_poll_ = started_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.poll_interval));
    const double first = limits_.progress_first > 0.0 ? limits_.progress_first : limits_.progress_interval;
    next_progress_ = started_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(first));
}

bool BranchAndBound::root_gap_is_wide() const {
    const double gap = root_bound_ - incumbent_value_;
    if (limits_.granularity > 0.0) return gap > kWideRootGapSteps * limits_.granularity;
    return gap > kWideRootRelativeGap * std::max(1.0, std::abs(incumbent_value_));
}

double BranchAndBound::current_upper_bound() const {
    if (!root_done_) return std::max(capped(root_bound_), incumbent_value_);
    double upper = std::max(pruned_bound_, incumbent_value_);
    for (const auto& level : levels_)
        for (std::size_t c = level.next; c < level.children_end; ++c) upper = std::max(upper, capped(children_[c].bound));
    return upper;
}

bool BranchAndBound::prunes(double bound) {
    if (bound <= threshold()) return true;
    if (capped(bound) > threshold()) return false;
    external_bound_used_ = true;
    return true;
}

void BranchAndBound::report_progress(bool force) {
    // An atomic load, no call: a solver racing this one says here that it has proven the budget.
    if (limits_.stop_budget && limits_.stop_budget->load(std::memory_order_relaxed) == budget_) stop_requested_ = true;
    if (limits_.external_bound) {
        external_bound_ = std::min(external_bound_, limits_.external_bound->get(budget_));
        yield_share(limits_.external_bound->share(budget_));
    }
    if (!limits_.progress) return;
    const auto now = Clock::now();
    if (!force && now < next_progress_) return;
    next_progress_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.progress_interval));
    SearchProgress line;
    line.budget = budget_;
    line.nodes = nodes_;
    line.incumbent = incumbent_value_;
    line.upper_bound = current_upper_bound();
    if (!std::isfinite(line.upper_bound)) line.upper_bound = std::numeric_limits<double>::infinity();
    line.gap = line.upper_bound > 0.0 && std::isfinite(line.upper_bound)
                   ? std::max(0.0, (line.upper_bound - line.incumbent) / line.upper_bound)
                   : (line.upper_bound > 0.0 ? 1.0 : 0.0);
    line.seconds = std::chrono::duration<double>(now - started_).count();
    line.root_done = root_done_;
    line.incumbent_store = incumbent_;
    if (root_done_) line.open_candidates = open_at_root_;
    log_begun_ = true;
    if (limits_.progress(line)) stop_requested_ = true;
}

void BranchAndBound::add_coverage(std::int32_t u, double& value) {
    for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
        const auto r = p_.indices[k];
        const double before = z_[r];
        coverage_log_.emplace_back(r, before);
        z_[r] = before + p_.values[k];
        value += p_.unit_value(r, z_[r]) - p_.unit_value(r, before);
    }
}

void BranchAndBound::undo_coverage(std::size_t mark) {
    while (coverage_log_.size() > mark) {
        z_[coverage_log_.back().first] = coverage_log_.back().second;
        coverage_log_.pop_back();
    }
}

double BranchAndBound::threshold() const {
    const double tol = limits_.relative_tolerance * std::max(1.0, std::abs(incumbent_value_));
    // The lattice step only counts when it dwarfs the rounding tol is there to absorb.
    if (limits_.granularity > 1e3 * tol) return incumbent_value_ + limits_.granularity - tol;
    return incumbent_value_ + tol;
}

void BranchAndBound::offer(const std::vector<std::int32_t>& store) {
    double cost = 0.0;
    std::vector<char> seen(static_cast<std::size_t>(p_.num_groups), 0);
    for (auto u : store) {
        if (u < 0 || u >= p_.num_candidates || seen[p_.group_of[u]]) return;
        seen[p_.group_of[u]] = 1;
        cost += p_.cost[u];
    }
    if (cost > limit_) return;
    const double value = p_.value_of(store);
    if (value > incumbent_value_) {
        set_incumbent(store, value);
    }
}

void BranchAndBound::set_incumbent(const std::vector<std::int32_t>& store, double value) {
    incumbent_ = store;
    incumbent_value_ = value;
    incumbent_fresh_ = true;
    if (limits_.on_incumbent) limits_.on_incumbent(incumbent_, incumbent_value_);
}

void BranchAndBound::polish_incumbent() {
    if (!polisher_ || !incumbent_fresh_) return;
    incumbent_fresh_ = false;
    Store current;
    current.candidates = incumbent_;
    current.value = incumbent_value_;
    const Store better = polisher_->improve(current);
    if (better.value > incumbent_value_) {
        incumbent_ = better.candidates;
        incumbent_value_ = better.value;
        if (limits_.on_incumbent) limits_.on_incumbent(incumbent_, incumbent_value_);
    }
}

void BranchAndBound::update_incumbent() {
    if (value_ > incumbent_value_) {
        set_incumbent(store_, value_);
    }
}

void BranchAndBound::remove_candidate(std::int32_t u) {
    available_.erase(u);
    removal_log_.push_back(u);
    const auto g = p_.group_of[u];
    if (--group_available_[g] == 0) open_groups_.erase(g);
}

void BranchAndBound::close_group(std::int32_t g) {
    for (auto m = p_.group_ptr[g]; m < p_.group_ptr[g + 1]; ++m) {
        const auto u = p_.group_members[m];
        if (available_.contains(u)) remove_candidate(u);
    }
}

bool BranchAndBound::dominates(std::int32_t u, std::int32_t v) const {
    // Coverage beyond the residual cap is worthless below this node, so compare clipped rows.
    if (p_.cost[u] > p_.cost[v]) return false;
    std::int64_t j = p_.indptr[u];
    const std::int64_t end = p_.indptr[u + 1];
    for (std::int64_t k = p_.indptr[v]; k < p_.indptr[v + 1]; ++k) {
        const auto r = p_.indices[k];
        const double room = p_.cap[r] - z_[r];
        const double need = std::min(p_.values[k], room);
        if (!(need > 0.0)) continue;
        while (j < end && p_.indices[j] < r) ++j;
        if (j == end || p_.indices[j] != r || std::min(p_.values[j], room) < need) return false;
    }
    return true;
}

void BranchAndBound::remove_dominated() {
    // In the child where group G stays empty, a store holding v from another group, with v
    // dominated by some u of G (c_u <= c_v, clipped coverage of u >= that of v), can swap v
    // for u: still feasible, no less valuable, and it lies in the sibling that includes u.
    // So v is not needed here. A dominated v shares a unit with u: scan u's columns.
    ++scan_stamp_;
    for (auto u : dominators_) {
        for (std::int64_t k = p_.indptr[u]; k < p_.indptr[u + 1]; ++k) {
            const auto r = p_.indices[k];
            for (auto c = p_.unit_ptr[r]; c < p_.unit_ptr[r + 1]; ++c) {
                const auto v = p_.unit_candidates[c];
                if (candidate_stamp_[v] == scan_stamp_ || !available_.contains(v)) continue;
                candidate_stamp_[v] = scan_stamp_;
                for (auto w : dominators_) {
                    if (dominates(w, v)) {
                        remove_candidate(v);
                        break;
                    }
                }
            }
        }
    }
}

void BranchAndBound::include(std::int32_t u) {
    const auto g = static_cast<std::size_t>(p_.group_of[u]);
    group_used_[g / 64] |= std::uint64_t{1} << (g % 64);
    add_coverage(u, value_);
    store_.push_back(u);
    cost_ += p_.cost[u];
}

void BranchAndBound::restore(const Level& level) {
    while (removal_log_.size() > level.removal_mark) {
        const auto u = removal_log_.back();
        removal_log_.pop_back();
        if (group_available_[p_.group_of[u]]++ == 0) open_groups_.restore();
        available_.restore();
    }
    undo_coverage(level.coverage_mark);
    while (store_.size() > level.store_size) {
        const auto g = static_cast<std::size_t>(p_.group_of[store_.back()]);
        group_used_[g / 64] &= ~(std::uint64_t{1} << (g % 64));
        store_.pop_back();
    }
    value_ = level.value;
    cost_ = level.cost;
}

bool BranchAndBound::poll_says_stop(Clock::time_point now) {
    if (!poll_said_stop_ && limits_.poll && now >= next_poll_) {
        next_poll_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.poll_interval));
        poll_said_stop_ = limits_.poll();
    }
    return poll_said_stop_;
}

void BranchAndBound::yield_share(double share) {
    // Run slices of kYieldSlice, each followed by a sleep that leaves the thread's time at
    // `share`: a racing solver on the same cores gets the rest.
    constexpr auto kYieldSlice = std::chrono::milliseconds(2);
    if (share >= 1.0) {
        slice_begun_ = Clock::time_point{};
        return;
    }
    const auto now = Clock::now();
    if (slice_begun_ == Clock::time_point{}) {
        slice_begun_ = now;
        return;
    }
    // A slice that ran long (a phase without checks) sleeps as if it were two slices: the
    // search must hear a stop soon, and the share is lifted as soon as it is told.
    const auto ran = std::min<Clock::duration>(now - slice_begun_, 2 * kYieldSlice);
    if (ran < kYieldSlice) return;
    std::this_thread::sleep_for(std::chrono::duration_cast<Clock::duration>(ran * ((1.0 - share) / share)));
    slice_begun_ = Clock::now();
}

bool BranchAndBound::halted() {
    if (stop_requested_ || poll_said_stop_) return true;
    if (limits_.cancel && limits_.cancel->load(std::memory_order_relaxed)) return true;
    const auto now = Clock::now();
    return now >= limits_.deadline || poll_says_stop(now);
}

bool BranchAndBound::should_stop() {
    if (nodes_ >= limits_.node_limit) {
        status_ = SolveStatus::NodeLimit;
        return true;
    }
    if (poll_said_stop_ || (limits_.cancel && limits_.cancel->load(std::memory_order_relaxed))) {
        status_ = SolveStatus::Interrupted;
        return true;
    }
    report_progress(false);
    const auto now = Clock::now();
    if (now >= limits_.deadline || stop_requested_) {
        status_ = SolveStatus::TimeLimit;
        return true;
    }
    if (poll_says_stop(now)) {
        status_ = SolveStatus::Interrupted;
        return true;
    }
    return false;
}

std::size_t BranchAndBound::fix_by_reduced_cost() {
    // Any completion holding u is worth at most node_dual + rc_u (LP duality): if that does
    // not beat the incumbent, u is out for the whole subtree.
    const double cut = threshold();
    std::size_t fixed = 0;
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        for (std::size_t i = lp_.item_begin(lg); i < lp_.item_end(lg); ++i) {
            const double b = node_dual_ + lp_.reduced_cost(i, lg);
            if (b <= cut) {
                pruned_bound_ = std::max(pruned_bound_, b);
                remove_candidate(lp_.item_candidate(i));
                ++fixed;
            }
        }
    }
    return fixed;
}

void BranchAndBound::branch(double bound) {
    const double cut = threshold();
    // A group the bound cannot do without (UB - pi_G <= cut) must be used: branch there
    // first, on the one with the fewest candidates left (a single one is a forced move).
    // Otherwise branch on the group the bound leans on most (largest pi_G).
    std::size_t branch_lg = 0;
    double branch_price = -1.0;
    std::size_t forced_size = std::numeric_limits<std::size_t>::max();
    for (std::size_t lg = 0; lg < lp_.num_groups(); ++lg) {
        const double pi = lp_.group_price(lg);
        const std::size_t size = lp_.item_end(lg) - lp_.item_begin(lg);
        if (node_dual_ - pi <= cut) {
            if (size < forced_size || (size == forced_size && pi > branch_price)) {
                forced_size = size;
                branch_price = pi;
                branch_lg = lg;
            }
        } else if (forced_size == std::numeric_limits<std::size_t>::max() && pi > branch_price) {
            branch_price = pi;
            branch_lg = lg;
        }
    }
    const auto group = p_.group_of[lp_.item_candidate(lp_.item_begin(branch_lg))];
    const std::size_t children_begin = children_.size();
    for (std::size_t i = lp_.item_begin(branch_lg); i < lp_.item_end(branch_lg); ++i) {
        if (!available_.contains(lp_.item_candidate(i))) continue;
        const double b = std::min(bound, node_dual_ + lp_.reduced_cost(i, branch_lg));
        if (b > cut) children_.push_back(Child{lp_.item_candidate(i), b});
        else pruned_bound_ = std::max(pruned_bound_, b);
    }
    const double skip = std::min(bound, node_dual_ - branch_price);
    if (skip > cut) children_.push_back(Child{-1, skip});
    else pruned_bound_ = std::max(pruned_bound_, skip);
    if (children_.size() == children_begin) return;
    std::stable_sort(children_.begin() + static_cast<std::ptrdiff_t>(children_begin), children_.end(),
                     [](const Child& a, const Child& b) { return a.bound > b.bound; });
    levels_.push_back(Level{group, children_begin, children_.size(), children_begin, removal_log_.size(),
                            coverage_log_.size(), store_.size(), value_, cost_});
}

SearchOutcome BranchAndBound::run() {
    auto process = [this](double inherited, int iterations, int fixing_rounds) {
        ++nodes_;
        update_incumbent();
        double ub = std::min(inherited, bound_node(iterations));
        if (at_root_) root_bound_ = std::min(root_bound_, std::max(ub, value_));
        if (ub > threshold() && !stop_requested_) ub = std::min(ub, integral_knapsack_bound());
        for (int round = 0;; ++round) {
            if (open_groups_.size() == 0) return; // leaf: S itself was offered above
            if (prunes(ub)) {
                pruned_bound_ = std::max(pruned_bound_, capped(ub));
                return;
            }
            if (round == 0) try_lp_rounding();
            // Fixing shrinks the node's problem, and the bound of the smaller problem is
            // often tighter (it loses the fractional mixes that used the fixed candidates):
            // bound again while that keeps removing candidates.
            const std::size_t fixed_now = fix_by_reduced_cost();
            if (fixed_now == 0 || round + 1 >= fixing_rounds || stop_requested_) break;
            // The multipliers are warm now: a short run re-tightens the smaller problem.
            const int steps = iterations > 0 ? iterations : automatic_root_iterations();
            ub = std::min(ub, bound_node(std::min(steps, kRefixIterations)));
        }
        branch(ub);
    };

    at_root_ = true;
    if (limits_.root_iterations > 0) {
        process(std::numeric_limits<double>::infinity(), limits_.root_iterations, limits_.root_fixing_rounds);
    } else {
        // The root in stages. Most packages whose root closes at all close after a few
        // subgradient steps, once the integral bound and reduced-cost fixing have had their
        // go; the rest of the root's effort (more steps, coordinate descent, cut rounds) is
        // spent only on the roots still open after the quick stages.
        const int total = automatic_root_iterations();
        root_candidates_ = available_.size();
        // The full root starts again from the multipliers the quick stages started from:
        // coordinate descent from an early point can stall where subgradients do not recover.
        const std::vector<double> start_lambda = lambda_;
        int done = 0;
        for (int target : kQuickRootStages) {
            if (target >= total) break;
            quick_root_ = true;
            quick_root_budget_ = total;
            levels_.clear();
            children_.clear();
            process(done == 0 ? std::numeric_limits<double>::infinity() : root_bound_, target - done,
                    std::min(limits_.root_fixing_rounds, kQuickRootFixingRounds));
            quick_root_ = false;
            done = target;
            if (levels_.empty() || should_stop()) break;
        }
        if (done == 0 || (!levels_.empty() && !stop_requested_)) {
            const bool first = done == 0;
            levels_.clear();
            children_.clear();
            const std::vector<double> quick_lambda = lambda_;
            lambda_ = start_lambda;
            if (!first) --nodes_; // the same root node, processed again
            if (cuts_enabled_) std::fill(xbar_.begin(), xbar_.end(), 0.0); // cuts separate at the full root's own average
            process(first ? std::numeric_limits<double>::infinity() : root_bound_, total, limits_.root_fixing_rounds);
            // On some packages the quick stage's multipliers are the better start (entity
            // timeline 3,000 @ 5%: root bound 992.70 from the start, 991.40 = OPT from the
            // quick stage's). A root left open well above its incumbent is processed once more
            // from them, keeping the first pass's cuts and fixings; close to it, what is missing
            // is a store, not a bound (there a second pass cost dense 1,000 @ 2% its optimum).
            if (!first && !levels_.empty() && !stop_requested_ && root_gap_is_wide()) {
                levels_.clear();
                children_.clear();
                lambda_ = quick_lambda;
                --nodes_; // the same root node, processed again
                if (cuts_enabled_) std::fill(xbar_.begin(), xbar_.end(), 0.0);
                process(root_bound_, total, limits_.root_fixing_rounds);
            }
        }
        root_candidates_ = 0;
    }
    at_root_ = false;
    // The next budget of a sweep starts from the root's multipliers, not from wherever the
    // tree search leaves them (deep nodes tune them to their own residual problems).
    const std::vector<double> root_lambda = lambda_;

    if (polisher_ && !levels_.empty()) {
        // The root did not close: local search on the warm start and on the best rounded
        // LP store, with a larger budget than the polish of later incumbents.
        const std::int64_t work = kRootPolishWork * (static_cast<std::int64_t>(p_.indices.size()) + p_.num_candidates);
        Store current;
        current.candidates = incumbent_;
        current.value = incumbent_value_;
        for (const Store* start : {&current, &root_rounded_}) {
            if (start->candidates.empty()) continue;
            const Store better = polisher_->improve(*start, work);
            if (better.value > incumbent_value_) set_incumbent(better.candidates, better.value);
        }
        incumbent_fresh_ = false;
    }
    // Restarts: when the core heuristic improves the incumbent, the root is processed again
    // (nothing below it was explored yet): reduced-cost fixing against the better incumbent
    // removes much more, and the bound of the smaller problem is tighter.
    for (int restart = 0; !levels_.empty() && limits_.core_search && restart < kRootRestarts; ++restart) {
        if (should_stop()) break;
        const double before = incumbent_value_;
        core_search();
        if (!(incumbent_value_ > before) || should_stop()) break;
        levels_.clear();
        children_.clear();
        at_root_ = true;
        process(root_bound_, limits_.root_iterations, limits_.root_fixing_rounds);
        at_root_ = false;
    }
    root_done_ = true;
    open_at_root_.clear();
    if (!levels_.empty()) {
        open_at_root_.reserve(available_.size());
        for (std::size_t i = 0; i < available_.size(); ++i) open_at_root_.push_back(available_.at(i));
        std::sort(open_at_root_.begin(), open_at_root_.end());
    }
    // A log that has begun hears at once that the root is done, with the candidates it left
    // open (a racing HiGHS may move to that smaller problem); a solve done before its first
    // line stays silent.
    report_progress(log_begun_);
    while (!levels_.empty()) {
        polish_incumbent();
        restore(levels_.back());
        Level& level = levels_.back();
        while (level.next < level.children_end && prunes(children_[level.next].bound)) {
            pruned_bound_ = std::max(pruned_bound_, capped(children_[level.next].bound));
            ++level.next;
        }
        if (level.next == level.children_end) {
            children_.resize(level.children_begin);
            levels_.pop_back();
            continue;
        }
        if (should_stop()) {
            stopped_ = true;
            break;
        }
        const Child child = children_[level.next++];
        if (child.candidate < 0) {
            dominators_.clear();
            for (auto m = p_.group_ptr[level.group]; m < p_.group_ptr[level.group + 1]; ++m)
                if (available_.contains(p_.group_members[m])) dominators_.push_back(p_.group_members[m]);
        }
        close_group(level.group);
        if (child.candidate >= 0) include(child.candidate);
        else remove_dominated();
        process(child.bound, limits_.node_iterations, limits_.node_fixing_rounds);
    }

    lambda_ = root_lambda;
    SearchOutcome out;
    out.open_candidates = std::move(open_at_root_);
    out.nodes = nodes_;
    out.store = incumbent_;
    std::sort(out.store.begin(), out.store.end());
    out.value = incumbent_value_;
    out.external_bound_used = external_bound_used_;
    double upper = std::max(pruned_bound_, incumbent_value_);
    if (stopped_) {
        out.status = status_;
        for (const auto& level : levels_)
            for (std::size_t c = level.next; c < level.children_end; ++c) upper = std::max(upper, capped(children_[c].bound));
    } else {
        out.status = SolveStatus::Optimal;
    }
    out.upper_bound = upper;
    out.root_bound = std::isfinite(root_bound_) ? std::max(root_bound_, upper) : upper;
    return out;
}
} // namespace memaudit
