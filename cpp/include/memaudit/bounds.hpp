// Upper bounds for the branch-and-bound: a Lagrangian relaxation of the saturation caps
// combined with the LP relaxation of a multiple-choice knapsack.
//
// At a search node the store S is fixed, z = z(S), the remaining budget is R = B - c(S), and
// the open groups (unused, with candidates left) may still receive at most one candidate each.
// For a unit r write g_r(y) = h_r(z_r + y) - h_r(z_r): concave, g_r(0) = 0, slope
// sigma_r = g_r'(0+). For any multiplier lambda_r in [0, 1] the line of slope beta = lambda_r
// sigma_r lies above g_r once lifted by its intercept
//
//     alpha_r(lambda) = sup_y g_r(y) - beta y          (cap1: (1 - lambda)(kappa - z_r))
//
// so g_r(y) <= alpha_r + beta y. Coverage beyond the residual cap rho_r = kappa_r - z_r is
// worthless, so each entry is clipped: t = min(a[u,r], rho_r). As g_r is also subadditive,
// each completion T of S satisfies
//
//     F(S + T) <= F(S) + sum_r w_r alpha_r + sum_{u in T} p_u,
//     p_u = sum_r w_r min(beta_r t_ur, g_r(t_ur)),
//
// and the best sum over T is at most the LP relaxation of the multiple-choice knapsack
// (profits p_u, costs c_u, capacity R, at most one candidate per open group). That LP is
// solved exactly by the greedy of Sinha and Zoltners (1979) on each group's upper convex
// hull, increments merged by ratio. lambda = 1 gives the classical bound F(S) + LP over the
// marginal gains F(u | S); smaller lambda on over-covered units removes the double counting
// an additive bound suffers from. The minimum over lambda equals the LP relaxation of the
// MILP restricted to the node (Lagrangian duality); the search approaches it by projected
// subgradient steps, and every lambda visited gives a valid bound.
//
// The LP dual (mu, pi_G) also prices each candidate: the reduced cost
// rc_u = p_u - mu c_u - pi_G <= 0 bounds any completion that contains u by UB + rc_u, and any
// completion that leaves group G empty by UB - pi_G. These drive fixing and branching.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "memaudit/objective.hpp"

namespace memaudit {

// g(y) = h(z + y) - h(z) of one unit at the node, with its Lagrangian line.
struct ResidualUnit {
    double weight = 0.0;
    double z = 0.0;
    double room = 0.0;  // rho = kappa - z: coverage that can still add value (inf without a cap)
    double slope = 0.0; // sigma = g'(0+)
    const Saturation* h = nullptr;

    void reset(double w, double coverage, double cap, const Saturation* saturation);
    // g(t) for t in [0, room].
    double gain(double t) const;
    // alpha(lambda) = sup_{y >= 0} g(y) - lambda sigma y.
    double intercept(double lambda) const;
    // A maximiser of g(y) - lambda sigma y: minus the derivative of alpha in beta.
    double peak(double lambda) const;
    // Multipliers only matter for functions that bend: for linear h lambda stays 1.
    bool has_multiplier() const { return h->kind != SaturationKind::Linear; }
    // log1p needs lambda > 0 (its intercept grows like -log lambda).
    double min_lambda() const { return h->kind == SaturationKind::Log1p ? 1e-6 : 0.0; }
};

// LP relaxation of a multiple-choice knapsack: max sum p x, sum c x <= R, sum_{u in G} x_u <= 1.
class MultipleChoiceKnapsackLP {
  public:
    void clear();
    // Items of one group by non-decreasing cost, then close_group(). Items with profit <= 0
    // may be added (they never enter the hull).
    void add(std::int32_t candidate, double cost, double profit) { items_.push_back(Item{candidate, cost, profit, 0.0}); }
    void close_group();

    // Solves for capacity R >= 0 and returns the LP value.
    double solve(double capacity);

    std::size_t num_groups() const { return groups_.size(); }
    // Critical ratio mu (0 when everything fits) and the dual value mu R + sum pi_G >= LP value.
    double price() const { return price_; }
    double dual_value() const { return dual_value_; }
    double group_price(std::size_t g) const { return groups_[g].price; }
    // Items of group g: index range into item arrays.
    std::size_t item_begin(std::size_t g) const { return groups_[g].item_begin; }
    std::size_t item_end(std::size_t g) const { return groups_[g].item_end; }
    std::int32_t item_candidate(std::size_t i) const { return items_[i].candidate; }
    double item_cost(std::size_t i) const { return items_[i].cost; }
    double item_profit(std::size_t i) const { return items_[i].profit; }
    double reduced_cost(std::size_t i, std::size_t g) const {
        return items_[i].profit - price_ * items_[i].cost - groups_[g].price;
    }
    // LP solution: x of item i (at most two items of the critical group are fractional).
    double item_x(std::size_t i) const { return items_[i].x; }
    // Index of the item the LP takes fully (or at weight 1 - f) in g, or -1 for none.
    std::int64_t integral_item(std::size_t g) const { return groups_[g].integral_item; }

  private:
    struct Item {
        std::int32_t candidate;
        double cost;
        double profit;
        double x;
    };
    struct HullPoint {
        std::int64_t item; // -1: the empty choice
        double cost;
        double profit;
    };
    struct Group {
        std::size_t item_begin, item_end;
        std::size_t hull_begin, hull_end; // hull points; increments are consecutive pairs
        double base_profit;
        double price = 0.0;
        std::size_t taken = 0;  // full increments taken
        double fraction = 0.0;  // of the next increment
        std::int64_t integral_item = -1;
    };
    struct Increment {
        double ratio;
        double cost;
        double profit;
        std::uint32_t group;
        std::uint32_t index; // appended order: breaks ratio ties
    };

    std::vector<Item> items_;
    std::vector<Group> groups_;
    std::vector<HullPoint> hull_;
    std::vector<Increment> increments_; // reordered by solve()
    std::size_t open_begin_ = 0;
    double price_ = 0.0;
    double dual_value_ = 0.0;
};

} // namespace memaudit
