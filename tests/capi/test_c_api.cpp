// The C API (include/grove/grove.h) against the C++ JIT: a model compiled through
// grove_model_compile and the same model compiled with cpu::CompiledModel::compile from the same
// weights file run the same inputs.
//
// Tolerance: none. Both sides JIT-compile the same program under the same schedule and target, and
// the C API only converts the inputs (global ids to each input's own) and copies rows out, so the
// rows must be bit-identical; any difference is a conversion bug, not rounding.

#include <gmock/gmock.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "backends/cpu/Aot.h"
#include "datasets/DagReader.h"
#include "datasets/Generators.h"
#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "tests/capi/CApiTestUtil.h"

namespace grove::capi_test {
namespace {

using ::testing::HasSubstr;

constexpr size_t kSstTrees = 150;
constexpr int kThreads = 4;

// The SST test split's first trees and a TreeLSTM with H = D = 16 over its vocabulary, compiled
// once for the suite through both APIs; a second weights file (seed 2) for rebinding.
class TreeLstmCApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    Vocab vocab = Vocab::load(std::string(GROVE_SST_DIR) + "/vocab.txt");
    std::vector<Tree> trees = read_ptb_trees(std::string(GROVE_SST_DIR) + "/test.txt", &vocab);
    trees.resize(kSstTrees);
    for (Tree &t : trees) t = post_order(t);
    trees_ = new std::vector<Tree>(std::move(trees));
    flat_ = new FlatTrees(flatten(*trees_));
    std::string sizes = "H=16,D=16,V=" + std::to_string(vocab.size());
    files_ = new ModelFiles(model_files(*dir_, "treelstm", sizes, 1));
    other_ = new ModelFiles(model_files(*dir_, "treelstm", sizes, 2));
    cpp_ = new cpu::CompiledModel(compile_cpp(*files_));
    expected_ = new std::vector<float>(cpp_->run(*trees_, {}).data);
    expected_other_ = new std::vector<float>(compile_cpp(*other_).run(*trees_, {}).data);
    model_ = compile_c(files_->model_file, files_->weights_file.c_str()).release();
  }
  static void TearDownTestSuite() {
    grove_model_free(model_);
    delete expected_other_;
    delete expected_;
    delete cpp_;
    delete other_;
    delete files_;
    delete flat_;
    delete trees_;
    delete dir_;
  }
  void TearDown() override {
    // Tests that rebind leave the suite's model with its own weights.
    ASSERT_EQ(grove_model_bind_weights_file(model_, files_->weights_file.c_str()), GROVE_OK)
        << grove_last_error();
  }

  static inline testing::TempDir *dir_;
  static inline std::vector<Tree> *trees_;
  static inline FlatTrees *flat_;
  static inline ModelFiles *files_, *other_;
  static inline cpu::CompiledModel *cpp_;
  static inline std::vector<float> *expected_, *expected_other_;
  static inline grove_model *model_;
};

TEST_F(TreeLstmCApi, ParentArraysMatchTheJit) { EXPECT_EQ(run_c(model_, flat_->parents()), *expected_); }

TEST_F(TreeLstmCApi, ChildArraysMatchTheJit) { EXPECT_EQ(run_c(model_, flat_->csr()), *expected_); }

// The batch size may change the last ulps (a level's partial block of nodes runs in a micro-kernel
// of its own size; tests/models checks it stays within 1e-6), so each size is compared with the
// JIT's run under the same size.
TEST_F(TreeLstmCApi, BatchSizesMatchTheJitsBatches) {
  for (int64_t batch : {1, 7, 64}) {
    std::vector<float> expected = cpp_->run(*trees_, {.batch = batch}).data;
    EXPECT_EQ(run_c(model_, flat_->parents(), batch), expected) << "batch " << batch;
    EXPECT_EQ(run_c(model_, flat_->csr(), batch), expected) << "batch " << batch;
  }
}

TEST_F(TreeLstmCApi, RowsAloneWithoutOutput) {
  grove_trees trees = flat_->parents();
  int64_t rows = -1;
  ASSERT_EQ(grove_model_run_trees(model_, &trees, nullptr, nullptr, 0, &rows), GROVE_OK)
      << grove_last_error();
  EXPECT_EQ(rows, int64_t(kSstTrees));
}

