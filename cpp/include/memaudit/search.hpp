// Depth-first branch-and-bound over groups for one budget.
//
// A node is a store S (feasible), the budget left R = B - c(S) and the set of candidates
// still available: in unused groups, fitting R, with F(u | S) > 0 and not fixed out. It is
// bounded by the Lagrangian / multiple-choice-knapsack LP bound of bounds.hpp (multipliers
// lambda_r live across nodes, so a child starts from its parent's and a few projected
// subgradient steps per node suffice); when the costs are integers and the node is small,
// also by the exact multiple-choice knapsack (dynamic programming over the capacity) of the
// same profits and of the marginal gains F(u | S). A node whose bound is at most
// incumbent + tol is pruned, tol = relative_tolerance * max(1, |incumbent|).
//
// The root gets more effort, since every node inherits from it: more subgradient steps (40
// to 300 with the package size), on large packages alternated with exact coordinate steps
// on the cap1 multipliers (subgradients stall just above the dual optimum on degenerate
// packages), the knapsack dynamic programme with a larger budget, and bound / fixing rounds
// until fixing stops removing candidates; a full root left open well above its incumbent runs
// once more from the quick stage's multipliers. If the root stays open, local search polishes
// the incumbent and, on packages of a few hundred candidates or more, a "core" heuristic solves
// node-limited sub-packages made of the candidates the root LP prices best (growing cores,
// like the core of knapsack algorithms); a better incumbent restarts the root (fixing then
// removes much more) before the tree search proper.
//
// Relax-and-cut at the root (cuts.hpp, root_cuts.cpp): after the multipliers settle, coverage
// cuts (a mixed-integer rounding inequality of a capped unit's row, lifted by one group's
// GUB row) are separated at the averaged knapsack-LP solutions and added as Lagrangian terms
// with their own multipliers nu; a few rounds take the root bound from the LP relaxation of
// the MILP to that LP with the cuts, which on MEMAUDIT-like packages at 5-20% budgets is OPT
// or within a lattice step of it. The cuts are valid in every subtree and every node keeps
// using them.
//
// Reductions at a node:
//  * reduced-cost fixing: u with UB + rc_u <= incumbent + tol is removed for the subtree,
//    then the (smaller) node is bounded again;
//  * dominance in the "G stays empty" child: a candidate v of another group that some
//    candidate u of G dominates (c_u <= c_v, coverage of u >= that of v once clipped to the
//    residual caps) is removed there, since swapping v for u gives a store, no worse, that
//    lies in the sibling which includes u. On tie-heavy packages this removes most of the
//    symmetric alternatives.
//
// Branching: a group the bound cannot do without (UB - pi_G <= incumbent + tol) first, the
// one with the fewest candidates left (one candidate: a forced move); else the group with
// the largest LP dual price pi_G. One child per available candidate of G plus "G stays
// empty", each with a bound inherited from the parent's LP dual (UB + rc_u or UB - pi_G),
// visited in decreasing order of that bound (the LP's own choice first: a dive that finds
// good stores early); a child whose inherited bound no longer beats the incumbent is never
// entered. Every new incumbent is polished by local search (warm_start.hpp); at the root
// the LP of every subgradient step is rounded too (a Lagrangian heuristic).
//
// When F is known to take values in delta * Z (objective_granularity), a node is pruned as
// soon as its bound is at most incumbent + delta - tol: it cannot hold a store one step
// better.
//
// Files: search.cpp (tree, fixing, branching, limits, log), node_bound.cpp (Lagrangian bound,
// subgradient, coordinate descent), root_cuts.cpp (relax-and-cut), knapsack_dp.cpp (integral
// knapsack bound), root_heuristics.cpp (LP rounding, core search); tuning constants in
// search_tuning.hpp.
//
// State changes are undone from logs (removed candidates, overwritten coverage values), so
// memory is O(nnz + candidates + units + depth) whatever the number of nodes. The partition
// matroid is a bitset of used groups.
//
// Guarantee when the search completes (status optimal): OPT(B) <= value + tol (up to
// floating-point rounding in the bound arithmetic, far below tol), and OPT(B) = value on a
// granular objective. On a limit the reported upper bound is the largest bound of any pruned
// or unexplored part of the tree, hence >= OPT(B).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "memaudit/bounds.hpp"
#include "memaudit/cuts.hpp"
#include "memaudit/external_bound.hpp"
#include "memaudit/reduction.hpp"
#include "memaudit/status.hpp"
#include "memaudit/warm_start.hpp"

