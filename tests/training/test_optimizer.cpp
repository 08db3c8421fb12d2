// The optimizers' first steps against the documented formulas computed by hand, weight decay, the
// sparse embedding update (untouched rows bit-identical), global-norm clipping, and the state.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/UserError.h"
#include "training/Optimizer.h"

namespace grove::training {
namespace {

Tensor vec(std::vector<float> v) {
  Tensor t({static_cast<int64_t>(v.size())});
  t.data = std::move(v);
  return t;
}

// One parameter "w" = (1, −2) and an embedding "emb" [4, 2].
struct Params {
  Weights params;
  Params() {
    params["w"] = vec({1.0f, -2.0f});
    params["emb"] = Tensor({4, 2});
    for (int i = 0; i < 8; ++i) params["emb"].data[i] = 0.5f * static_cast<float>(i);
  }
  ParamRefs refs() {
    ParamRefs r;
    for (auto &[name, t] : params) r[name] = &t;
    return r;
  }
};

Gradients grads_of(std::vector<float> w, std::vector<int32_t> rows = {}, std::vector<float> emb = {}) {
  Gradients g;
  g.dense["w"] = vec(std::move(w));
  g.embedding_rows = std::move(rows);
  g.embedding_grad = Tensor({static_cast<int64_t>(g.embedding_rows.size()), 2});
  if (!emb.empty()) g.embedding_grad.data = std::move(emb);
  return g;
}

// Updates split among threads give the same bits as one thread, for every optimizer: parameters
// larger than one task's share and an embedding of many rows.
TEST(Optimizer, SameBitsOnAnyNumberOfThreads) {
  for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Adagrad, OptimizerKind::Adam}) {
    auto run = [&](int threads) {
      Weights params;
      params["w"] = Tensor({70000});
      params["emb"] = Tensor({3000, 20});
      Gradients g;
      g.dense["w"] = Tensor({70000});
      for (size_t i = 0; i < params["w"].data.size(); ++i) {
        params["w"].data[i] = std::sin(0.001f * float(i));
        g.dense["w"].data[i] = std::cos(0.003f * float(i));
      }
      for (int32_t r = 0; r < 3000; r += 2) g.embedding_rows.push_back(r);
      g.embedding_grad = Tensor({1500, 20});
      for (size_t i = 0; i < g.embedding_grad.data.size(); ++i)
        g.embedding_grad.data[i] = 0.01f * float(i % 97);
      OptimizerOptions options;
      options.kind = kind;
      options.embedding_same = true;
      Optimizer opt(options, "emb");
      ParamRefs refs{{"w", &params["w"]}, {"emb", &params["emb"]}};
      for (int step = 0; step < 2; ++step) {
        Gradients copy = g;
        opt.step(refs, copy, threads);
      }
      return params;
    };
    const Weights one = run(1);
    for (int threads : {2, 3}) {
      const Weights many = run(threads);
      EXPECT_EQ(many.at("w").data, one.at("w").data) << optimizer_name(kind) << " on " << threads;
      EXPECT_EQ(many.at("emb").data, one.at("emb").data) << optimizer_name(kind) << " on " << threads;
    }
  }
}

TEST(Optimizer, SgdFirstSteps) {
  Params s;
  Optimizer opt({OptimizerKind::Sgd, 0.1, 0.1}, "emb");
  Gradients g = grads_of({0.5f, 1.0f});
  opt.step(s.refs(), g);
  EXPECT_FLOAT_EQ(s.params["w"].data[0], 1.0f - 0.1f * 0.5f);
  EXPECT_FLOAT_EQ(s.params["w"].data[1], -2.0f - 0.1f * 1.0f);
  EXPECT_EQ(opt.steps(), 1);
}

TEST(Optimizer, AdagradFirstTwoSteps) {
  Params s;
  Optimizer opt({OptimizerKind::Adagrad, 0.05, 0.1}, "emb");
  Gradients g1 = grads_of({0.5f, -1.0f});
  opt.step(s.refs(), g1);
  // s = g², θ −= lr·g/(√s + 1e-10) = lr·sign(g).
  EXPECT_FLOAT_EQ(s.params["w"].data[0], 1.0f - 0.05f);
  EXPECT_FLOAT_EQ(s.params["w"].data[1], -2.0f + 0.05f);
  Gradients g2 = grads_of({0.25f, 2.0f});
  opt.step(s.refs(), g2);
  // s = 0.25 + 0.0625 = 0.3125 and 1 + 4 = 5.
  EXPECT_NEAR(s.params["w"].data[0], 0.95 - 0.05 * 0.25 / std::sqrt(0.3125), 1e-6);
  EXPECT_NEAR(s.params["w"].data[1], -1.95 - 0.05 * 2.0 / std::sqrt(5.0), 1e-6);
}

