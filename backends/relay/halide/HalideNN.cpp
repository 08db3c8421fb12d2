// The anchor ops of fused groups and their schedules: nn.dense and nn.batch_matmul as
// register-blocked GEMMs, nn.conv2d as a tiled direct convolution, and the 2-D pools.

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>

#include "backends/relay/halide/HalideLowerer.h"
#include "frontend/relay/ops/Op.h"
#include "frontend/relay/ops/OpAttrs.h"

namespace grove::relay::halide_internal {
namespace {

// The anchors compute float to the same dtype, or float16 to float32 (mixed precision: float16
// tensors are float32 values inside the pipeline, so the product is the float32 one, not rounded).
bool float_to(DType in, DType out) {
  return is_float(in) && (in == out || (in == DType::Float16 && out == DType::Float32));
}

}  // namespace

// C[b, i, j] = sum_k a(b, i, k) * B[b, k, j], with B a root tensor (batch, k, n) or (k, n): a
// register-blocked GEMM. The output is tiled into `rows` x `cols` blocks (cols a multiple of the
// vector width); each block accumulates in a small stage computed inside it, its loops k, row,
// column with the column vectorized and the rest of the block unrolled.
Tensor Lowerer::gemm(const std::string &name, DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                     const std::function<HExpr(HExpr, HExpr, HExpr)> &a, const Tensor &b_kj) {
  const Halide::Type t = htype(dtype, span_);
  const bool batched = b_kj.shape.size() == 3;
  HVar j("j"), i("i"), b("b"), jo("jo"), io("io"), ji("ji"), ii("ii"), jv("jv"), jj("jj"), t_("t");
  RDom rk(0, static_cast<int>(k), fresh("rk"));
  Func acc(fresh(name + "_acc"));
  acc(j, i, b) = zero(t);
  HExpr bv = batched ? b_kj.f(std::vector<HExpr>{j, rk.x, b_kj.shape[0] == 1 ? HExpr(0) : HExpr(b)})
                     : b_kj.f(std::vector<HExpr>{j, rk.x});
  acc(j, i, b) += a(b, i, rk.x) * bv;
  const Shape shape = batch > 0 ? Shape{batch, m, n} : Shape{m, n};
  Tensor c{Func(fresh(name)), dtype, shape, true};
  if (batch > 0)
    c.f(j, i, b) = acc(j, i, b);
  else
    c.f(j, i) = acc(j, i, 0);
  const int w = lanes(dtype);
  const int vec = n >= w ? w : 1;
  // A block keeps rows x (cols / w) accumulator vectors in registers over the whole k loop:
  // with AVX-512's 32 registers, 24 leave room for a step's column vectors and broadcast (each
  // step loads cols / w + rows values for rows * cols / w FMAs); with 16 registers, 8. Rows are
  // at most 6 (4) so that a small m (TreeLSTM's 22) wastes little to ShiftInwards' overlap; the
  // rest goes to columns, up to 8 vectors, so that m = 1 still has independent FMA chains.
  const bool wide = vector_bytes_ >= 64;
  const int rows = static_cast<int>(std::min<int64_t>(m, wide ? 6 : 4));
  const int nv = static_cast<int>(std::min<int64_t>({n / w, 8, std::max((wide ? 24 : 8) / rows, 1)}));
  const int cols = nv > 0 ? nv * w : static_cast<int>(n);
  c.f.compute_root()
      .tile(j, i, jo, io, ji, ii, cols, rows, Halide::TailStrategy::ShiftInwards)
      .reorder(ji, ii, io, jo);
  if (vec > 1) c.f.vectorize(ji, vec);
  // Column panels (times batches) are the outer, parallel loop: a panel of B stays in cache
  // while every row block passes over it, and m = 1 still splits across threads. Panels are
  // grouped into about 8 tasks, as in gemm_dot: one panel is too little work for a task.
  const int64_t tiles = (n + cols - 1) / cols * std::max<int64_t>(batch, 1);
  const int task = static_cast<int>((tiles + 7) / 8);
  const bool parallel = worth_parallel(std::max<int64_t>(batch, 1) * m * n * k);
  if (batch > 0) c.f.reorder(ji, ii, io, jo, b).fuse(jo, b, t_);
  if (parallel) c.f.parallel(batch > 0 ? t_ : jo, task, Halide::TailStrategy::GuardWithIf);
  acc.compute_at(c.f, io);
  Halide::Stage update = acc.update();
  if (vec > 1) {
    acc.vectorize(j, vec);
    update.split(j, jj, jv, vec).reorder(jv, jj, i, rk).vectorize(jv).unroll(jj).unroll(i);
  } else {
    update.reorder(j, i, rk).unroll(i);
  }
  acc.unroll(i);
  scheduled_.insert(c.f.name());
  return c;
}

// C[b, i, j] = sum_k a(b, i, k) * bt(b, j, k) where both operands are contiguous in k (dense's
// weight, batch_matmul's transpose_b): dot products vectorized over k. Each tile of `cols` x `rows`
// outputs keeps one vector of partial sums per output (loads of both operands are contiguous, no
// transposed copy), then sums its lanes and the k % lanes tail. Column tiles are the outer,
// parallel loop, so a tile's weight rows stay in cache while every row tile passes over them.
// (Packing the weight into panels for an outer-product kernel would cost a transposed copy of
// all n * k weights per call, as much as the whole product at m = 1.)
Tensor Lowerer::gemm_dot(const std::string &name, DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                         const std::function<HExpr(HExpr, HExpr, HExpr)> &a,
                         const std::function<HExpr(HExpr, HExpr, HExpr)> &bt) {
  const Halide::Type t = htype(dtype, span_);
  // A single row (dense at batch 1, an LSTM step) is a GEMV: it reads each weight once, so its
  // speed is the speed of streaming W. Each output then keeps `unroll` partial vectors (k unrolled
  // by that many vectors, independent FMA chains) and a tile takes only 6 (AVX2: 4) weight rows,
  // each read in runs of contiguous vectors the prefetcher follows; 24 rows one vector apiece
  // halved the speed once W outgrows L2 (1 x 1024 x 1024: 0.10 ms before, 0.047 ms after). With
  // more rows each weight vector is reused across the rows instead, and wide tiles stay faster.
  const int base_w = lanes(dtype);
  const bool gemv = m == 1;
  const int unroll = gemv && k / base_w >= 2 && (k / base_w) % 2 == 0 ? 2 : 1;
  const int w = base_w * unroll;
  const int64_t k_vec = k / w, k_tail = k % w;
  HVar kl("kl"), j("j"), i("i"), b("b"), jo("jo"), io("io"), ji("ji"), ii("ii"), t_("t");
  const HExpr bb = batch > 0 ? HExpr(b) : HExpr(0);
  Func part(fresh(name + "_part")), lanes_sum;
  Halide::RVar rlx;
  HExpr total;
  RDom r;
  if (k_vec > 0) {
    r = RDom(0, static_cast<int>(k_vec), fresh("rk"));
    part(kl, j, i, b) = zero(t);
    HExpr kk = r.x * w + kl;
    part(kl, j, i, b) += a(b, i, kk) * bt(b, j, kk);
    // The lanes are summed in a stage of its own so that the sum is a vector reduction (a
    // shuffle tree over a tile's partial vectors), not a scalar loop of loads per output.
    RDom rl(0, w, fresh("rl"));
    lanes_sum = Func(fresh(name + "_sum"));
    lanes_sum(j, i, b) = zero(t);
    lanes_sum(j, i, b) += part(rl.x, j, i, b);
    rlx = rl.x;
    total = lanes_sum(j, i, bb);
  }
  if (k_tail > 0) {
    RDom rt(static_cast<int>(k_vec * w), static_cast<int>(k_tail), fresh("rt"));
    HExpr tail = Halide::sum(a(bb, i, rt.x) * bt(bb, j, rt.x));
    total = total.defined() ? total + tail : tail;
  }
  const Shape shape = batch > 0 ? Shape{batch, m, n} : Shape{m, n};
  Tensor c{Func(fresh(name)), dtype, shape, true};
  if (batch > 0)
    c.f(j, i, b) = total;
  else
    c.f(j, i) = total;
  // A tile holds rows x cols partial vectors in registers across the whole k loop: with AVX-512's
  // 32 registers, 24 accumulators leave room for the rows + 1 operand vectors of a step (each
  // step then does rows + cols loads for rows * cols FMAs); with 16 registers, 8. Rows are at
  // most 4 (2) so that a small m (TreeLSTM's 22) wastes little to ShiftInwards' overlap; the
  // rest of the budget goes to columns. A GEMV (m = 1) takes narrow tiles instead, see above.
  const bool wide = vector_bytes_ >= 64;
  const int rows = static_cast<int>(std::min<int64_t>(m, wide ? 4 : 2));
  const int cols = static_cast<int>(std::min<int64_t>(n, gemv ? (wide ? 6 : 4) : (wide ? 24 : 8) / rows));
  c.f.compute_root()
      .tile(j, i, jo, io, ji, ii, cols, rows, Halide::TailStrategy::ShiftInwards)
      .reorder(ji, ii, io, jo);
  // A column tile (of one batch) is under a microsecond of work, not much more than a thread-pool
  // task costs to hand out; grouping them into about 8 tasks keeps the threads balanced (also when
  // the machine is shared) without paying that per tile (batch_matmul 4 x 16 x 256 x 1024 with a
  // task per tile: 91 GFLOP/s, grouped: 148).
  const int64_t tiles = (n + cols - 1) / cols * std::max<int64_t>(batch, 1);
  if (batch > 0) c.f.reorder(ji, ii, io, jo, b).fuse(jo, b, t_);
  if (worth_parallel(std::max<int64_t>(batch, 1) * m * n * k))
    c.f.parallel(batch > 0 ? t_ : jo, static_cast<int>((tiles + 7) / 8), Halide::TailStrategy::GuardWithIf);
  // The tile's outputs leave the lane sums as one vector per row.
  if (cols > 1) c.f.vectorize(ji);
  if (k_vec > 0) {
    part.compute_at(c.f, io).vectorize(kl).unroll(j).unroll(i);
    part.update().reorder(kl, j, i, r.x).vectorize(kl).unroll(j).unroll(i);
    // One vector reduction per row of the tile, from cols * lanes partials to cols sums: the
    // shuffle tree's levels are shared by the row's columns. atomic() allows vectorizing the
    // reduction over the lanes (float addition reassociated: the lanes are summed pairwise).
    lanes_sum.compute_at(c.f, io).unroll(i);
    Halide::Stage sum_update = lanes_sum.update();
    sum_update.reorder(rlx, j, i).atomic().vectorize(rlx).unroll(i);
    if (cols > 1) {
      lanes_sum.vectorize(j);
      sum_update.vectorize(j);
    } else {
      sum_update.unroll(j);
    }
  }
  scheduled_.insert(c.f.name());
  return c;
}

Tensor Lowerer::dense(const Call &call, const Tensor &x, const Tensor &w, const TensorType &out) {
  if (!float_to(x.dtype, out.dtype))
    unsupported(fmt::format("nn.dense of {} to {}", to_string(x.dtype), to_string(out.dtype)), call.span);
  const int64_t k = w.shape[1], n = w.shape[0], m = numel(x.shape) / k;
  const Tensor x2 = materialize(reshape(x, {m, k}));
  const Tensor wr = materialize(w);
  Tensor c = gemm_dot(
      "nn.dense", out.dtype, 0, m, n, k,
      [&](HExpr, HExpr i, HExpr kk) {
        return at(x2, {i, kk});
      },
      [&](HExpr, HExpr j, HExpr kk) {
        return at(wr, {j, kk});
      });
  return reshape(c, out.shape);
}

Tensor Lowerer::batch_matmul(const Call &call, const Tensor &x, const Tensor &y, const TensorType &out) {
  if (!float_to(x.dtype, out.dtype))
    unsupported(fmt::format("nn.batch_matmul of {} to {}", to_string(x.dtype), to_string(out.dtype)),
                call.span);
  const BatchMatmulAttrs attrs = batch_matmul_attrs(call.attrs);
  const bool ta = attrs.transpose_a, tb = attrs.transpose_b;
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2];
  const int64_t k = ta ? x.shape[1] : x.shape[2];
  const Tensor xr = materialize(x);
  const bool x_batched = x.shape[0] != 1, y_batched = y.shape[0] != 1;
  if (tb && !ta) {
    const Tensor yr = materialize(y);
    return gemm_dot(
        "nn.batch_matmul", out.dtype, batch, m, n, k,
        [&](HExpr b, HExpr i, HExpr kk) {
          return at(xr, {x_batched ? b : HExpr(0), i, kk});
        },
        [&](HExpr b, HExpr j, HExpr kk) {
          return at(yr, {y_batched ? b : HExpr(0), j, kk});
        });
  }
  Tensor yk = y;  // as (batch, k, n)
  if (tb) {
    yk = define("y_t", y.dtype, {y.shape[0], k, n}, [&](const std::vector<HExpr> &i) {
      return at(y, {i[0], i[2], i[1]});
    });
    yk.f.compute_root();
    schedule_stage(yk.f, yk.shape, yk.dtype, 0);
    yk.root = true;
  } else {
    yk = materialize(y);
  }
  auto a = [&](HExpr b, HExpr i, HExpr kk) {
    HExpr bb = x_batched ? b : HExpr(0);
    return ta ? at(xr, {bb, kk, i}) : at(xr, {bb, i, kk});
  };
  return gemm("nn.batch_matmul", out.dtype, batch, m, n, k, a, yk);
}