namespace memaudit {

using Clock = std::chrono::steady_clock;

struct SearchLimits {
    Clock::time_point deadline = Clock::time_point::max();
    std::int64_t node_limit = std::numeric_limits<std::int64_t>::max();
    double relative_tolerance = 1e-9;
    // F takes values in granularity * Z (0: unknown), see objective_granularity().
    double granularity = 0.0;
    const std::atomic<bool>* cancel = nullptr;
    std::function<bool()> poll; // asked now and then whether to stop (e.g. a pending Ctrl-C)
    double poll_interval = 0.1; // seconds
    // Subgradient effort: many steps at the root (their multipliers are inherited by every
    // node below), a few per node where the parent's multipliers are already close.
    int root_iterations = 0; // 0: automatic (grows with the package, at most 300)
    int node_iterations = 3;
    // Bound / reduced-cost fixing rounds: fixing shrinks the node's problem and the bound of
    // the smaller problem is often tighter, which pays at the root more than below it.
    int root_fixing_rounds = 50;
    int node_fixing_rounds = 1;
    // Run the core heuristic after the root (off in the core searches themselves).
    bool core_search = true;
    // Rounds of coverage-cut separation at the root (cuts.hpp); 0 turns relax-and-cut off.
    int cut_rounds = 8;
    // Packages with fewer candidates (after the reductions) branch more cheaply than they
    // separate: no cuts there.
    std::int32_t cut_min_candidates = 400;
    // Solver log: called about every progress_interval seconds; returning true stops this
    // budget's search with status TimeLimit (a caller's limit, e.g. a hand-off to another solver).
    std::function<bool(const SearchProgress&)> progress;
    double progress_interval = 1.0;
    double progress_first = 0.0; // seconds before the first line (0: progress_interval)
    const std::atomic<double>* stop_budget = nullptr; // holding this budget stops the search
    const ExternalBound* external_bound = nullptr;     // a bound proven elsewhere (read at checks)
    // Called with each new incumbent (reduced candidates, value), for another thread to read.
    std::function<void(const std::vector<std::int32_t>&, double)> on_incumbent;
};

struct SearchOutcome {
    SolveStatus status = SolveStatus::Optimal;
    std::vector<std::int32_t> store; // reduced candidates
    double value = 0.0;
    double upper_bound = 0.0;
    double root_bound = 0.0; // bound of the root node (before any branching)
    std::int64_t nodes = 0;
    // Candidates still available once the root is done (see SolveResult::open_candidates).
    std::vector<std::int32_t> open_candidates;
    bool external_bound_used = false; // some part of the tree was pruned by the external bound
};

class BranchAndBound {
  public:
    // `lambda` (one multiplier per reduced unit, in [0, 1]) is read as a warm start and left
    // at its last value, so budgets of a sweep share it.
    // `allowed` (optional, one flag per candidate) restricts the search to a sub-package.
    BranchAndBound(const ReducedProblem& problem, double budget, std::vector<double>& lambda,
                   const SearchLimits& limits, const std::vector<char>* allowed = nullptr);

    // A feasible store (reduced indices) as incumbent if it beats the current one.
    void offer(const std::vector<std::int32_t>& store);
    // Local improvement run on each new incumbent (optional; must outlive run()).
    void set_polisher(WarmStart* polisher) { polisher_ = polisher; }
    // Starts from another search's cuts and their multipliers (same problem).
    void inherit_cuts(const BranchAndBound& parent);
    SearchOutcome run();

  private:
    // Sparse set with O(1) erase and LIFO restore of the erased elements.
    class SparseSet {
      public:
        void init(std::size_t universe) {
            dense_.resize(universe);
            pos_.resize(universe);
            for (std::size_t i = 0; i < universe; ++i) dense_[i] = pos_[i] = static_cast<std::int32_t>(i);
            size_ = universe;
        }
        bool contains(std::int32_t x) const { return static_cast<std::size_t>(pos_[x]) < size_; }
        std::size_t size() const { return size_; }
        std::int32_t at(std::size_t i) const { return dense_[i]; }
        void erase(std::int32_t x) {
            const auto p = static_cast<std::size_t>(pos_[x]);
            const auto last = dense_[size_ - 1];
            dense_[p] = last;
            pos_[last] = static_cast<std::int32_t>(p);
            dense_[size_ - 1] = x;
            pos_[x] = static_cast<std::int32_t>(size_ - 1);
            --size_;
        }
        void restore() { ++size_; }

      private:
        std::vector<std::int32_t> dense_, pos_;
        std::size_t size_ = 0;
    };

    struct Child {
        std::int32_t candidate; // -1: the group stays empty
        double bound;           // inherited from the parent's LP dual
    };
    struct Level {
        std::int32_t group;
        std::size_t children_begin, children_end, next;
        std::size_t removal_mark, coverage_mark, store_size;
        double value, cost;
    };