TEST_F(TreeLstmCApi, InfoAndParamsDescribeTheModel) {
  grove_model_info info;
  ASSERT_EQ(grove_model_get_info(model_, &info), GROVE_OK) << grove_last_error();
  EXPECT_STREQ(info.name, "TreeLSTM");
  EXPECT_STREQ(info.structure, "binary tree");
  EXPECT_EQ(info.input, GROVE_INPUT_TREES);
  EXPECT_EQ(info.predecessor_slots, 0);
  EXPECT_EQ(info.output_elements, 16);
  EXPECT_EQ(info.vocab_size, files_->weights.at("emb").shape[0]);
  EXPECT_EQ(info.schedule, cpp_->schedule());
  ASSERT_EQ(info.num_params, int32_t(files_->weights.size()));
  for (int32_t k = 0; k < info.num_params; ++k) {
    const char *name = nullptr;
    const int64_t *shape = nullptr;
    int32_t rank = -1;
    ASSERT_EQ(grove_model_param(model_, k, &name, &shape, &rank), GROVE_OK) << grove_last_error();
    ASSERT_TRUE(files_->weights.count(name)) << name;
    EXPECT_EQ(std::vector<int64_t>(shape, shape + rank), files_->weights.at(name).shape) << name;
  }
}

// precision=bf16 through grove_compile_options::schedule: the C API's model is the C++ JIT's at bf16
// (bit for bit), and its info says so; where this CPU has no bf16 kernel both run fp32 and say
// precision=fp32.
TEST_F(TreeLstmCApi, Bf16ScheduleIsTheJits) {
  grove_compile_options options{nullptr, "precision=bf16", nullptr, 0};
  ModelPtr bf16 = compile_c(files_->model_file, files_->weights_file.c_str(), &options);
  cpu::CompileOptions cpp_options;
  cpp_options.weights_file = files_->weights_file;
  cpp_options.schedule = "precision=bf16";
  cpu::CompiledModel cpp =
      cpu::CompiledModel::compile(files_->program, read_safetensors(files_->weights_file), cpp_options);
  EXPECT_EQ(run_c(bf16.get(), flat_->parents()), cpp.run(*trees_, {}).data);
  grove_model_info info;
  ASSERT_EQ(grove_model_get_info(bf16.get(), &info), GROVE_OK) << grove_last_error();
  EXPECT_EQ(info.schedule, cpp.schedule());
  EXPECT_THAT(info.schedule, HasSubstr(cpp.notes().empty() ? "precision=bf16" : "precision=fp32"));
  if (cpp.notes().empty()) EXPECT_NE(run_c(bf16.get(), flat_->parents()), *expected_) << "bf16 equals fp32";
}

TEST_F(TreeLstmCApi, ThreadsShareOneModel) {
  const std::vector<int64_t> batches{0, 5, 9};
  std::vector<std::vector<float>> expected;
  for (int64_t batch : batches) expected.push_back(cpp_->run(*trees_, {.batch = batch}).data);
  std::vector<std::vector<std::vector<float>>> results(kThreads,
                                                       std::vector<std::vector<float>>(batches.size()));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      grove_trees trees = t % 2 ? flat_->csr() : flat_->parents();
      for (size_t round = 0; round < batches.size(); ++round)
        results[t][round] = run_c(model_, trees, batches[round]);
    });
  for (std::thread &t : threads) t.join();
  for (int t = 0; t < kThreads; ++t)
    for (size_t round = 0; round < batches.size(); ++round)
      EXPECT_EQ(results[t][round], expected[round]) << "thread " << t << ", batch " << batches[round];
}

