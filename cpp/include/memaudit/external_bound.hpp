// An upper bound on OPT(B) proven outside the search (e.g. by an exact LP relaxation with the
// search's own cuts), handed to a running search from any thread. The search reads it at its
// checks and prunes with it: a node whose bound is above it counts as bounded by it, so once it
// is at most the incumbent (plus the lattice step), the search is done. A wrong bound here
// would make a wrong proof: whoever sets it must have proven it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace memaudit {

class ExternalBound {
  public:
    // `bound` holds for the search of `budget` (an earlier value for another budget is replaced;
    // for the same budget the smaller is kept).
    void set(double budget, double bound) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!(budget == budget_)) {
            budget_ = budget;
            bound_ = std::numeric_limits<double>::infinity();
        }
        if (bound < bound_) bound_ = bound;
    }

    // The bound for `budget`, infinity when none was set for it.
    double get(double budget) const {
        std::lock_guard<std::mutex> lock(mutex_);
        return budget == budget_ ? bound_ : std::numeric_limits<double>::infinity();
    }

    // The search of `budget` may use only this share (in (0, 1]) of its thread's time, the
    // rest asleep: the cores are wanted by solvers racing it (1 lifts it). Not a bound.
    void set_share(double budget, double share) {
        std::lock_guard<std::mutex> lock(mutex_);
        share_budget_ = budget;
        share_ = share > 0.0 && share < 1.0 ? share : 1.0;
    }

    // The share of its time the search of `budget` may use (1 when none was set for it).
    double share(double budget) const {
        std::lock_guard<std::mutex> lock(mutex_);
        return budget == share_budget_ ? share_ : 1.0;
    }

  private:
    mutable std::mutex mutex_;
    double budget_ = std::numeric_limits<double>::quiet_NaN();
    double bound_ = std::numeric_limits<double>::infinity();
    double share_budget_ = std::numeric_limits<double>::quiet_NaN();
    double share_ = 1.0;
};

// The search's best store for one budget (package candidate indices), published for another
// thread: a solver racing the search looks for better stores next to it (RINS). The search
// writes it when its incumbent improves (rarely), the other thread reads it once.
class SharedIncumbent {
  public:
    // A store worth `value` for `budget` (a store for another budget is replaced; for the same
    // budget only a better one is kept).
    void set(double budget, double value, const std::vector<std::int32_t>& store) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (budget == budget_ && !(value > value_)) return;
        budget_ = budget;
        value_ = value;
        store_ = store;
    }

    // The store for `budget` and its value; false (and nothing written) when there is none.
    bool get(double budget, double& value, std::vector<std::int32_t>& store) const {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!(budget == budget_)) return false;
        value = value_;
        store = store_;
        return true;
    }

  private:
    mutable std::mutex mutex_;
    double budget_ = std::numeric_limits<double>::quiet_NaN();
    double value_ = -std::numeric_limits<double>::infinity();
    std::vector<std::int32_t> store_;
};

} // namespace memaudit