// Direct convolution, NCHW/OIHW, any stride, dilation, padding and groups. The output is tiled
// over (columns, output channels); each tile accumulates in a stage computed inside it, with the
// window and input channels outermost, output channels unrolled and columns vectorized.
Tensor Lowerer::conv2d(const Call &call, const Tensor &x, const Tensor &w, const TensorType &out) {
  if (!float_to(x.dtype, out.dtype))
    unsupported(fmt::format("nn.conv2d of {} to {}", to_string(x.dtype), to_string(out.dtype)), call.span);
  const Halide::Type t = htype(x.dtype, call.span);
  const Conv2DAttrs attrs = conv2d_attrs(call.attrs);
  const std::array<int64_t, 2> strides = attrs.strides, dilation = attrs.dilation;
  const Pad pad = attrs.padding;
  const int64_t groups = attrs.groups;
  const int64_t c_in = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const int64_t o = w.shape[0], ic = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  const int64_t opg = o / groups, oh = out.shape[2], ow = out.shape[3];
  (void)c_in;
  // The input with its zero padding, materialized when there is any.
  Tensor p = materialize(x);
  const int64_t top = pad.top, left = pad.left;
  if (pad.any()) {
    p = define("pad", x.dtype, {x.shape[0], x.shape[1], h + pad.top + pad.bottom, wd + pad.left + pad.right},
               [&](const std::vector<HExpr> &i) {
                 HExpr y = i[2] - static_cast<int>(top), xx = i[3] - static_cast<int>(left);
                 HExpr inside = y >= 0 && y < static_cast<int>(h) && xx >= 0 && xx < static_cast<int>(wd);
                 HExpr v = at(x, {i[0], i[1], Halide::clamp(y, 0, static_cast<int>(h - 1)),
                                  Halide::clamp(xx, 0, static_cast<int>(wd - 1))});
                 return Halide::select(inside, v, zero(t));
               });
    p.f.compute_root();
    schedule_stage(p.f, p.shape, p.dtype, 0);
    p.root = true;
  }
  const Tensor wr = materialize(w);
  HVar ox("ox"), oy("oy"), oc("oc"), nb("nb"), xo("xo"), co("co"), xi("xi"), ci("ci"), xv("xv"), xx("xx"),
      t_("t");
  RDom r(0, static_cast<int>(kw), 0, static_cast<int>(kh), 0, static_cast<int>(ic), fresh("rw"));
  Func acc(fresh("conv2d_acc"));
  acc(ox, oy, oc, nb) = zero(t);
  HExpr in_c = (oc / static_cast<int>(opg)) * static_cast<int>(ic) + r.z;
  acc(ox, oy, oc, nb) +=
      p.f(ox * static_cast<int>(strides[1]) + r.x * static_cast<int>(dilation[1]),
          oy * static_cast<int>(strides[0]) + r.y * static_cast<int>(dilation[0]), in_c, nb) *
      wr.f(r.x, r.y, r.z, oc);
  Tensor c{Func(fresh("nn.conv2d")), out.dtype, out.shape, true};
  c.f(ox, oy, oc, nb) = acc(ox, oy, oc, nb);
  const int wl = lanes(out.dtype);
  const int vec = ow >= wl ? wl : 1;
  const int cols = ow >= 2 * wl ? 2 * wl : ow >= wl ? wl : static_cast<int>(ow);
  const int chans = static_cast<int>(std::min<int64_t>(o, 4));
  c.f.compute_root()
      .tile(ox, oc, xo, co, xi, ci, cols, chans, Halide::TailStrategy::ShiftInwards)
      .reorder(xi, ci, xo, co, oy, nb)
      .fuse(oy, nb, t_);
  if (worth_parallel(numel(out.shape) * kw * kh * ic)) c.f.parallel(t_);
  if (vec > 1) c.f.vectorize(xi, vec);
  acc.compute_at(c.f, xo).unroll(oc);
  Halide::Stage update = acc.update();
  if (vec > 1) {
    acc.vectorize(ox, vec);
    update.split(ox, xx, xv, vec).reorder(xv, xx, oc, r.x, r.y, r.z).vectorize(xv).unroll(xx).unroll(oc);
  } else {
    update.reorder(ox, oc, r.x, r.y, r.z).unroll(oc);
  }
  (void)oh;
  scheduled_.insert(c.f.name());
  return c;
}

