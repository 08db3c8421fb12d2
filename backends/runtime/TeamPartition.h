#pragma once
// Recursive unrolling's part of the inspector (schedule `unroll`, with `region`).
//
// A team of T threads runs the levels of a batch of trees. Unrolled by K, the levels form blocks of
// K consecutive heights, and each thread runs a whole block on nodes it owns, meeting the others at a
// barrier only between blocks. That is correct when every node whose parent lies in the same block
// belongs to its parent's owner: within a block a thread then reads only states it computed itself
// (or states of earlier blocks, complete at the last barrier).
//
// partition_for_team gives each block's *block roots* (nodes whose parent is in a later block, or
// roots of their tree) to threads longest-first onto the least-loaded thread, where a block root's
// weight is the number of its descendants inside the block, and every other node to its parent's
// owner. It then renumbers the nodes within each level so that each thread's nodes of a level are
// one contiguous range (new ids stay level-contiguous, so children still have smaller ids than
// their parents), rewrites the child arrays, tokens and roots, and fills `batch.team_begin`.
// O(nodes + block roots · log). Trees only: a DAG node read by two parents could need two owners.

#include "backends/runtime/Inspector.h"

namespace grove {

void partition_for_team(LinearizedBatch &batch, int threads, int unroll);

}  // namespace grove
