// grove_gpu_prepare OUT_DIR [--quick]: writes the GPU check kit (Kit.h) for a lent GPU machine —
// each case's emitted kernels, its inspector arrays, weights and packed panels, and the
// independent reference's outputs (tests/reference) — so that run_kit.sh needs nothing but the
// CUDA toolkit there.
//
// Cases, in numbered groups:
//   1. Checks: every model of models/ in the per-level form and the persistent form with both
//      barriers, at H = 64 (MV-RNN 32) on 20 SST test trees (tokens renumbered over the words they
//      use, so the embedding stays small), random DAGs and sequences; the kernels written for 132
//      blocks x 256 threads; outputs compared with the reference.
//   2. Timings: TreeLSTM, TreeGRU, TreeFC, the child-sum TreeLSTM and MV-RNN at H = 256 and 512
//      (MV-RNN 64 and 128), per level and persistent, on the first 1 and 10 SST test trees as one
//      call; weights random on the device (not carried).
// --quick: group 1 only, for TreeLSTM, the DAG-RNN and LSTM at H = 16 on 4 x 32 threads (the
// emulated self-test, tests/backends/cuda/test_cuda_kit.cpp).

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "backends/cuda/CudaEmitter.h"
#include "backends/cuda/KernelArgs.h"
#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Inspector.h"
#include "datasets/DagReader.h"
#include "datasets/Generators.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "experiments/gpu/Kit.h"
#include "frontend/dsl/Frontend.h"
#include "tests/reference/Reference.h"

namespace grove {
namespace {

using reference::ModelKind;
using Kind = ModelAbi::ArgKind;

struct Inputs {
  LinearizedBatch batch;
  int64_t vocab = 0;
  Tensor expected;  // [rows, H], empty for timing cases
};

// The first `count` SST test trees, tokens renumbered 0.. over the words they use.
std::vector<Tree> sst_trees(size_t count, int64_t *vocab) {
  Vocab v = Vocab::load(GROVE_SOURCE_DIR "/datasets/sst/vocab.txt");
  std::vector<Tree> trees = read_ptb_trees(GROVE_SOURCE_DIR "/datasets/sst/test.txt", &v);
  trees.resize(std::min(count, trees.size()));
  std::map<int32_t, int32_t> ids;
  for (Tree &t : trees)
    for (int32_t &tok : t.token)
      if (tok >= 0) tok = ids.emplace(tok, int32_t(ids.size())).first->second;
  *vocab = int64_t(ids.size());
  return trees;
}

bool is_dag(ModelKind m) { return m == ModelKind::DAGRNN; }
bool is_sequence(ModelKind m) { return m == ModelKind::LSTM || m == ModelKind::GRU; }

std::map<std::string, int64_t> sizes_of(ModelKind m, int64_t H, int64_t V) {
  if (m == ModelKind::TreeFC || m == ModelKind::MVRNN) return {{"H", H}, {"V", V}};
  return {{"H", H}, {"D", H}, {"V", V}};
}

class Writer {
 public:
  explicit Writer(std::string dir) : dir_(std::move(dir)) { std::filesystem::create_directories(dir_); }
  ~Writer() { std::ofstream(dir_ + "/kit.txt") << kit_.str(); }