// The promise: a library written by `grove compile` (backends/cpu/Aot.h), opened with
// grove_model_open and run through the C API from several threads, gives `grove run`'s numbers
// (the JIT's, same weights and schedule) bit for bit.
TEST_F(TreeLstmCApi, CompiledLibraryFromThreadsMatchesTheJit) {
  cpu::AotOptions aot;
  aot.out_dir = dir_->file("aot");
  cpu::AotResult library = cpu::compile_library(files_->program, cpp_->abi().sizes, {}, aot);
  grove_model *opened = nullptr;
  ASSERT_EQ(grove_model_open(library.shared_library.c_str(), &opened), GROVE_OK) << grove_last_error();
  ModelPtr model(opened);
  ASSERT_EQ(grove_model_bind_weights_file(model.get(), files_->weights_file.c_str()), GROVE_OK)
      << grove_last_error();
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(
        [&, t] { results[t] = run_c(model.get(), t % 2 ? flat_->csr() : flat_->parents()); });
  for (std::thread &t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(results[t], *expected_) << "thread " << t;
}

// The other weights as caller-owned views; `data` holds the buffers.
std::vector<grove_tensor_view> views_of(Weights &data) {
  std::vector<grove_tensor_view> views;
  for (auto &[name, t] : data)
    views.push_back({name.c_str(), t.data.data(), t.shape.data(), int32_t(t.shape.size())});
  return views;
}

// Readers that run batches without pause, as many as `readers`, while the main thread rebinds
// every millisecond: every run must see one weight set whole, and every bind must return within
// kBindBound however many readers run (a bind never waits for runs that started after it). With
// `in_place`, the binds alternate caller buffers bound in place (copy = 0), which a bind may free
// only once no run reads them: it waits for the runs that started before it, so its bound is
// kBindBound plus twice the slowest run; each set of buffers is poisoned (overwritten) as soon as
// the bind that replaced it returned, so a run still reading them would see neither weight set.
// The readers stop after kDeadline whatever happens, so a bind that waits for them (as it did
// when readers could starve it) makes the test fail instead of hang.
void rebind_under_load(grove_model *model, const FlatTrees &flat, const std::vector<float> &first,
                       const std::vector<float> &second, const ModelFiles &first_files,
                       const ModelFiles &second_files, int readers, bool in_place) {
  using Clock = std::chrono::steady_clock;
  // 100 ms; under a sanitizer, which slows the bind's own checking and packing (ThreadSanitizer:
  // 117-564 ms with 8 readers on 2 cores), 2 s. Either is far below the wait of a starved bind,
  // which lasted as long as the readers ran (kDeadline here).
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  constexpr auto kBindBound = std::chrono::milliseconds(2000);
#else
  constexpr auto kBindBound = std::chrono::milliseconds(100);
#endif
  constexpr auto kDeadline = std::chrono::milliseconds(5000);
  constexpr int kBinds = 20;
  std::atomic<bool> binds_done{false};
  std::atomic<int> runs{0}, torn{0};
  std::atomic<int64_t> slowest_run_ns{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < readers; ++t)
    threads.emplace_back([&, t] {
      grove_trees trees = t % 2 ? flat.csr() : flat.parents();
      std::vector<float> out(first.size());
      int64_t rows = 0;
      while (!binds_done.load() && Clock::now() - start < kDeadline) {
        Clock::time_point t0 = Clock::now();
        if (grove_model_run_trees(model, &trees, nullptr, out.data(), int64_t(out.size()), &rows) !=
                GROVE_OK ||
            (out != first && out != second))
          torn++;
        int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
        for (int64_t seen = slowest_run_ns.load();
             ns > seen && !slowest_run_ns.compare_exchange_weak(seen, ns);) {
        }
        runs++;
      }
    });
  while (runs.load() < readers) std::this_thread::yield();  // every reader is running
  // Two sets of buffers for in-place binds; the one replaced last is poisoned after each bind.
  std::array<Weights, 2> buffers{first_files.weights, second_files.weights};
  Clock::duration worst{};
  for (int i = 0; i < kBinds; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int which = (i + 1) % 2;  // the first bind binds the second set
    Clock::time_point t0 = Clock::now();
    grove_status status;
    if (in_place) {
      buffers[which] = which ? second_files.weights : first_files.weights;
      std::vector<grove_tensor_view> views = views_of(buffers[which]);
      status = grove_model_bind_weights(model, views.data(), views.size(), 0);
    } else {
      status =
          grove_model_bind_weights_file(model, (which ? second_files : first_files).weights_file.c_str());
    }
    worst = std::max(worst, Clock::now() - t0);
    EXPECT_EQ(status, GROVE_OK) << grove_last_error();
    if (in_place && i > 0)
      for (auto &[name, t] : buffers[1 - which]) std::fill(t.data.begin(), t.data.end(), 0.25f);
  }
  binds_done = true;
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(torn.load(), 0) << "of " << runs.load() << " runs";
  const double worst_ms = std::chrono::duration<double, std::milli>(worst).count();
  const auto slowest_run = std::chrono::nanoseconds(slowest_run_ns.load());
  const auto bound = in_place ? kBindBound + 2 * slowest_run : std::chrono::nanoseconds(kBindBound);
  EXPECT_LT(worst, bound) << "the slowest of " << kBinds << " binds took " << worst_ms << " ms (slowest run "
                          << slowest_run.count() / 1e6 << " ms)";
  std::printf("  %d readers, %s: %d runs, slowest run %.3f ms, slowest bind %.3f ms\n", readers,
              in_place ? "in place" : "from files", runs.load(), slowest_run.count() / 1e6, worst_ms);
  // The last bind (i = kBinds - 1, odd) bound the first set; rebind it from its file (the buffers
  // bound in place are about to go away).
  ASSERT_EQ(grove_model_bind_weights_file(model, first_files.weights_file.c_str()), GROVE_OK)
      << grove_last_error();
  EXPECT_EQ(run_c(model, flat.parents()), first);
}

// glibc's shared_mutex let new readers in while a writer waited: with 4 or more readers running
// without pause, a bind waited until they stopped.
TEST_F(TreeLstmCApi, RebindingCompletesUnderContinuousLoad) {
  ASSERT_NE(*expected_, *expected_other_);
  for (int readers : {2, 4, 8})
    rebind_under_load(model_, *flat_, *expected_, *expected_other_, *files_, *other_, readers, false);
}

TEST_F(TreeLstmCApi, RebindingInPlaceWaitsOnlyForEarlierRuns) {
  for (int readers : {2, 4, 8})
    rebind_under_load(model_, *flat_, *expected_, *expected_other_, *files_, *other_, readers, true);
}

TEST_F(TreeLstmCApi, CopiedViewsAreIndependentOfTheCallersBuffers) {
  Weights buffers = other_->weights;
  std::vector<grove_tensor_view> views = views_of(buffers);
  ASSERT_EQ(grove_model_bind_weights(model_, views.data(), views.size(), 1), GROVE_OK) << grove_last_error();
  EXPECT_EQ(run_c(model_, flat_->parents()), *expected_other_);
  for (auto &[name, t] : buffers) std::fill(t.data.begin(), t.data.end(), 0.5f);
  EXPECT_EQ(run_c(model_, flat_->parents()), *expected_other_);
}

TEST_F(TreeLstmCApi, InPlaceViewsReadTheCallersBuffers) {
  Weights buffers = other_->weights;
  std::vector<grove_tensor_view> views = views_of(buffers);
  ASSERT_EQ(grove_model_bind_weights(model_, views.data(), views.size(), 0), GROVE_OK) << grove_last_error();
  EXPECT_EQ(run_c(model_, flat_->parents()), *expected_other_);
  // Changing an unpacked bias in place changes the results (a caller may not do this while runs are
  // in flight; here none is).
  std::vector<float> &bias = buffers.at("b_iou").data;
  std::vector<float> saved = bias;
  std::fill(bias.begin(), bias.end(), 1.0f);
  EXPECT_NE(run_c(model_, flat_->parents()), *expected_other_);
  bias = saved;
  EXPECT_EQ(run_c(model_, flat_->parents()), *expected_other_);
}

TEST_F(TreeLstmCApi, CompiledFromSizesRunsOnceWeightsAreBound) {
  grove_compile_options options{};
  std::string sizes = "H=16,D=16,V=" + std::to_string(files_->weights.at("emb").shape[0]);
  options.sizes = sizes.c_str();
  ModelPtr model = compile_c(files_->model_file, nullptr, &options);
  ASSERT_TRUE(model);
  grove_trees trees = flat_->parents();
  std::vector<float> out(expected_->size(), -3.0f);
  int64_t rows = 0;
  EXPECT_EQ(grove_model_run_trees(model.get(), &trees, nullptr, out.data(), int64_t(out.size()), &rows),
            GROVE_ERROR_USER);
  EXPECT_THAT(grove_last_error(), HasSubstr("model 'TreeLSTM' has no weights bound"));
  EXPECT_EQ(out, std::vector<float>(expected_->size(), -3.0f));
  ASSERT_EQ(grove_model_bind_weights_file(model.get(), files_->weights_file.c_str()), GROVE_OK)
      << grove_last_error();
  EXPECT_EQ(run_c(model.get(), trees), *expected_);
}

TEST_F(TreeLstmCApi, ThreadsOptionSetsTheSchedule) {
  grove_compile_options options{};
  options.threads = 3;
  options.schedule = "batch=off";
  ModelPtr model = compile_c(files_->model_file, files_->weights_file.c_str(), &options);
  ASSERT_TRUE(model);
  grove_model_info info;
  ASSERT_EQ(grove_model_get_info(model.get(), &info), GROVE_OK);
  EXPECT_THAT(info.schedule, HasSubstr("threads=3"));
  EXPECT_THAT(info.schedule, HasSubstr("batch=off"));
  // Compare with the JIT under the same schedule: a different schedule may round differently.
  cpu::CompileOptions cpp_options;
  cpp_options.schedule = "batch=off,threads=3";
  cpu::CompiledModel cpp = cpu::CompiledModel::compile(files_->program, files_->weights, cpp_options);
  EXPECT_EQ(run_c(model.get(), flat_->parents()), cpp.run(*trees_, {}).data);
}

// ---- Other structures ------------------------------------------------------------------------------

TEST(ChildSumTreeLstmCApi, TreesOfAnyArityMatchTheJit) {
  testing::TempDir dir;
  ModelFiles f = model_files(dir, "childsum_treelstm", "H=8,D=8,V=30");
  std::vector<Tree> trees;
  for (int i = 0; i < 25; ++i) trees.push_back(post_order(random_tree(100 + i, 1 + i * 3, 4, 30)));
  trees.push_back(post_order(unary_chain(50, 30)));
  FlatTrees flat = flatten(trees);
  ModelPtr model = compile_c(f.model_file, f.weights_file.c_str());
  ASSERT_TRUE(model);
  cpu::CompiledModel cpp = compile_cpp(f);
  EXPECT_EQ(run_c(model.get(), flat.csr()), cpp.run(trees, {}).data);
  // Each batch size against the JIT's at that size: H = 8 runs its gates as level GEMMs, whose
  // partial node blocks round differently from whole ones (Executor::run), so sizes agree only to
  // rounding, but the C API and the JIT agree bit for bit at each.
  EXPECT_EQ(run_c(model.get(), flat.parents(), 4), cpp.run(trees, {.batch = 4}).data);
}

// DAGs with empty slots, shared predecessors and several sinks, numbered in no particular order.
std::vector<Dag> sample_dags() {
  std::vector<Dag> dags;
  Dag a;  // a diamond: 0 -> {1, 2} -> 3, and a second sink 4 reading 1
  a.add_node(3, {-1, -1});
  a.add_node(5, {0, -1});
  a.add_node(7, {-1, 0});
  a.add_node(1, {1, 2});
  a.add_node(2, {1, 1});
  dags.push_back(a);
  Dag b;  // predecessors after their successors in the numbering
  b.add_node(4, {2, 1});
  b.add_node(6, {2, -1});
  b.add_node(8, {-1, -1});
  dags.push_back(b);
  dags.push_back(grid_dag(3, 4, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Sweep::SouthEast));
  Dag single;
  single.add_node(9, {-1, -1});
  dags.push_back(single);
  return dags;
}

class DagRnnCApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    files_ = new ModelFiles(model_files(*dir_, "dagrnn", "H=8,D=8,V=16"));
    model_ = compile_c(files_->model_file, files_->weights_file.c_str()).release();
    cpp_ = new cpu::CompiledModel(compile_cpp(*files_));
  }
  static void TearDownTestSuite() {
    grove_model_free(model_);
    delete cpp_;
    delete files_;
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(model_); }
  std::vector<float> run_dags(const grove_dags &dags, int64_t *rows) {
    int64_t needed = -1;
    EXPECT_EQ(grove_model_run_dags(model_, &dags, nullptr, nullptr, 0, &needed), GROVE_OK)
        << grove_last_error();
    std::vector<float> out(needed * 8);
    EXPECT_EQ(grove_model_run_dags(model_, &dags, nullptr, out.data(), int64_t(out.size()), rows), GROVE_OK)
        << grove_last_error();
    EXPECT_EQ(*rows, needed);
    return out;
  }
  static inline testing::TempDir *dir_;
  static inline ModelFiles *files_;
  static inline grove_model *model_;
  static inline cpu::CompiledModel *cpp_;
};

