#pragma once
// Column fusion: a level's node loop joined to the GEMM group before it, by columns.
//
// A TreeLSTM's internal level is two stages — the GEMMs of iou and f, then the node loop of c and h,
// which reads iou[n, i0], iou[n, i0 + H], iou[n, i0 + 2H], f[n, i0] and f[n, i0 + H] — and between
// them the team meets, because the rows a column i0 of the loop reads were computed by whichever
// threads held their panels. Cut instead into blocks of one panel's width of columns: block j's
// rows are panel j of each H-row slice of each GEMM, so a chunk that computes those panels and then
// runs the loop's steps at columns [j·P, (j+1)·P) reads only what it computed. The stages become
// one (plan::ColumnSteps), and the barrier between them, the loop's claims and its pass over the
// GEMMs' results from another core's cache go.
//
// Applies to a GemmGroup followed by a NodeLoop when
//   * the team runs the levels with persistence (a chunk per block; not unrolled, not top down);
//   * every step is a plain loop (no per-node matrix product) over one index of the same extent E,
//     and every GEMM of the group has rows R a multiple of E and a panel P dividing E, with at least
//     one block per thread (E / P ≥ team);
//   * the steps read a GEMM's result only at [n, i0 + c] with c a multiple of E (0 ≤ c ≤ R − E), and
//     what an earlier step computed only at [n, i0]: never another column or another node.
// Otherwise the stages stay as they are.

#include <map>
#include <string>
#include <vector>

#include "ilir/IR.h"
#include "plan/LevelPlan.h"

namespace grove::plan {

// Joins each qualifying (GemmGroup, NodeLoop) pair of a case's `stages` (over case `c`) into one
// GemmGroup with ColumnSteps, for a team of `team` threads.
void fuse_columns(std::vector<Stage> &stages, const ilir::Program &p, const ilir::Case &c,
                  const std::map<std::string, int64_t> &sizes, int team);

}  // namespace grove::plan