TEST(Optimizer, AdamFirstTwoSteps) {
  Params s;
  Optimizer opt({OptimizerKind::Adam, 0.001, 0.1}, "emb");
  Gradients g1 = grads_of({0.5f, -1.0f});
  opt.step(s.refs(), g1);
  // Step 1: m̂ = g, v̂ = g², so θ −= lr·g/(|g| + 1e-8) ≈ lr·sign(g).
  EXPECT_NEAR(s.params["w"].data[0], 1.0 - 0.001 * 0.5 / (0.5 + 1e-8), 1e-6);
  EXPECT_NEAR(s.params["w"].data[1], -2.0 + 0.001, 1e-6);
  Gradients g2 = grads_of({0.25f, 2.0f});
  opt.step(s.refs(), g2);
  // Step 2 by the formulas: m = 0.9·m + 0.1·g, v = 0.999·v + 0.001·g², corrections 1 − β^2.
  for (int i = 0; i < 2; ++i) {
    const double g1v = i == 0 ? 0.5 : -1.0, g2v = i == 0 ? 0.25 : 2.0;
    const double m = 0.9 * (0.1 * g1v) + 0.1 * g2v;
    const double v = 0.999 * (0.001 * g1v * g1v) + 0.001 * g2v * g2v;
    const double mhat = m / (1 - 0.81), vhat = v / (1 - 0.999 * 0.999);
    const double first = (i == 0 ? 1.0 : -2.0) - 0.001 * g1v / std::abs(g1v);
    EXPECT_NEAR(s.params["w"].data[i], first - 0.001 * mhat / (std::sqrt(vhat) + 1e-8), 1e-6) << i;
  }
}

TEST(Optimizer, WeightDecayAddsLambdaThetaButNotToTheEmbedding) {
  Params s;
  OptimizerOptions o{OptimizerKind::Sgd, 0.1, 0.5};
  o.weight_decay = 0.01;
  Optimizer opt(o, "emb");
  Gradients g = grads_of({0.5f, 1.0f}, {1}, {1.0f, 1.0f});
  opt.step(s.refs(), g);
  EXPECT_FLOAT_EQ(s.params["w"].data[0], 1.0f - 0.1f * (0.5f + 0.01f * 1.0f));
  EXPECT_FLOAT_EQ(s.params["w"].data[1], -2.0f - 0.1f * (1.0f + 0.01f * -2.0f));
  // Row 1 of the embedding (1.0, 1.5) by plain SGD at emb_lr, no decay.
  EXPECT_FLOAT_EQ(s.params["emb"].data[2], 1.0f - 0.5f);
  EXPECT_FLOAT_EQ(s.params["emb"].data[3], 1.5f - 0.5f);
}

TEST(Optimizer, SparseEmbeddingLeavesUntouchedRowsBitIdentical) {
  for (bool same : {false, true}) {
    for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Adagrad, OptimizerKind::Adam}) {
      Params s;
      OptimizerOptions o{kind, 0.05, 0.1};
      o.embedding_same = same;
      o.weight_decay = 1e-4;
      Optimizer opt(o, "emb");
      const Tensor before = s.params["emb"];
      for (int step = 0; step < 3; ++step) {
        Gradients g = grads_of({0.1f, 0.2f}, {0, 2}, {1, 2, 3, 4});
        opt.step(s.refs(), g);
      }
      const Tensor &after = s.params["emb"];
      for (int row : {1, 3})
        for (int k = 0; k < 2; ++k) EXPECT_EQ(after.data[row * 2 + k], before.data[row * 2 + k]);
      for (int row : {0, 2}) EXPECT_NE(after.data[row * 2], before.data[row * 2]);
      if (same && kind == OptimizerKind::Adagrad) {
        // Adagrad at emb_lr: each of three steps moves by emb_lr·g/√(k·g²) = 0.1/√k.
        const double moved = 0.1 * (1 + 1 / std::sqrt(2.0) + 1 / std::sqrt(3.0));
        EXPECT_NEAR(after.data[0], before.data[0] - moved, 1e-6);
      }
      if (!same) {
        // Plain SGD at emb_lr: three steps of 0.1·g.
        EXPECT_NEAR(after.data[0], before.data[0] - 3 * 0.1 * 1, 1e-6);
      }
    }
  }
}