// Pools: the window's positions inside the input count (and, with count_include_pad, those in the
// padding); the counts are separable, so each output position's count is rows(oy) * cols(ox),
// tabulated at compile time. Max: the largest element, lowest() for a window with none; average:
// the float64 sum over the count (0 for none), as the interpreter computes it.
Tensor Lowerer::pool2d(bool is_max, const Call &call, const Tensor &x, const TensorType &out) {
  const Halide::Type t = htype(x.dtype, call.span);
  if (!t.is_float()) unsupported(fmt::format("{} of {}", op_, to_string(x.dtype)), call.span);
  const Pool2DAttrs attrs = pool2d_attrs(call.attrs);
  const std::array<int64_t, 2> size = attrs.pool_size, strides = attrs.strides, dilation = attrs.dilation;
  const Pad pad = attrs.padding;
  const bool cip = !is_max && attrs.count_include_pad;
  const int64_t h = x.shape[2], wd = x.shape[3], oh = out.shape[2], ow = out.shape[3];
  auto counts = [&](int64_t extent, int64_t outs, int64_t k, int64_t s, int64_t d, int64_t lo, int64_t hi) {
    Halide::Buffer<int32_t> buf(static_cast<int>(outs));
    for (int64_t o = 0; o < outs; ++o) {
      int32_t c = 0;
      for (int64_t r = 0; r < k; ++r) {
        const int64_t iy = o * s - lo + r * d;
        if (iy >= extent + hi) break;
        if ((iy >= 0 && iy < extent) || (cip && iy >= -lo)) ++c;
      }
      buf(static_cast<int>(o)) = c;
    }
    return buf;
  };
  Halide::Buffer<int32_t> rows = counts(h, oh, size[0], strides[0], dilation[0], pad.top, pad.bottom);
  Halide::Buffer<int32_t> cols = counts(wd, ow, size[1], strides[1], dilation[1], pad.left, pad.right);
  const Tensor xr = materialize(x);
  HVar ox("d3"), oy("d2"), c("d1"), nb("d0");
  RDom r(0, static_cast<int>(size[1]), 0, static_cast<int>(size[0]), fresh("rp"));
  HExpr iy =
      oy * static_cast<int>(strides[0]) - static_cast<int>(pad.top) + r.y * static_cast<int>(dilation[0]);
  HExpr ix =
      ox * static_cast<int>(strides[1]) - static_cast<int>(pad.left) + r.x * static_cast<int>(dilation[1]);
  HExpr inside = iy >= 0 && iy < static_cast<int>(h) && ix >= 0 && ix < static_cast<int>(wd);
  HExpr v = xr.f(Halide::clamp(ix, 0, static_cast<int>(wd - 1)),
                 Halide::clamp(iy, 0, static_cast<int>(h - 1)), c, nb);
  const Halide::Type f64 = Halide::Float(64);
  Func acc(fresh(is_max ? "max_pool_acc" : "avg_pool_acc"));
  if (is_max) {
    acc(ox, oy, c, nb) = Halide::cast(t, -INFINITY);
    HExpr cur = acc(ox, oy, c, nb);
    acc(ox, oy, c, nb) = Halide::select(inside && cur < v, v, cur);
  } else {
    acc(ox, oy, c, nb) = zero(f64);
    acc(ox, oy, c, nb) += Halide::select(inside, Halide::cast(f64, v), zero(f64));
  }
  acc.compute_root();
  schedule_stage(acc, out.shape, is_max ? x.dtype : DType::Float64, size[0] * size[1]);
  const HExpr lowest = Halide::cast(t, HExpr(t.bits() == 32 ? -double(FLT_MAX) : -DBL_MAX));
  return define(op_, out.dtype, out.shape, [&](const std::vector<HExpr> &i) -> HExpr {
    HExpr a = acc(i[3], i[2], i[1], i[0]);
    HExpr count = rows(i[2]) * cols(i[3]);
    if (is_max) return Halide::select(count > 0, a, lowest);
    return Halide::select(count > 0, a / Halide::cast(f64, count), zero(f64));
  });
}

}  // namespace grove::relay::halide_internal