  // One case: the kernels for `options`, the arguments in the ABI's order, one call's launches.
  void add(const std::string &name, ModelKind model, int64_t H, const std::vector<Tree> *trees,
           const std::vector<Dag> *dags, const std::vector<std::vector<int32_t>> *sequences, int64_t V,
           const cuda::CudaOptions &options, bool check, int repeat) {
    const std::string stem = reference::model_file_stem(model);
    ilir::Program program = dsl::parse_model_file(GROVE_SOURCE_DIR "/models/" + stem + ".grove");
    plan::LevelPlan plan = cuda::plan_for_cuda(program, sizes_of(model, H, V), "");
    cuda::CudaSource src = cuda::emit_cuda(plan, options);
    std::ofstream(dir_ + "/" + name + ".cu") << src.text;
    const ModelAbi &abi = plan.abi;

    LinearizedBatch batch;
    Tensor expected;
    const std::string data = fmt::format("{}_H{}_{}", stem, H, trees ? trees->size() : 0);
    Weights weights;
    if (check) weights = reference::random_model_weights(model, H, H, V, 5);  // D = H
    if (dags) {
      batch = linearize_dags(*dags, {.slots = abi.predecessor_slots, .vocab_size = abi.vocab_size});
    } else if (sequences) {
      std::vector<Dag> chains;
      for (const auto &s : *sequences) chains.push_back(chain_dag(s));
      batch = linearize_dags(chains, {.slots = abi.predecessor_slots, .vocab_size = abi.vocab_size});
    } else {
      batch =
          linearize(*trees, {.arity = {abi.min_children, abi.max_children}, .vocab_size = abi.vocab_size});
    }
    if (check) expected = reference_outputs(model, weights, trees, dags, sequences, H);

    const int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);
    kit_ << "case " << name << "\nsource " << name << ".cu\n"
         << fmt::format("grid {} {} {}\n", options.blocks, options.threads, src.shared_bytes) << "form "
         << (options.form == cuda::Form::Persistent ? "persistent" : "per_level") << "\n"
         << "repeat " << repeat << "\n";
    auto ints = [&](const std::string &what, const std::vector<int32_t> &v) {
      const std::string file = fmt::format("{}_{}.i32", data, what);
      std::vector<int32_t> w = v.empty() ? std::vector<int32_t>{0} : v;
      grove_kit::write_file(dir_ + "/" + file, w);
      kit_ << "arg i32file " << file << " " << w.size() << "\n";
    };
    int arg = 0, output_arg = -1;
    for (const ModelAbi::Arg &a : abi.args) {
      switch (a.kind) {
        case Kind::Param: {
          const int64_t n = Tensor::num_elements(abi.params[a.index].shape);
          if (!check) {
            kit_ << "arg f32random " << arg << " " << n << "\n";
          } else {
            const std::string file = fmt::format("{}_{}.f32", data, a.name);
            grove_kit::write_file(dir_ + "/" + file, weights.at(abi.params[a.index].name).data);
            kit_ << "arg f32file " << file << " " << n << "\n";
          }
          break;
        }
        case Kind::Packed: {
          const PackedWeight &w = abi.packed[a.index];
          if (!check) {
            kit_ << "arg f32random " << arg << " " << w.size() << "\n";
          } else {
            std::vector<float> panels(w.size());
            pack(w, weights.at(w.param).data.data(), panels.data());
            const std::string file = fmt::format("{}_{}.f32", data, a.name);
            grove_kit::write_file(dir_ + "/" + file, panels);
            kit_ << "arg f32file " << file << " " << w.size() << "\n";
          }
          break;
        }
        case Kind::State:
          if (a.index == abi.output) output_arg = arg;
          kit_ << "arg f32zero " << rows * abi.states[a.index].row_elements << "\n";
          break;
        case Kind::LevelBegin:
          ints("level_begin", batch.level_begin);
          break;
        case Kind::ChildBegin:
          ints("child_begin", batch.child_begin);
          break;
        case Kind::Children:
          ints("children", batch.children);
          break;
        case Kind::Token:
          ints("token", batch.token);
          break;
        case Kind::TeamBegin:
          ints("team_begin", {});
          break;
        case Kind::NumLevels:
          kit_ << "arg int " << batch.num_levels << "\n";
          break;
      }
      ++arg;
    }
    kit_ << "arg f32zero " << std::max<int64_t>(1, batch.num_nodes * src.scratch_floats_per_node) << "\n"
         << "arg u32zero 1\narg level\n";
    cuda::for_each_launch(src, batch.num_levels, [&](const std::string &kernel, int32_t level) {
      kit_ << "launch " << kernel << " " << level << "\n";
    });
    const std::string roots = fmt::format("{}_roots.i32", data);
    grove_kit::write_file(dir_ + "/" + roots, batch.roots);
    kit_ << "output " << output_arg << " " << abi.output_elements() << " " << roots;
    if (check) {
      const std::string file = fmt::format("{}_expected.f32", data);
      grove_kit::write_file(dir_ + "/" + file, expected.data);
      kit_ << " " << file;
    }
    kit_ << "\nend\n";
  }

 private:
  static Tensor reference_outputs(ModelKind m, const Weights &w, const std::vector<Tree> *trees,
                                  const std::vector<Dag> *dags,
                                  const std::vector<std::vector<int32_t>> *sequences, int64_t H) {
    if (trees) return reference::reference_roots(m, w, *trees);
    Tensor out({0, H});
    auto append = [&](const Tensor &rows) {
      out.data.insert(out.data.end(), rows.data.begin(), rows.data.end());
      out.shape[0] += rows.size() / H;
    };
    if (dags)
      for (const Dag &d : *dags) {
        reference::Dag r;
        r.token = d.token;
        for (int32_t v = 0; v < d.size(); ++v) {
          std::array<int32_t, 2> slots{-1, -1};
          for (int32_t k = 0; k < d.num_preds(v); ++k) slots[k] = d.pred(v, k);
          r.preds.push_back(slots);
        }
        append(reference::reference_dagrnn(w, r));
      }
    else
      for (const auto &s : *sequences)
        append(m == ModelKind::LSTM ? reference::reference_lstm(w, s) : reference::reference_gru(w, s));
    return out;
  }