TEST(Optimizer, ClippingAsClipGradNorm) {
  // ‖(3, 4, 12)‖ = 13 over the dense gradient and the embedding row together.
  Gradients g = grads_of({3.0f, 4.0f}, {1}, {12.0f, 0.0f});
  EXPECT_NEAR(gradient_norm(g), 13.0, 1e-12);
  Gradients unclipped = g;
  EXPECT_NEAR(clip_gradients(unclipped, 20.0), 13.0, 1e-12);  // under the threshold: unchanged
  EXPECT_EQ(unclipped.dense["w"].data, g.dense["w"].data);
  EXPECT_NEAR(clip_gradients(g, 5.0), 13.0, 1e-12);
  const double factor = 5.0 / (13.0 + 1e-6);
  EXPECT_FLOAT_EQ(g.dense["w"].data[0], static_cast<float>(3.0 * factor));
  EXPECT_FLOAT_EQ(g.dense["w"].data[1], static_cast<float>(4.0 * factor));
  EXPECT_FLOAT_EQ(g.embedding_grad.data[0], static_cast<float>(12.0 * factor));
  EXPECT_NEAR(gradient_norm(g), 5.0, 1e-5);

  // In a step: the clipped gradient drives the update.
  Params s;
  OptimizerOptions o{OptimizerKind::Sgd, 1.0, 1.0};
  o.clip = 2.5;
  Optimizer opt(o, "emb");
  Gradients h = grads_of({3.0f, 4.0f});
  opt.step(s.refs(), h);
  EXPECT_NEAR(gradient_norm(h), 2.5, 1e-6);  // clipped in place
  EXPECT_NEAR(s.params["w"].data[0], 1.0 - 1.5, 1e-6);
  EXPECT_NEAR(s.params["w"].data[1], -2.0 - 2.0, 1e-6);
}

TEST(Optimizer, StateRoundTripContinuesBitIdentically) {
  for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Adagrad, OptimizerKind::Adam}) {
    OptimizerOptions o{kind, 0.01, 0.1};
    o.embedding_same = true;
    Params a, b;
    Optimizer first(o, "emb");
    Gradients g = grads_of({0.3f, -0.7f}, {3}, {0.5f, 0.25f});
    Gradients g1 = g, g2 = g;
    first.step(a.refs(), g1);
    Weights state = first.state();
    EXPECT_TRUE(state.count("optimizer.step"));
    EXPECT_EQ(state.count("optimizer.adagrad.w"), kind == OptimizerKind::Adagrad ? 1u : 0u);
    EXPECT_EQ(state.count("optimizer.adam.emb.v"), kind == OptimizerKind::Adam ? 1u : 0u);
    // b: the same first step, then a fresh optimizer restored from a's state.
    Optimizer warm(o, "emb");
    warm.step(b.refs(), g2);
    Optimizer restored(o, "emb");
    restored.load_state(state, b.refs(), "s");
    EXPECT_EQ(restored.steps(), 1);
    Gradients h1 = g, h2 = g;
    first.step(a.refs(), h1);
    restored.step(b.refs(), h2);
    EXPECT_EQ(a.params["w"].data, b.params["w"].data);
    EXPECT_EQ(a.params["emb"].data, b.params["emb"].data);
  }
}

TEST(Optimizer, StateErrors) {
  Params s;
  OptimizerOptions adagrad{OptimizerKind::Adagrad, 0.01, 0.1};
  Optimizer opt(adagrad, "emb");
  Gradients g = grads_of({0.3f, -0.7f});
  opt.step(s.refs(), g);
  Weights state = opt.state();
  using grove::testing::user_error_of;
  Optimizer adam({OptimizerKind::Adam, 0.01, 0.1}, "emb");
  EXPECT_EQ(user_error_of([&] { adam.load_state(state, s.refs(), "c.safetensors"); }),
            "c.safetensors: tensor 'optimizer.adagrad.w' is not state of the adam optimizer; resume with the "
            "optimizer and options the checkpoint was trained with");
  Weights no_step = state;
  no_step.erase("optimizer.step");
  Optimizer other(adagrad, "emb");
  EXPECT_EQ(user_error_of([&] { other.load_state(no_step, s.refs(), "c.safetensors"); }),
            "c.safetensors: no optimizer state: tensor 'optimizer.step' is missing; resume from a checkpoint "
            "grove train wrote");
  Weights missing = state;
  missing.erase("optimizer.adagrad.w");
  EXPECT_EQ(user_error_of([&] { other.load_state(missing, s.refs(), "c.safetensors"); }),
            "c.safetensors: the optimizer state 'optimizer.adagrad.w' is missing");
  Weights wrong = state;
  wrong["optimizer.adagrad.w"] = Tensor({3});
  EXPECT_EQ(user_error_of([&] { other.load_state(wrong, s.refs(), "c.safetensors"); }),
            "c.safetensors: optimizer state 'optimizer.adagrad.w' has shape [3]; its parameter has [2]");
}

TEST(Optimizer, StepCountBeyondFloatPrecision) {
  Params s;
  Optimizer opt({OptimizerKind::Sgd, 0.01, 0.1}, "emb");
  Weights state;
  state["optimizer.step"] = vec({3.0f, 5.0f});
  opt.load_state(state, s.refs(), "s");
  EXPECT_EQ(opt.steps(), 3 * (int64_t{1} << 24) + 5);
  EXPECT_EQ(opt.state().at("optimizer.step").data, (std::vector<float>{3.0f, 5.0f}));
}

}  // namespace
}  // namespace grove::training
