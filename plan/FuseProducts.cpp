#include "plan/FuseProducts.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "ilir/Affine.h"
#include "ilir/IRVisitor.h"
#include "plan/LevelPlan.h"

namespace grove::plan {

namespace {

// Fuses the temp computed by c.body[at] into its readers if it qualifies; returns whether it did.
bool fuse_one(ilir::Program &p, ilir::Case &c, size_t at, const std::map<std::string, int64_t> &sizes,
              const scheduling::Schedule &schedule) {
  const ilir::Compute def = c.body[at];
  const ilir::TensorDecl &t = p.get(def.tensor);
  if (t.kind != ilir::TensorKind::Temp || def.indices.size() != 1) return false;
  if (!match_gemm(p, def, sizes, schedule)) return false;  // a level GEMM, all its Sums terms
  const int64_t rows = ilir::eval_size(t.shape[0], sizes);

  // Every read: at the reader's index plus a constant, outside any Sum; the rows read must not
  // overlap. (A reader may already hold products: a GEMM output fused into it before.)
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<size_t> readers;
  for (size_t u = at + 1; u < c.body.size(); u++) {
    const ilir::Compute &op = c.body[u];
    bool reads = false, ok = true;
    ilir::for_each_node(op.value, [&](const ilir::Expr &x) {
      const auto *l = x.as<ilir::Load>();
      if (!l || l->tensor != def.tensor) return;
      reads = true;
      std::optional<int64_t> off =
          op.indices.size() == 1 ? ilir::offset_from(l->indices[0], op.indices[0], sizes) : std::nullopt;
      if (!off || ilir::read_inside_sum(op.value, def.tensor)) {
        ok = false;
        return;
      }
      ranges.emplace_back(*off, *off + ilir::eval_size(p.get(op.tensor).shape[0], sizes));
    });
    if (!reads) continue;
    if (!ok) return false;
    readers.push_back(u);
  }
  if (readers.empty()) return false;
  std::sort(ranges.begin(), ranges.end());
  for (size_t r = 0; r < ranges.size(); r++)
    if (ranges[r].first < 0 || ranges[r].second > rows || (r > 0 && ranges[r].first < ranges[r - 1].second))
      return false;

  // Each reader, with the products in it, must run as a level GEMM.
  std::vector<ilir::Compute> fused;
  for (size_t u : readers) {
    ilir::Compute op = c.body[u];
    op.value = ilir::inline_definition(op.value, def);
    if (!match_gemm(p, op, sizes, schedule)) return false;
    fused.push_back(std::move(op));
  }
  for (size_t r = 0; r < readers.size(); r++) c.body[readers[r]] = fused[r];
  c.body.erase(c.body.begin() + long(at));
  return true;
}

void fuse_case(ilir::Program &p, ilir::Case &c, const std::map<std::string, int64_t> &sizes,
               const scheduling::Schedule &schedule) {
  for (size_t at = 0; at < c.body.size();)
    if (!fuse_one(p, c, at, sizes, schedule)) at++;
}

}  // namespace

ilir::Program fuse_products(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                            const scheduling::Schedule &schedule) {
  if (!schedule.gemm) return program;
  for (const std::string &v : program.size_vars)
    if (!sizes.count(v)) return program;  // the micro-kernels need constant shapes
  ilir::Program p = program;
  fuse_case(p, p.leaf, sizes, schedule);
  fuse_case(p, p.internal, sizes, schedule);
  // Drop the declarations of temps no case computes any more.
  std::set<std::string> computed;
  for (const ilir::Case *c : {&p.leaf, &p.internal, &p.hoisted})
    for (const ilir::Compute &op : c->body) computed.insert(op.tensor);
  std::erase_if(p.tensors, [&](const ilir::TensorDecl &t) {
    return t.kind == ilir::TensorKind::Temp && !computed.count(t.name);
  });
  return p;
}

}  // namespace grove::plan