  std::string dir_;
  std::ostringstream kit_;
};

std::vector<Dag> dags(int32_t vocab) {
  std::vector<Dag> out;
  std::vector<int32_t> tokens(20);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7) % vocab);
  out.push_back(grid_dag(4, 5, tokens, Sweep::SouthEast));
  out.push_back(grid_dag(5, 4, tokens, Sweep::NorthWest));
  return out;
}

std::vector<std::vector<int32_t>> sequences(int32_t vocab) {
  std::vector<std::vector<int32_t>> out;
  for (int32_t length : {1, 9, 30, 4}) {
    std::vector<int32_t> s;
    for (int32_t i = 0; i < length; ++i) s.push_back((i * 13 + length) % vocab);
    out.push_back(s);
  }
  return out;
}

std::string name_of(ModelKind m) { return reference::model_name(m); }

int prepare(const std::string &dir, bool quick) {
  Writer kit(dir);
  const std::vector<ModelKind> all = {
      ModelKind::TreeFC, ModelKind::TreeGRU, ModelKind::TreeLSTM, ModelKind::ChildSumTreeLSTM,
      ModelKind::MVRNN,  ModelKind::DAGRNN,  ModelKind::LSTM,     ModelKind::GRU};
  const std::vector<ModelKind> models =
      quick ? std::vector<ModelKind>{ModelKind::TreeLSTM, ModelKind::DAGRNN, ModelKind::LSTM} : all;
  int64_t V = 0;
  const std::vector<Tree> checked = sst_trees(quick ? 6 : 20, &V);
  const std::vector<Dag> d = dags(int32_t(V));
  const std::vector<std::vector<int32_t>> s = sequences(int32_t(V));
  cuda::CudaOptions per_level{
      .form = cuda::Form::PerLevel, .blocks = quick ? 4 : 132, .threads = quick ? 32 : 256};
  cuda::CudaOptions counter = per_level, grid_sync = per_level;
  counter.form = grid_sync.form = cuda::Form::Persistent;
  counter.shared_limit = grid_sync.shared_limit = quick ? 48 * 1024 : 232448;
  grid_sync.barrier = cuda::GridBarrier::CooperativeGroups;
  // 1. Checks.
  for (ModelKind m : models) {
    const int64_t H = quick ? 16 : (m == ModelKind::MVRNN ? 32 : 64);
    const std::vector<Tree> *t = is_dag(m) || is_sequence(m) ? nullptr : &checked;
    for (auto [form, o] : {std::pair{"per_level", per_level}, {"counter", counter}, {"grid_sync", grid_sync}})
      kit.add(fmt::format("check_{}_H{}_{}", name_of(m), H, form), m, H, t, is_dag(m) ? &d : nullptr,
              is_sequence(m) ? &s : nullptr, V, o, true, 0);
  }
  if (quick) return 0;
  // 2. Timings.
  for (size_t batch : {1, 10}) {
    int64_t Vt = 0;
    const std::vector<Tree> trees = sst_trees(batch, &Vt);
    for (ModelKind m : {ModelKind::TreeLSTM, ModelKind::TreeGRU, ModelKind::TreeFC,
                        ModelKind::ChildSumTreeLSTM, ModelKind::MVRNN})
      for (int64_t H : {256, 512}) {
        const int64_t h = m == ModelKind::MVRNN ? H / 4 : H;
        for (auto [form, o] : {std::pair{"per_level", per_level}, {"persistent", counter}})
          kit.add(fmt::format("time_{}_H{}_B{}_{}", name_of(m), h, batch, form), m, h, &trees, nullptr,
                  nullptr, Vt, o, false, 200);
      }
  }
  return 0;
}

}  // namespace
}  // namespace grove

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: grove_gpu_prepare OUT_DIR [--quick]\n";
    return 2;
  }
  try {
    return grove::prepare(argv[1], argc > 2 && std::string(argv[2]) == "--quick");
  } catch (const std::exception &e) {
    std::cerr << "grove_gpu_prepare: " << e.what() << "\n";
    return 1;
  }
}
