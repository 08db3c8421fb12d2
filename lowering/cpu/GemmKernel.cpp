#include "lowering/cpu/GemmKernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "lowering/cpu/ExprLowering.h"
#include "lowering/cpu/HostTarget.h"
#include "lowering/cpu/LoopSplitting.h"
#include "support/Error.h"

namespace grove::lowering::internal {

namespace {

// Where the epilogue runs one way: panels [first, last) and, within each, lanes [lane, lane + lanes).
struct EpiloguePiece {
  int64_t first = 0, last = 0;                     // panels
  std::vector<std::pair<int64_t, int64_t>> lanes;  // (first lane, lanes): one pair per range of rows
};

// The epilogue's pieces, in panel order: between consecutive cuts, the panels wholly inside run
// all their lanes with one branch (a range of panels); a panel that a cut crosses, or the partial
// last one, is a piece of its own whose lanes are split at the cuts and end at the GEMM's rows.
std::vector<EpiloguePiece> epilogue_pieces(const plan::Gemm &gemm) {
  const std::vector<int64_t> &cuts = gemm.epilogue_cuts;
  const int64_t pr = gemm.panel;
  GROVE_CHECK(cuts.size() >= 2, "a GEMM without its epilogue's cuts");
  std::vector<EpiloguePiece> pieces;
  for (int64_t p = 0; p < gemm.panels();) {
    const int64_t begin = p * pr, end = std::min((p + 1) * pr, gemm.rows);
    // The segment [cuts[i], cuts[i + 1]) holding row `begin`.
    size_t i = std::upper_bound(cuts.begin(), cuts.end(), begin) - cuts.begin() - 1;
    if (end - begin == pr && end <= cuts[i + 1]) {
      const int64_t last = std::max(p + 1, cuts[i + 1] / pr);  // the panels wholly inside the segment
      pieces.push_back({p, last, {{0, pr}}});
      p = last;
      continue;
    }
    EpiloguePiece piece{p, p + 1, {}};
    for (int64_t row = begin; row < end; i++) {
      const int64_t stop = std::min(end, cuts[i + 1]);
      if (stop > row) piece.lanes.push_back({row - begin, stop - row});
      row = stop;
    }
    pieces.push_back(std::move(piece));
    p++;
  }
  return pieces;
}

// The epilogue once per piece (`epilogue(lane, lanes)` over the lanes given), each copy simplified
// knowing its panels, so that no select with a branch outside its tensor survives and no row past
// the GEMM's is stored.
Stmt specialize_panels(const std::function<Stmt(int64_t, int64_t)> &epilogue, const plan::Gemm &gemm) {
  std::vector<EpiloguePiece> pieces = epilogue_pieces(gemm);
  Stmt s;
  for (size_t i = pieces.size(); i-- > 0;) {
    const EpiloguePiece &piece = pieces[i];
    std::vector<Stmt> ranges;
    for (auto [lane, lanes] : piece.lanes) ranges.push_back(epilogue(lane, lanes));
    Stmt body = HI::Block::make(ranges);
    if (piece.last == piece.first + 1) body = HI::substitute("panel", int(piece.first), body);
    HI::Scope<HI::Interval> bounds;
    bounds.push("panel", HI::Interval(int(piece.first), int(piece.last - 1)));
    Stmt simplified = HI::simplify(body, true, bounds);
    s = s.defined() ? HI::IfThenElse::make(var("panel") < int(piece.last), simplified, s) : simplified;
  }
  return s;
}

// node0 = first, ..., node<nb-1> = first + nb - 1 around `body`.
Stmt node_lets(int nb, const HExpr &first, Stmt body) {
  for (int i = nb; i-- > 0;) body = HI::LetStmt::make(fmt::format("node{}", i), first + i, body);
  return body;
}

// The bf16 operand rows of a register block: x(node_i, k) for its `nb` nodes (node0 ...
// node<nb-1>) rounded to bf16 (vcvtneps2bf16) into `xs`, one row of the packed weight's padded
// columns per node, zeros from the last column to the padding (PackedWeight::padded_cols).
struct Bf16Operand {
  std::string xs;  // the buffer
  HExpr x;         // in n and k
  std::string k;
  int cols = 0, padded = 0;
};

// The rows of an AMX operand tile: a block's staged buffer always holds this many (a block of
// fewer nodes leaves the rest as they are: row i of a product tile reads only row i of the operand
// tile, and the epilogue reads only the block's rows).
constexpr int kAmxRows = 16;

// The rows of a block's staged operand buffer and of its accumulators.
int staged_rows(GemmKernel kernel, int nb) {
  return kernel == GemmKernel::AmxBf16 ? std::max(nb, kAmxRows) : nb;
}

Stmt stage_bf16(const Bf16Operand &o, int nb) {
  std::vector<Stmt> stage;
  for (int i = 0; i < nb; i++) {
    HExpr xi = HI::substitute("n", var(fmt::format("node{}", i)), o.x);
    stage.push_back(vectorized_for(
        o.k, o.cols, store(o.xs, HI::Cast::make(Halide::BFloat(16), xi), i * o.padded + var(o.k), false),
        kBf16Rows));
    if (o.padded > o.cols)
      stage.push_back(
          HI::For::make(o.k, o.cols, o.padded - o.cols, HI::ForType::Serial, Halide::DeviceAPI::None,
                        store(o.xs, HI::make_zero(Halide::BFloat(16)), i * o.padded + var(o.k), false)));
  }
  return HI::Block::make(stage);
}

Stmt allocate_bf16(const Bf16Operand &o, int rows, Stmt body) {
  return HI::Allocate::make(o.xs, Halide::BFloat(16), Halide::MemoryType::Stack, {rows * o.padded},
                            HI::const_true(), std::move(body));
}

// One term's products for the block's `nb` nodes in bf16 from their staged operand rows `xs`,
// accumulated into `acc` (nb × pr floats, zeroed): per pair of columns and per 16 rows of the panel
// one vdpbf16ps per node, the 16 rows' weight pairs (one 64-byte load, PackedWeight's BF16 layout)
// against the node's pair broadcast, as Halide 14 matches it: a VectorReduce(Add) of adjacent
// products f32(bf16) · f32(bf16) added to the fp32 accumulator, the bf16 weights bound in a let.
Stmt bf16_products(const PackedWeight &pw, const std::string &acc, const std::string &xs, int nb, int pr) {
  GROVE_CHECK(pr % kBf16Rows == 0, "a bf16 GEMM panel of {} rows", pr);
  // The staged rows' stride is the padded columns; the products stop at the last pair of values.
  const int pairs = int(pw.padded_cols()) / 2;
  const int lanes = kBf16Rows;
  const Halide::Type bf16x = Halide::BFloat(16, 2 * lanes), f32x = Halide::Float(32, 2 * lanes);
  std::vector<Stmt> per_pair;
  for (int c = 0; c < pr / lanes; c++) {
    const std::string w = fmt::format("wpair{}", c);
    HExpr at = pw.offset<HExpr>(var("panel"), 2 * var("kpair"), c * lanes);
    HExpr weights = load(bf16x, pw.buffer, HI::Ramp::make(at, 1, 2 * lanes), true);
    std::vector<Stmt> nodes;
    for (int i = 0; i < nb; i++) {
      // Node i's pair (two bf16, one 32-bit word of xs) in every lane.
      HExpr pair = load(Halide::UInt(32), xs, i * pairs + var("kpair"), false);
      HExpr xb = Halide::reinterpret(bf16x, HI::Broadcast::make(pair, lanes));
      HExpr products = HI::VectorReduce::make(
          HI::VectorReduce::Add,
          HI::Cast::make(f32x, HI::Variable::make(bf16x, w)) * HI::Cast::make(f32x, xb), lanes);
      HExpr rows = HI::Ramp::make(i * pr + c * lanes, 1, lanes);
      nodes.push_back(store(acc, load(Halide::Float(32, lanes), acc, rows, false) + products, rows, false));
    }
    per_pair.push_back(HI::LetStmt::make(w, weights, HI::Block::make(nodes)));
  }
  return HI::For::make("kpair", 0, int(pw.value_pairs()), HI::ForType::Serial, Halide::DeviceAPI::None,
                       HI::Block::make(per_pair));
}

// The C tiles one pass over the k tiles keeps: with the operand and a weight tile, 6 of the 8 tile
// registers (LLVM 14 reloads a spilled tile without its stride: never more than 8 live).
constexpr int kAmxProductTiles = 4;

// The zero rows the product tiles start from: one 16-float row per product tile of a pass, loaded
// with stride 0 (tile_zero is a pure call that LLVM 14 merges into one value and hoists out of the
// loops, which the tiles then copy through a spill and a strideless reload; a row of its own per tile
// keeps the loads apart). Written once per stage by `with_amx_zeros`, well before the first tile
// load reads it: written just before each pass, the loads waited on the stores.
constexpr char kAmxZeros[] = "amx_zeros";

Stmt with_amx_zeros(Stmt body) {
  const int floats = kAmxProductTiles * kBf16Rows;
  Stmt zero = store(kAmxZeros, HI::Broadcast::make(0.0f, floats), HI::Ramp::make(0, 1, floats), false);
  return HI::Allocate::make(kAmxZeros, Halide::Float(32), Halide::MemoryType::Stack, {floats},
                            HI::const_true(), HI::Block::make(zero, std::move(body)));
}

// One term's products for a block's nodes with AMX, from their staged operand rows `xs` (kAmxRows
// rows of the padded columns) into `acc` (kAmxRows × pr floats; every row written, a row past the
// block's nodes holds whatever its operand row did): per 16 rows of the panel one fp32 product tile
// (16 nodes × 16 rows), per 32 columns one operand tile (16 nodes × 32 bf16) and one weight tile
// (PackedWeight's BF16 layout: 16 column pairs × the 16 rows' pairs, a row every panel words),
// tdpbf16ps accumulating, the tiles stored into `acc` once. Halide's x86 tile intrinsics in its own
// IR (tile_load, tile_matmul, tile_store: offsets and strides in bytes, shapes constant
// 16 rows × 64 bytes, so that the function's one ldtilecfg fits every tile), the product tiles as
// allocations in MemoryType::AMXTile; up to kAmxProductTiles per pass over the columns.
Stmt amx_products(const PackedWeight &pw, const std::string &acc, const std::string &xs, int pr) {
  GROVE_CHECK(pr % kBf16Rows == 0, "an AMX GEMM panel of {} rows", pr);
  GROVE_CHECK(pw.padded_cols() % kBf16ColumnAlign == 0, "AMX panels of {} columns", pw.padded_cols());
  const Halide::Type acc_t = Halide::Float(32, 256), tile_t = Halide::BFloat(16, 512);
  auto i16 = [](int v) { return HI::make_const(Halide::Int(16), v); };
  auto i64 = [](const HExpr &e) { return HI::Cast::make(Halide::Int(64), e); };
  auto call = [](Halide::Type t, const char *name, const std::vector<HExpr> &args) {
    return HI::Call::make(t, name, args, HI::Call::Intrinsic);
  };
  const HExpr rows = i16(kAmxRows), row_bytes = i16(64);
  const HExpr xs_ptr = HI::Variable::make(Halide::Handle(), xs);
  const HExpr acc_ptr = HI::Variable::make(Halide::Handle(), acc);
  const HExpr w_ptr =
      HI::Variable::make(Halide::Handle(), pw.buffer, HI::Parameter(Halide::BFloat(16), true, 1, pw.buffer));
  const int tiles = pr / kBf16Rows, padded = int(pw.padded_cols());
  const HExpr kt = var("ktile");
  std::vector<Stmt> passes;
  for (int first = 0; first < tiles; first += kAmxProductTiles) {
    const int n = std::min(kAmxProductTiles, tiles - first);
    auto tile_name = [&](int c) { return fmt::format("{}.tile{}", acc, first + c); };
    auto tile = [&](int c) {
      return HI::Load::make(acc_t, tile_name(c), HI::Ramp::make(0, 1, 256), Halide::Buffer<>(),
                            HI::Parameter(), HI::const_true(256), HI::ModulusRemainder());
    };
    auto set_tile = [&](int c, HExpr value) {
      return HI::Store::make(tile_name(c), std::move(value), HI::Ramp::make(0, 1, 256), HI::Parameter(),
                             HI::const_true(256), HI::ModulusRemainder());
    };
    // Each product tile starts from its own row of kAmxZeros (with_amx_zeros).
    const HExpr zeros_ptr = HI::Variable::make(Halide::Handle(), kAmxZeros);
    std::vector<Stmt> zero, step, out;
    for (int c = 0; c < n; c++) {
      const int row0 = (first + c) * kBf16Rows;
      // (Halide types its tile loads as bf16 or int8 tiles: the same 1 KiB, reinterpreted.)
      HExpr zero_tile =
          call(tile_t, "tile_load", {rows, row_bytes, zeros_ptr, i64(HExpr(c * 64)), i64(HExpr(0))});
      zero.push_back(
          set_tile(c, HI::Call::make(acc_t, HI::Call::reinterpret, {zero_tile}, HI::Call::PureIntrinsic)));
      // Column pair kt · 16 of rows row0 ... of the panel, in bytes; the next pair a panel on.
      HExpr at = pw.offset<HExpr>(var("panel"), kt * int(kBf16ColumnAlign), HExpr(row0)) * 2;
      HExpr weights = call(tile_t, "tile_load", {rows, row_bytes, w_ptr, i64(at), i64(HExpr(pr * 4))});
      step.push_back(set_tile(
          c, call(acc_t, "tile_matmul",
                  {rows, row_bytes, row_bytes, tile(c), HI::Variable::make(tile_t, "xtile"), weights})));
      out.push_back(HI::Evaluate::make(
          call(Halide::Int(32), "tile_store",
               {rows, row_bytes, acc_ptr, i64(HExpr(row0 * 4)), i64(HExpr(pr * 4)), tile(c)})));
    }
    HExpr operand =
        call(tile_t, "tile_load",
             {rows, row_bytes, xs_ptr, i64(kt * int(kBf16ColumnAlign * 2)), i64(HExpr(padded * 2))});
    Stmt k_loop =
        HI::For::make("ktile", 0, padded / int(kBf16ColumnAlign), HI::ForType::Serial,
                      Halide::DeviceAPI::None, HI::LetStmt::make("xtile", operand, HI::Block::make(step)));
    Stmt pass = HI::Block::make({HI::Block::make(zero), k_loop, HI::Block::make(out)});
    for (int c = n; c-- > 0;)
      pass =
          HI::Allocate::make(tile_name(c), acc_t, Halide::MemoryType::AMXTile, {1}, HI::const_true(), pass);
    passes.push_back(pass);
  }
  return HI::Block::make(passes);
}

// The distinct bf16 operands of a group's GEMMs (terms reading the same x share one), and which
// one each term reads (by its Sum).
struct Bf16Operands {
  std::vector<Bf16Operand> operands;
  std::map<const ilir::ExprNode *, std::string> of_term;
};

Bf16Operands bf16_operands(const TensorAccess &access, const std::vector<plan::Gemm> &gemms,
                           const std::vector<PackedWeight> &packed) {
  Bf16Operands out;
  for (const plan::Gemm &gemm : gemms)
    for (const plan::WeightTerm &term : gemm.terms) {
      const PackedWeight &pw = packed[term.packed];
      if (pw.element != PackedElement::BF16) continue;
      Bf16Operand o{"", ExprLowering(access, nullptr, nullptr).lower(term.x), term.sum->var, int(term.cols),
                    int(pw.padded_cols())};
      auto same = std::find_if(out.operands.begin(), out.operands.end(), [&](const Bf16Operand &e) {
        return e.k == o.k && e.cols == o.cols && e.padded == o.padded && HI::equal(e.x, o.x);
      });
      if (same == out.operands.end()) {
        o.xs = fmt::format("gxs{}", out.operands.size());
        out.operands.push_back(o);
        same = out.operands.end() - 1;
      }
      out.of_term[term.sum] = same->xs;
    }
  return out;
}

// The interleaved sums of an fp32 block's k loop: a block of few nodes has few accumulators (a
// panel's vectors per node), too few chains to cover the FMA's latency (about 8 are needed: two
// FMAs a cycle on Intel, four cycles each; one 512-bit FMA a cycle on Zen 4). Its k loop then keeps
// `phases` sums per accumulator (k mod phases), added up before the epilogue: with 16 floats a
// vector and panels of 32, one node runs four, two or three nodes two.
int fp32_phases(int nb, int panel, int lanes) {
  const int chains = std::max(1, nb * panel / std::max(lanes, 1));
  return std::clamp((8 + chains - 1) / chains, 1, 4);
}

// `loop` (a For, or a Block of them, as partitioned_for makes) with each For over v in [lo, lo + n)
// running `phases` iterations at a time — v = lo + phases·q + s with the variable `phase` = s — and
// its last n mod phases iterations with phase 0. A loop of other bounds keeps phase 0.
Stmt interleave_phases(const Stmt &loop, int phases, const std::string &phase) {
  if (phases <= 1) return HI::substitute(phase, 0, loop);
  if (const auto *b = loop.as<HI::Block>())
    return HI::Block::make(interleave_phases(b->first, phases, phase),
                           interleave_phases(b->rest, phases, phase));
  const auto *f = loop.as<HI::For>();
  const HI::IntImm *lo = f ? f->min.as<HI::IntImm>() : nullptr, *n = f ? f->extent.as<HI::IntImm>() : nullptr;
  if (!lo || !n) return HI::substitute(phase, 0, loop);
  const int64_t whole = n->value / phases * phases;
  std::vector<Stmt> out;
  if (whole > 0) {
    const std::string q = f->name + "_q";
    std::vector<Stmt> iterations;
    for (int s = 0; s < phases; s++)
      iterations.push_back(
          HI::substitute(phase, s, HI::substitute(f->name, int(lo->value) + var(q) * phases + s, f->body)));
    out.push_back(HI::For::make(q, 0, int(whole / phases), HI::ForType::Serial, Halide::DeviceAPI::None,
                                HI::Block::make(iterations)));
  }
  if (whole < n->value)
    out.push_back(HI::For::make(f->name, int(lo->value + whole), int(n->value - whole), f->for_type,
                                f->device_api, HI::substitute(phase, 0, f->body)));
  return HI::Block::make(out);
}

// One register block: the `nb` consecutive nodes from `first` on, every term accumulated over its
// k loop with the packed weight vector shared by the block's nodes, then the epilogue (the rest of
// the expression: biases, activations) applied to the accumulators and stored.
//
// bf16 terms read their operand rows from the buffers `staged` names (staged by the caller for these
// nodes); without `staged` the block stages its own. Without `first` the caller binds node0 ....
Stmt block_kernel(const TensorAccess &access, const ilir::Compute &op, const plan::Gemm &gemm,
                  const std::vector<PackedWeight> &packed, GemmKernel kernel, int nb, int lanes,
                  const HExpr &first, const std::map<const ilir::ExprNode *, std::string> *staged = nullptr) {
  const bool amx = kernel == GemmKernel::AmxBf16;
  const ilir::TensorDecl &t = access.program().get(op.tensor);
  const int pr = int(gemm.panel);
  const std::string &j = op.indices[0];
  HExpr p = var("panel"), lane = var("lane");
  auto node = [&](int i) { return var(fmt::format("node{}", i)); };

  std::vector<Stmt> body;
  std::vector<std::string> accs;
  std::vector<int> acc_rows;  // each accumulator's rows of pr floats
  std::map<const ilir::ExprNode *, HExpr> results;
  for (size_t m = 0; m < gemm.terms.size(); m++) {
    const plan::WeightTerm &term = gemm.terms[m];
    GROVE_CHECK(term.packed >= 0 && term.packed < int(packed.size()), "a GEMM term of {} without its panels",
                op.tensor);
    accs.push_back(fmt::format("gacc{}_{}", m, nb));
    const PackedWeight &pw = packed[term.packed];
    const bool bf16 = pw.element == PackedElement::BF16;
    const int phases = bf16 ? 1 : fp32_phases(nb, pr, lanes);
    acc_rows.push_back(bf16 ? staged_rows(kernel, nb) : nb * phases);
    if (!(bf16 && amx))  // AMX stores whole tiles
      for (int i = 0; i < nb * phases; i++)
        body.push_back(HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None,
                                     store(accs[m], 0.0f, i * pr + lane, false)));
    auto lowered_x = [&] { return ExprLowering(access, nullptr, nullptr).lower(term.x); };
    auto products = [&](const std::string &xs) {
      return amx ? amx_products(pw, accs[m], xs, pr) : bf16_products(pw, accs[m], xs, nb, pr);
    };
    if (bf16 && staged) {
      body.push_back(products(staged->at(term.sum)));
    } else if (bf16) {
      Bf16Operand o{fmt::format("gxs{}_{}", m, nb), lowered_x(), term.sum->var, int(term.cols),
                    int(pw.padded_cols())};
      body.push_back(
          allocate_bf16(o, staged_rows(kernel, nb), HI::Block::make(stage_bf16(o, nb), products(o.xs))));
    } else {
      const HExpr x = lowered_x();
      // Node i's sum of phase s is row s·nb + i of the accumulator; phase 0's rows are the result.
      const std::string phase = "gphase";
      std::vector<Stmt> fmas;
      for (int i = 0; i < nb; i++) {
        HExpr at = (var(phase) * nb + i) * pr + lane;
        HExpr acc = load(Halide::Float(32), accs[m], at, false);
        fmas.push_back(store(accs[m], acc + var("w") * HI::substitute("n", node(i), x), at, false));
      }
      const std::string &k = term.sum->var;
      // The packed layout is PackedWeight's: row `lane` of panel p, column k.
      HExpr w = load(Halide::Float(32), pw.buffer, pw.offset<HExpr>(p, var(k), lane), true);
      Stmt lanes = HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None,
                                 HI::LetStmt::make("w", w, HI::Block::make(fmas)));
      body.push_back(interleave_phases(partitioned_for(k, 0, int(term.cols), lanes, HI::ForType::Serial),
                                       phases, phase));
      if (phases > 1) {
        // Phase 0 += the others, pairwise: ((s0 + s1) + (s2 + s3)).
        std::vector<Stmt> sums;
        for (int i = 0; i < nb; i++) {
          std::vector<HExpr> part;
          for (int s = 0; s < phases; s++)
            part.push_back(load(Halide::Float(32), accs[m], (s * nb + i) * pr + lane, false));
          while (part.size() > 1) {
            std::vector<HExpr> next;
            for (size_t a = 0; a + 1 < part.size(); a += 2) next.push_back(part[a] + part[a + 1]);
            if (part.size() % 2) next.push_back(part.back());
            part = std::move(next);
          }
          sums.push_back(store(accs[m], part[0], i * pr + lane, false));
        }
        body.push_back(HI::For::make("lane", 0, pr, HI::ForType::Vectorized, Halide::DeviceAPI::None,
                                     HI::Block::make(sums)));
      }
    }
    results[term.sum] = load(Halide::Float(32), accs[m], var("row") * pr + lane, false);
  }
  std::vector<Stmt> stores;
  for (int i = 0; i < nb; i++) {
    std::map<const ilir::ExprNode *, HExpr> replace;
    for (auto &[sum, value] : results) replace[sum] = HI::substitute("row", i, value);
    HExpr value =
        HI::substitute("n", node(i), ExprLowering(access, nullptr, nullptr, replace).lower(op.value));
    stores.push_back(HI::LetStmt::make(j, p * pr + lane, access.store(t, node(i), {var(j)}, value)));
  }
  auto epilogue = [&](int64_t first_lane, int64_t lanes) {
    std::vector<Stmt> per_node;
    for (const Stmt &s : stores)
      per_node.push_back(HI::For::make("lane", int(first_lane), int(lanes),
                                       lanes > 1 ? HI::ForType::Vectorized : HI::ForType::Serial,
                                       Halide::DeviceAPI::None, s));
    return HI::Block::make(per_node);
  };
  body.push_back(specialize_panels(epilogue, gemm));
  Stmt s = HI::Block::make(body);
  for (size_t m = 0; m < accs.size(); m++)
    s = HI::Allocate::make(accs[m], Halide::Float(32), Halide::MemoryType::Stack, {acc_rows[m] * pr},
                           HI::const_true(), s);
  return first.defined() ? node_lets(nb, first, s) : s;
}