    bool should_stop();
    // For the loops of the root (cut rounds, descent sweeps, core searches, subgradient steps),
    // which run before any node asks should_stop(): a stop asked for from outside (the progress
    // callback, the deadline, the cancel token, a pending Ctrl-C seen by the poll). The tree's
    // next should_stop() then reports it with its status.
    bool halted();
    // The poll (a pending Ctrl-C), asked at most every poll_interval; its "stop" is kept.
    bool poll_says_stop(Clock::time_point now);
    // Sleep enough to use only `share` of the thread's time (ExternalBound::share).
    void yield_share(double share);
    // Largest bound of any part of the tree not yet closed (>= OPT while the search runs).
    double current_upper_bound() const;
    // Whether the root's bound is more than a couple of lattice steps (or a small relative
    // gap) above the incumbent.
    bool root_gap_is_wide() const;
    void report_progress(bool force);
    double threshold() const;
    // A node bound capped by the external bound (limits_.external_bound), read at the checks.
    double capped(double bound) const { return bound < external_bound_ ? bound : external_bound_; }
    // True when the external bound alone prunes everything: loops that do not test a bound
    // (descent sweeps, the core heuristic) stop early; above_threshold() counts it too.
    bool closed_from_outside() const { return external_bound_ <= threshold(); }
    // Pruning `bound` against threshold(), noting when only the external bound made it pruned.
    bool prunes(double bound);
    // Coverage with an undo log, for the node's own store and for trial stores on top of it
    // (LP rounding, the knapsack DP's choice): add_coverage adds u's gain to `value` unit by
    // unit, undo_coverage rolls back to a mark of the log.
    void add_coverage(std::int32_t u, double& value);
    void undo_coverage(std::size_t mark);
    int automatic_root_iterations() const;
    // The root's size for its effort rules: what was available when the root started (its
    // quick stages' fixing must not turn the full root into a small package's).
    std::size_t root_size() const { return root_candidates_ > 0 ? root_candidates_ : available_.size(); }
    void update_incumbent();
    void set_incumbent(const std::vector<std::int32_t>& store, double value);
    void polish_incumbent();
    void remove_candidate(std::int32_t u);
    void close_group(std::int32_t g);
    void include(std::int32_t u);
    bool dominates(std::int32_t u, std::int32_t v) const;
    void remove_dominated();
    void restore(const Level& level);
    // Filters the available candidates and returns the node bound (best over the subgradient
    // iterations, with the LP of that best multiplier vector loaded in lp_).
    double bound_node(int max_iterations);
    double evaluate_bound(double capacity);
    // Exact steps on the cap1 multipliers; stops once it has scanned *work_left entries (and
    // takes what it scanned off *work_left).
    double coordinate_descent(double capacity, double best, double* work_left);
    // Relax-and-cut at the root: separate coverage cuts at the averaged LP solution, add them
    // as Lagrangian terms and re-optimise the multipliers, for a few rounds.
    double cut_rounds(double capacity, double best);
    std::size_t add_cuts();
    void purge_cuts();
    // Intercepts of the cuts at this node: intercept + pi(S) - h(z_r(S)).
    void prepare_cuts();
    bool cut_active(std::int32_t unit) const {
        return unit_stamp_[unit] == stamp_ && unit_[unit].room > 0.0;
    }
    void refresh_unit_scale(std::int32_t unit);
    // Projected subgradient steps from the current multipliers; returns the best bound and
    // leaves the multipliers and the loaded LP at it.
    double subgradient(double capacity, int max_iterations, double theta, int patience);
    // Removes candidates whose reduced cost proves them useless below this node.
    std::size_t fix_by_reduced_cost();
    void branch(double bound);
    void try_lp_rounding();
    void core_search();
    double round_lp();
    // Rounds the averaged LP to a store, polished by local search that may scan the
    // non-zeros `polish_scans` times.
    void round_average(std::int64_t polish_scans);
    void bound_root_corners(double capacity);
    // Whether a node bound still leaves room above the incumbent (bound_floor_ counts too).
    bool above_threshold(double bound) const { return std::min({bound, bound_floor_, external_bound_}) > threshold(); }
    double integral_knapsack_bound();
    double knapsack_dp(const std::vector<double>& profit, std::size_t capacity, bool track);
    void offer_knapsack_choice(std::size_t capacity);

