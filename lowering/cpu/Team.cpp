#include "lowering/cpu/Team.h"

#include <fmt/format.h>

#include <vector>

#include "lowering/cpu/Names.h"

namespace grove::lowering::internal {

namespace {

HExpr team_call(const char *fn, std::vector<HExpr> args) {
  args.insert(args.begin(), HI::Variable::make(Halide::Handle(), Team::kBarrierState));
  return HI::Call::make(Halide::Int(32), fn, args, HI::Call::Extern);
}

}  // namespace

Stmt Team::share(const std::string &v, const HExpr &min, const HExpr &extent, Stmt body,
                 int chunks_per_thread) const {
  const int id = stages_++;
  const std::string seq = fmt::format("seq{}", id), chunk = fmt::format("chunk{}", id),
                    chunks = fmt::format("chunks{}", id);
  HExpr c = var(chunk), total = var(chunks);
  // Chunk c: one iteration, or iterations [extent · c / total, extent · (c + 1) / total).
  Stmt run = chunks_per_thread > 0
                 ? HI::For::make(v, min + extent * c / total, extent * (c + 1) / total - extent * c / total,
                                 HI::ForType::Serial, Halide::DeviceAPI::None, std::move(body))
                 : HI::LetStmt::make(v, min + c, std::move(body));
  run = HI::Block::make(run, HI::Evaluate::make(team_call(names::kStageFinish, {var(seq)})));
  Stmt attempt = HI::LetStmt::make(chunk, team_call(names::kStageClaim, {var(seq), total, tid, size}),
                                   HI::IfThenElse::make(c >= 0, run));
  // Each attempt claims at most one chunk; `total` attempts cover the case of one thread alone.
  Stmt s = HI::For::make(fmt::format("attempt{}", id), 0, total, HI::ForType::Serial, Halide::DeviceAPI::None,
                         attempt);
  s = HI::Block::make(s, HI::Evaluate::make(team_call(names::kStageWait, {var(seq), total})));
  s = HI::LetStmt::make(chunks,
                        chunks_per_thread > 0 ? Halide::min(extent, chunks_per_thread * size) : extent, s);
  s = HI::LetStmt::make(seq, load(Halide::Int(32), kStageSeq, 0, false), s);
  return HI::Block::make(store(kStageSeq, load(Halide::Int(32), kStageSeq, 0, false) + 1, 0, false), s);
}

Stmt Team::with_stage_counter(Stmt body) const {
  body = HI::Block::make(store(kStageSeq, 0, 0, false), std::move(body));
  return HI::Allocate::make(kStageSeq, Halide::Int(32), Halide::MemoryType::Stack, {1}, HI::const_true(),
                            body);
}

Stmt Team::barrier() const { return HI::Evaluate::make(team_call(names::kBarrierWait, {size})); }

}  // namespace grove::lowering::internal