TEST_F(DagRnnCApi, SinksMatchTheJit) {
  std::vector<Dag> dags = sample_dags();
  FlatDags flat = flatten(dags);
  int64_t rows = 0;
  std::vector<float> out = run_dags(flat.dags(), &rows);
  Tensor expected = cpp_->run_dags(dags, {});
  EXPECT_EQ(rows, expected.shape[0]);
  EXPECT_EQ(rows, 5);  // 3 and 4; 0; the grid's last cell; the single node
  EXPECT_EQ(out, expected.data);
}

TEST_F(DagRnnCApi, AllNodesMatchTheJit) {
  std::vector<Dag> dags = sample_dags();
  FlatDags flat = flatten(dags);
  int64_t rows = 0;
  std::vector<float> out = run_dags(flat.dags(GROVE_OUTPUTS_ALL_NODES), &rows);
  RunOptions options;
  options.outputs = DagOutputs::AllNodes;
  EXPECT_EQ(rows, int64_t(flat.token.size()));
  EXPECT_EQ(out, cpp_->run_dags(dags, options).data);
}

TEST_F(DagRnnCApi, GridsOfEverySweepMatchTheJit) {
  std::vector<int32_t> rows{1, 3, 2, 4}, cols{5, 3, 1, 4};
  std::vector<int64_t> token_begin{0};
  std::vector<int32_t> tokens;
  for (size_t k = 0; k < rows.size(); ++k) {
    for (int32_t c = 0; c < rows[k] * cols[k]; ++c) tokens.push_back((c * 7 + int32_t(k)) % 16);
    token_begin.push_back(int64_t(tokens.size()));
  }
  for (auto [sweep, cpp_sweep] : {std::pair{GROVE_SWEEP_SOUTHEAST, Sweep::SouthEast},
                                  {GROVE_SWEEP_SOUTHWEST, Sweep::SouthWest},
                                  {GROVE_SWEEP_NORTHEAST, Sweep::NorthEast},
                                  {GROVE_SWEEP_NORTHWEST, Sweep::NorthWest}}) {
    grove_grids grids{int64_t(rows.size()), rows.data(),   cols.data(),
                      token_begin.data(),   tokens.data(), sweep};
    std::vector<float> out(rows.size() * 8);
    int64_t n = 0;
    ASSERT_EQ(grove_model_run_grids(model_, &grids, nullptr, out.data(), int64_t(out.size()), &n), GROVE_OK)
        << grove_last_error();
    std::vector<Dag> dags;
    for (size_t k = 0; k < rows.size(); ++k)
      dags.push_back(
          grid_dag(rows[k], cols[k],
                   std::vector<int32_t>(tokens.begin() + token_begin[k], tokens.begin() + token_begin[k + 1]),
                   cpp_sweep));
    EXPECT_EQ(n, int64_t(rows.size()));
    EXPECT_EQ(out, cpp_->run_dags(dags, {}).data) << to_string(cpp_sweep);
  }
}