// The operands of a tile of nodes of a large level: 64K floats (256 KB, an eighth of a 2 MB L2).
constexpr int64_t kTileOperandFloats = int64_t(1) << 16;

// lower_gemms without the AMX zero rows.
Stmt gemm_loops(const TensorAccess &access, const ilir::Case &c, const std::vector<plan::Gemm> &gemms,
                const std::vector<PackedWeight> &packed, const GemmLoops &loops) {
  const int nb = loops.node_block;
  const HExpr &base = loops.first, &size = loops.count;
  HExpr full = size / nb * nb;

  // A level's full blocks of nb nodes, then its remaining r < nb nodes as one block of exactly r
  // nodes (a kernel per r, `of_size(r)`), so no block computes a node twice or branches per node.
  auto tail = [&](const std::function<Stmt(int)> &of_size) {
    Stmt s = HI::Evaluate::make(0);
    for (int r = nb - 1; r >= 1; r--)
      s = HI::IfThenElse::make(size - full == r, of_size(r), r == nb - 1 ? Stmt() : s);
    return s;
  };
  std::vector<int> panels;
  for (const plan::Gemm &gemm : gemms) panels.push_back(int(gemm.panels()));
  // Per GEMM: its kernel for a full block, and for the tail.
  auto full_blocks = [&] {
    std::vector<Stmt> blocks;
    for (const plan::Gemm &gemm : gemms)
      blocks.push_back(block_kernel(access, c.body[gemm.compute], gemm, packed, loops.kernel, nb, loops.lanes,
                                    base + var("block") * nb));
    return blocks;
  };
  auto tail_blocks = [&] {
    std::vector<Stmt> blocks;
    for (const plan::Gemm &gemm : gemms)
      blocks.push_back(tail([&](int r) {
        return block_kernel(access, c.body[gemm.compute], gemm, packed, loops.kernel, r, loops.lanes,
                            base + full);
      }));
    return blocks;
  };

  // The GEMMs of the group share one loop over their panels, one after another: panel p belongs
  // to the first GEMM whose panels reach past p.
  auto by_panel = [&](const std::vector<Stmt> &bodies) {
    Stmt s;
    int end = 0;
    std::vector<int> begins;
    for (int n : panels) begins.push_back(end), end += n;
    for (size_t g = bodies.size(); g-- > 0;) {
      Stmt b = HI::LetStmt::make("panel", var("group_panel") - begins[g], bodies[g]);
      s = s.defined() ? HI::IfThenElse::make(var("group_panel") < begins[g] + panels[g], b, s) : b;
    }
    return std::pair{s, end};
  };
  // Column steps (plan::ColumnSteps): `column_panels(j, body)` runs body for each panel of column
  // block j — of each GEMM in turn, its slices' panels — with group_panel set to it, and
  // `with_column_steps(j, b0, b1, last_tile, s)` adds, after s, the steps at block j's columns over
  // the nodes of the tile of blocks [b0, b1) (and the level's last nodes if it is the last tile).
  // They run only with persistence, the chunks' panels fixed (LowerToLoops checks the plan's team).
  const plan::ColumnSteps *columns = loops.columns;
  GROVE_CHECK(!columns || (loops.persist && loops.column_steps), "column steps without persistence");
  auto column_panels = [&](const HExpr &j, Stmt body) {
    std::vector<int> first;  // each panel's group_panel in block 0
    int begin = 0;
    for (size_t g = 0; g < gemms.size(); g++) {
      for (int64_t o : columns->panel_offsets[g]) first.push_back(begin + int(o));
      begin += panels[g];
    }
    const HExpr q = var("column_panel");
    HExpr at = first.back();
    for (size_t i = first.size() - 1; i-- > 0;) at = HI::Select::make(q == int(i), first[i], at);
    return HI::For::make("column_panel", 0, int(first.size()), HI::ForType::Serial, Halide::DeviceAPI::None,
                         HI::LetStmt::make("group_panel", at + j, std::move(body)));
  };
  auto with_column_steps = [&](const HExpr &j, const HExpr &b0, const HExpr &b1, const HExpr &last_tile,
                               Stmt s) {
    HExpr count = HI::Select::make(last_tile, size - b0 * nb, (b1 - b0) * nb);
    return HI::Block::make(std::move(s),
                           loops.column_steps(j * int(columns->width), base + b0 * nb, std::move(count)));
  };
  // The loop over `v` in [0, extent): a dispatch of its own, or a stage of the team (one chunk per
  // iteration).
  auto split = [&](const std::string &v, HExpr extent, Stmt body) {
    return loops.team ? loops.team->share(v, 0, std::move(extent), std::move(body))
                      : dispatch_for(v, 0, std::move(extent), loops.type, loops.threads, std::move(body));
  };
  // With persistence a large level goes in tiles of node blocks, each tile's chunks of panels
  // before the next tile's, so that a tile's operands (K floats per node, at most
  // kTileOperandFloats) stay in the core's cache while its panels sweep it; most levels are one
  // tile. `tiled(v, chunks, body)` runs body(tile's first block, its end, the panel chunk, whether
  // it is the last tile) for every (tile, chunk) pair, as chunk v of the loop.
  const int tile_blocks = [&] {
    int64_t k = 0;
    for (const plan::Gemm &gemm : gemms) {
      int64_t cols = 0;
      for (const plan::WeightTerm &t : gemm.terms) cols += t.cols;
      k = std::max(k, cols);
    }
    return int(std::max<int64_t>(1, kTileOperandFloats / std::max<int64_t>(1, k) / nb));
  }();
  auto tiled = [&](const std::string &v, int chunks,
                   const std::function<Stmt(HExpr, HExpr, HExpr, HExpr)> &body) {
    HExpr blocks = size / nb, tiles = var("level_tiles"), tile = var(v) / chunks, b0 = tile * tile_blocks;
    Stmt s = body(b0, Halide::min(blocks, b0 + tile_blocks), var(v) % chunks, tile == tiles - 1);
    return HI::LetStmt::make("level_tiles", Halide::max(1, (blocks + (tile_blocks - 1)) / tile_blocks),
                             split(v, tiles * chunks, s));
  };
  // bf16: a block's operands are rounded once for all the panels that a thread computes for it.
  // With persistence the panels go in chunks of consecutive panels (two per thread), and each chunk
  // sweeps the level's blocks, staging each block's operands before its panels; without, each
  // thread's blocks stage theirs before every panel (the level's last, partial block stages per
  // panel, as the threads split its panels).
  const Bf16Operands bf16 = bf16_operands(access, gemms, packed);
  if (!bf16.operands.empty()) {
    // A block's operands staged, then `panel_loop` over the kernels (by group_panel).
    using PanelLoop = std::function<Stmt(Stmt)>;
    auto staged_block = [&](int r, const HExpr &first, const std::vector<Stmt> &kernels,
                            const PanelLoop &panel_loop) {
      std::vector<Stmt> stage;
      for (const Bf16Operand &o : bf16.operands) stage.push_back(stage_bf16(o, r));
      return node_lets(r, first,
                       HI::Block::make(HI::Block::make(stage), panel_loop(by_panel(kernels).first)));
    };
    auto panel_range = [](HExpr lo, HExpr hi) -> PanelLoop {
      return [lo, hi](Stmt body) {
        return HI::For::make("group_panel", lo, hi - lo, HI::ForType::Serial, Halide::DeviceAPI::None,
                             std::move(body));
      };
    };
    auto allocated = [&](Stmt body) {
      for (const Bf16Operand &o : bf16.operands) body = allocate_bf16(o, staged_rows(loops.kernel, nb), body);
      return body;
    };
    std::vector<Stmt> full_kernels;
    std::vector<std::vector<Stmt>> tail_kernels(nb);
    for (const plan::Gemm &gemm : gemms) {
      const ilir::Compute &op = c.body[gemm.compute];
      full_kernels.push_back(
          block_kernel(access, op, gemm, packed, loops.kernel, nb, loops.lanes, HExpr(), &bf16.of_term));
      for (int r = 1; r < nb; r++)
        tail_kernels[r].push_back(
            block_kernel(access, op, gemm, packed, loops.kernel, r, loops.lanes, HExpr(), &bf16.of_term));
    }
    const int total = by_panel(full_kernels).second;
    if (loops.persist) {
      const int threads = loops.team ? loops.team->size : loops.threads;
      // Two chunks of consecutive panels per thread, or with column steps one per column block.
      const int chunks = columns ? int(columns->blocks) : std::max(1, std::min(total, 2 * threads));
      return tiled(
          columns ? "tile_column" : "tile_chunk", chunks,
          [&](HExpr b0, HExpr b1, HExpr chunk, HExpr last_tile) {
            PanelLoop panel_loop =
                columns ? PanelLoop([&](Stmt body) { return column_panels(chunk, std::move(body)); })
                        : panel_range(total * chunk / chunks, total * (chunk + 1) / chunks);
            Stmt blocks = HI::For::make("block", b0, b1 - b0, HI::ForType::Serial, Halide::DeviceAPI::None,
                                        staged_block(nb, base + var("block") * nb, full_kernels, panel_loop));
            Stmt last =
                tail([&](int r) { return staged_block(r, base + full, tail_kernels[r], panel_loop); });
            Stmt s = allocated(HI::Block::make(blocks, HI::IfThenElse::make(last_tile, last)));
            return columns ? with_column_steps(chunk, b0, b1, last_tile, s) : s;
          });
    }
    Stmt blocks =
        split("block", size / nb,
              allocated(staged_block(nb, base + var("block") * nb, full_kernels, panel_range(0, total))));
    return HI::Block::make(blocks, split("group_panel", total, by_panel(tail_blocks()).first));
  }

  // With persistence each thread sweeps every node block of a fixed set of panels (in a region,
  // the same panels at every level, so that their weights stay in that core's cache).
  const std::vector<Stmt> fulls = full_blocks(), tails = tail_blocks();
  if (loops.persist) {
    int total = 0;
    for (int n : panels) total += n;
    // A chunk per (tile, panel), or with column steps per (tile, column block).
    return tiled(columns ? "tile_column" : "tile_panel", columns ? int(columns->blocks) : total,
                 [&](HExpr b0, HExpr b1, HExpr chunk, HExpr last_tile) {
                   std::vector<Stmt> bodies;
                   for (size_t g = 0; g < gemms.size(); g++)
                     bodies.push_back(HI::Block::make(HI::For::make("block", b0, b1 - b0, HI::ForType::Serial,
                                                                    Halide::DeviceAPI::None, fulls[g]),
                                                      HI::IfThenElse::make(last_tile, tails[g])));
                   Stmt s = by_panel(bodies).first;
                   if (!columns) return HI::LetStmt::make("group_panel", chunk, s);
                   return with_column_steps(chunk, b0, b1, last_tile, column_panels(chunk, s));
                 });
  }
  auto [full_s, total] = by_panel(fulls);
  Stmt s = HI::For::make("group_panel", 0, total, HI::ForType::Serial, Halide::DeviceAPI::None, full_s);
  s = split("block", size / nb, s);
  auto [tail_s, unused] = by_panel(tails);
  return HI::Block::make(s, split("group_panel", total, tail_s));
}

}  // namespace

Stmt lower_gemms(const TensorAccess &access, const ilir::Case &c, const std::vector<plan::Gemm> &gemms,
                 const std::vector<PackedWeight> &packed, const GemmLoops &loops) {
  Stmt s = gemm_loops(access, c, gemms, packed, loops);
  return loops.kernel == GemmKernel::AmxBf16 ? with_amx_zeros(std::move(s)) : s;
}

}  // namespace grove::lowering::internal
