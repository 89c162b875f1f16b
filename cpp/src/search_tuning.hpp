// Tuning constants of the branch-and-bound (search.hpp), shared by the files that implement
// it: search.cpp (tree), node_bound.cpp (Lagrangian bound), root_cuts.cpp (relax-and-cut),
// knapsack_dp.cpp (integral bound), root_heuristics.cpp (LP rounding, core search). Private to
// cpp/src: each translation unit gets its own copy of these constexpr values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memaudit {

namespace {

// Core heuristic: smallest core, and nodes per core search.
constexpr std::size_t kCoreMinSize = 48;
constexpr std::int64_t kCoreNodes = 4'000;
// Subgradient steps at the root of a core search that inherits the root's cuts.
constexpr int kCoreRootIterations = 40;
constexpr int kRootRestarts = 3;
// Quick stages of the root (search.cpp): total subgradient steps after each, and what a quick
// stage may spend beside its steps, as shares of the full root's steps times (non-zeros +
// candidates): on coordinate descent, on the integral knapsack bound (in DP cells), and its
// descent's polishing steps and reduced-cost fixing rounds.
constexpr int kQuickRootStages[] = {10};
constexpr double kQuickDescentShare = 0.25;
constexpr double kQuickKnapsackShare = 1.0;
constexpr int kQuickPolishIterations = 20;
constexpr int kQuickDescentRounds = 2;
constexpr int kQuickRootFixingRounds = 1;
// A full root left open more than this many lattice steps above its incumbent (or this
// relative gap, on packages without a known lattice) runs once more from the quick stage's
// multipliers (search.cpp).
constexpr double kWideRootGapSteps = 2.0;
constexpr double kWideRootRelativeGap = 1e-4;
constexpr int kRefixIterations = 30;
// Local search after an open root may scan the non-zeros this many times.
constexpr std::int64_t kRootPolishWork = 400;
// Coordinate-descent sweeps over the cap1 multipliers at the root.
constexpr int kDescentSweeps = 30;
constexpr int kDescentRounds = 6;
constexpr std::size_t kDescentMinCandidates = 400;
constexpr double kMinDescentGain = 1e-6; // relative gain that earns another round
constexpr int kPolishIterations = 100;
constexpr double kPolishTheta = 0.25;
// Largest items * capacity a node spends on the integral knapsack bound.
// At the root it runs when it costs about as much as the root's subgradient steps (it is
// computed once); at other nodes when it costs about as much as a few LP evaluations.
constexpr double kRootKnapsackWork = 5e7;
constexpr double kRootKnapsackPerItem = 2'000;
constexpr double kNodeKnapsackWork = 8'000;
constexpr double kNodeKnapsackPerItem = 24;
// Choice table entries (groups * capacity) kept to rebuild a DP's argmax (32 MB of int32).
constexpr double kMaxChoiceEntries = 8e6;

// Step-size rule (Held, Wolfe and Crowder 1974): Polyak steps theta (UB - LB) / |d|^2
// towards the incumbent LB, theta halved after `patience` iterations without progress.
constexpr double kRootTheta = 2.0;
constexpr int kRootPatience = 15;
constexpr int kMinRootIterations = 3;
constexpr std::size_t kRootRampCandidates = 160;
constexpr int kAutoRootIterations = 300;
constexpr double kNodeTheta = 1.0;
constexpr int kNodePatience = 2;
constexpr double kMinTheta = 1e-4;
constexpr int kProgressWindow = 30;
constexpr double kMinProgress = 1e-7;
// Deflection (Camerini, Fratta and Maffioli 1975): d = g + kDeflection d_prev damps the
// zig-zag of plain subgradients on a piecewise-linear dual.
constexpr double kDeflection = 0.5;
// Relax-and-cut at the root: weight of the newest LP solution in the average that cut
// separation reads, subgradient steps after each round, and limits on the pool.
constexpr double kAverageWeight = 0.1;
constexpr int kCutIterations = 150;
constexpr double kCutTheta = 1.0;
// Steps without progress before a cut round halves its step, kept apart from the root's own
// because the cuts of both families make the bound creep down for longer. Patience 40 against
// 15 (engine alone, 10 s): a dialogue-like 3,003-candidate package at 20% and 40% of the total
// cost closes at the root in 0.3-0.5 s instead of staying open, but MEMAUDIT-like 3,000 @ 20%
// went 0.17 -> 0.55 s, the timeline 3,000 @ 10% 0.21 -> 0.33 s and MEMAUDIT-Small x20 @ 10%
// 66 -> 91 ms; 25 and 60 each left one dialogue case open. The race covers the dialogue cases
// at 15, so 15 it is: an exact root LP, not a longer subgradient, is what closes them.
constexpr int kCutPatience = 15;
constexpr std::size_t kMaxCutsPerUnit = 4;
constexpr std::size_t kMaxCutsPerRound = 200;
constexpr double kMinCutViolation = 1e-4;
// On large roots the Lagrangian heuristic rounds the LP of every kRoundEvery-th subgradient step.
constexpr int kRoundEvery = 4;
// Averaged-LP rounding (root_heuristics.cpp) reads candidates the average holds above this.
constexpr double kAverageRoundMin = 1e-3;
// Steps of the full root's first subgradient run after which its averaged LP is rounded and
// polished (each rounding costs a few steps: it sorts the candidates and polishes a store).
constexpr int kAverageRoundSteps[] = {10, 20, 40, 80};
constexpr std::int64_t kProbePolishWork = 40;

} // namespace

} // namespace memaudit