TEST(SequenceCApi, LstmAndGruMatchTheJit) {
  testing::TempDir dir;
  std::vector<std::vector<int32_t>> sequences{{1, 2, 3}, {4}, {5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, {9, 9}};
  std::vector<int64_t> token_begin{0};
  std::vector<int32_t> tokens;
  for (const auto &s : sequences) {
    tokens.insert(tokens.end(), s.begin(), s.end());
    token_begin.push_back(int64_t(tokens.size()));
  }
  for (const char *name : {"lstm", "gru"}) {
    ModelFiles f = model_files(dir, name, "H=8,D=4,V=10");
    ModelPtr model = compile_c(f.model_file, f.weights_file.c_str());
    ASSERT_TRUE(model);
    grove_model_info info;
    ASSERT_EQ(grove_model_get_info(model.get(), &info), GROVE_OK);
    EXPECT_EQ(info.input, GROVE_INPUT_DAGS) << name;
    EXPECT_STREQ(info.structure, "sequence");
    grove_sequences batch{int64_t(sequences.size()), token_begin.data(), tokens.data()};
    std::vector<float> out(sequences.size() * 8);
    int64_t rows = 0;
    grove_run_options options{3};
    ASSERT_EQ(
        grove_model_run_sequences(model.get(), &batch, &options, out.data(), int64_t(out.size()), &rows),
        GROVE_OK)
        << grove_last_error();
    EXPECT_EQ(rows, int64_t(sequences.size()));
    RunOptions cpp_options;
    cpp_options.batch = 3;  // the same batches: across batch sizes results agree only to rounding
    EXPECT_EQ(out, compile_cpp(f).run_sequences(sequences, cpp_options).data) << name;
  }
}

}  // namespace
}  // namespace grove::capi_test
