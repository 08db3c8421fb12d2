#pragma once
// Annotated regions (TVM's AnnotatedRegionSet): the sets of expressions that annotate_target's
// `annotation.compiler_begin` / `annotation.compiler_end` calls delimit. A region grows backward from
// each compiler_end through the operands of what it reaches, up to compiler_begin calls (its inputs);
// two ends that reach a common expression are one region (a region with several outputs). The
// begins and ends belong to their region; variables, constants, ops and globals (leaves) belong to
// none, and a Function met inside a region belongs to it whole (a composite function called there).
// merge_compiler_regions and partition_graph both read regions this way.

#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/relay/IR.h"

namespace grove::relay {

bool is_compiler_begin(const Expr &e);
bool is_compiler_end(const Expr &e);
// The `compiler` attribute of a compiler_begin / compiler_end call.
std::string annotation_target(const Expr &call);
// Whether `e` has no operands a region could hold: a variable, constant, global, op or constructor.
bool is_region_leaf(const Expr &e);
// `e` without the compiler_begin / compiler_end calls wrapped directly around it.
Expr strip_annotations(Expr e);
// `module` with every compiler_begin / compiler_end call replaced by its argument, in every function
// (what running an annotated but unpartitioned module means; the VM compiles this).
Module remove_annotations(const Module &module);

struct AnnotatedRegion {
  std::string target;
  std::vector<Expr> begins;  // its compiler_begin calls (the inputs), children before parents
  std::vector<Expr> ends;    // its compiler_end calls (the outputs), children before parents
};

class RegionSet {
 public:
  // The regions of `root` (a global function; regions inside nested functions are found too),
  // numbered in the order post order first meets them. With include_default false,
  // compiler="default" annotations start no region (partition_graph removes them). Malformed
  // annotations are UserErrors: an end reached inside a region without a begin between, a begin or
  // a shared expression whose target differs from its region's, a function inside a region whose
  // body holds annotations.
  static RegionSet find(const Expr &root, bool include_default);

  const std::vector<AnnotatedRegion> &regions() const { return regions_; }
  // The region `e` belongs to, or -1 (leaves and expressions outside every region).
  int region_of(const Expr &e) const {
    auto it = region_of_.find(e.get());
    return it == region_of_.end() ? -1 : it->second;
  }

 private:
  std::vector<AnnotatedRegion> regions_;
  std::unordered_map<const ExprNode *, int> region_of_;
};

}  // namespace grove::relay