    const ReducedProblem& p_;
    double budget_;
    double limit_;
    std::vector<double>& lambda_;
    SearchLimits limits_;
    Clock::time_point next_poll_;
    Clock::time_point started_;
    Clock::time_point next_progress_;
    Clock::time_point slice_begun_{}; // start of the current run slice while yielding
    bool log_begun_ = false; // a progress line was reported
    bool root_done_ = false;
    std::size_t root_candidates_ = 0;
    // Subgradient steps aim at min(threshold, step_aim_): set while the full root rounds its
    // averaged LP, so a better incumbent found meanwhile leaves the steps alone (node_bound.cpp).
    double step_aim_ = std::numeric_limits<double>::infinity();
    // Set during the full root's first subgradient run: its averaged LP is rounded at the
    // steps kAverageRoundSteps names (node_bound.cpp).
    bool round_while_stepping_ = false;
    bool averages_probed_ = false; // only the first full root does (restarts start warm)
    // A bound on the whole problem from two corner multiplier vectors, evaluated once at the
    // root (node_bound.cpp); every node's bound is at most this.
    double bound_floor_ = std::numeric_limits<double>::infinity();
    bool corners_pending_ = true;
    bool quick_root_ = false;   // a quick stage of the root (search.cpp): subgradient steps only
    int quick_root_budget_ = 0; // the full root's steps: the quick stage's extras take shares of it
    std::vector<std::int32_t> open_at_root_; // available candidates once the root is done, sorted
    bool stop_requested_ = false; // by the progress callback
    bool poll_said_stop_ = false; // the poll answered "stop" in halted(): the solve is interrupted
    double external_bound_ = std::numeric_limits<double>::infinity();
    bool external_bound_used_ = false;
    SolveStatus status_ = SolveStatus::Optimal;
    bool stopped_ = false;

    SparseSet available_;
    SparseSet open_groups_;
    std::vector<std::int32_t> group_available_;
    std::vector<std::int32_t> removal_log_;
    std::vector<std::uint64_t> group_used_;
    std::vector<double> z_;
    std::vector<std::pair<std::int32_t, double>> coverage_log_;
    std::vector<std::int32_t> store_;
    double value_ = 0.0;
    double cost_ = 0.0;

    std::vector<std::int32_t> incumbent_;
    double incumbent_value_ = 0.0;
    bool incumbent_fresh_ = false; // not yet polished
    WarmStart* polisher_ = nullptr;
    Store root_rounded_; // best rounded LP store seen at the root
    double pruned_bound_ = 0.0; // largest bound of any part of the tree left behind
    double root_bound_ = std::numeric_limits<double>::infinity();
    bool at_root_ = false;

    std::vector<Level> levels_;
    std::vector<Child> children_;
    std::int64_t nodes_ = 0;

    // Node workspace, reused (no allocation per node once warm).
    std::vector<std::uint32_t> unit_stamp_;
    std::uint32_t stamp_ = 0;
    std::vector<ResidualUnit> unit_;
    std::vector<std::int32_t> touched_;
    std::vector<double> coef_;        // w_r lambda_r sigma_r
    std::vector<double> lp_coverage_; // Y_r: coverage of the LP solution
    std::vector<double> direction_;   // deflected subgradient
    bool integral_costs_ = false;
    std::vector<double> knapsack_;
    std::vector<double> gains_;
    std::vector<std::int32_t> choice_;
    std::vector<std::int32_t> picked_;
    std::vector<std::int32_t> dominators_;       // group G's candidates when G is skipped
    std::vector<std::uint64_t> candidate_stamp_;
    std::uint64_t scan_stamp_ = 0;
    std::vector<double> linear_profit_;        // p_u without the min with g (coordinate descent)
    std::vector<std::uint64_t> group_stamp_;
    std::vector<std::int32_t> touched_groups_;

    double node_alpha_ = 0.0;
    std::vector<double> saved_lambda_;
    std::vector<double> entry_room_;  // t = min(a, rho) per non-zero
    std::vector<double> entry_gain_;  // w g(t) per non-zero
    MultipleChoiceKnapsackLP lp_;

    // Relax-and-cut state. Unit r's overestimator is the convex combination
    //   (1 - sum_k nu_k) [lambda line of bounds.hpp] + sum_k nu_k [cut k],
    // over its cuts k; every combination is valid, the multipliers only tighten it.
    std::vector<CoverageCut> cuts_;
    std::vector<double> nu_, saved_nu_, nu_direction_;
    std::vector<std::vector<std::int32_t>> unit_cuts_;
    std::vector<std::vector<std::pair<std::int32_t, double>>> candidate_cuts_;
    std::vector<double> unit_scale_;    // 1 - sum of the unit's nu
    std::vector<double> cut_intercept_; // at the current node
    std::vector<double> cut_value_;     // at the LP solution of the current multipliers
    std::vector<double> xbar_;          // exponentially averaged LP solutions (root)
    bool cuts_enabled_ = false;
    double node_dual_ = 0.0; // F(S) + sum alpha + LP dual value of the loaded LP
};

} // namespace memaudit
