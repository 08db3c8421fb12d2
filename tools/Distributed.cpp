#include "tools/Distributed.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "backends/runtime/Clock.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "tools/Messages.h"
#include "tools/Report.h"
#include "tools/Shares.h"

#ifdef GROVE_HAVE_MPI
#include <mpi.h>
#endif

namespace grove::tool {

namespace msg = tool_messages;

std::string mpi_launcher_variable() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(name)) return name;
  return {};
}

#ifndef GROVE_HAVE_MPI

bool built_with_mpi() { return false; }

int run_distributed(const RunCommand &, const RunInput &) {
  user_error(msg::kMpiNotBuilt, mpi_launcher_variable());
}

#else

bool built_with_mpi() { return true; }

namespace {

constexpr int kStopTag = 17;

void check(int code, const char *what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  user_error(msg::kMpiFailed, what, std::string(text, size_t(length)));
}

// The MPI job, joined for this object's lifetime. Only the main thread calls MPI (the reader and the
// compiled code's threads never do), so MPI_THREAD_FUNNELED is enough.
class World {
 public:
  World() {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &ranks_here);
    MPI_Comm_free(&local);
    stopped_by.assign(size_t(size), false);
  }
  ~World() { MPI_Finalize(); }
  World(const World &) = delete;
  World &operator=(const World &) = delete;

  // `ok` and `text` as `root` has them, on every rank.
  std::pair<bool, std::string> broadcast(bool ok, std::string text, int root) const {
    int64_t head[2] = {ok, int64_t(text.size())};
    MPI_Bcast(head, 2, MPI_INT64_T, root, MPI_COMM_WORLD);
    text.resize(size_t(head[1]));
    MPI_Bcast(text.data(), int(head[1]), MPI_CHAR, root, MPI_COMM_WORLD);
    return {head[0] != 0, text};
  }

  // Tells every other rank that this one failed.
  void send_stop() const {
    int one = 1;
    for (int r = 0; r < size; ++r)
      if (r != rank) MPI_Send(&one, 1, MPI_INT, r, kStopTag, MPI_COMM_WORLD);
  }

  // Whether another rank has failed; takes its notices.
  bool poll_stop() {
    bool stop = false;
    for (int flag = 1; flag;) {
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kStopTag, MPI_COMM_WORLD, &flag, &status);
      if (!flag) break;
      int one = 0;
      MPI_Recv(&one, 1, MPI_INT, status.MPI_SOURCE, kStopTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      stopped_by[size_t(status.MPI_SOURCE)] = true;
      stop = true;
    }
    return stop;
  }

  // Every rank's `failed`; takes the failed ranks' notices not yet taken, so that none is left
  // pending at MPI_Finalize.
  std::vector<int> agree(bool failed) {
    std::vector<int> all(static_cast<size_t>(size));
    int mine = failed;
    MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
      if (r == rank || !all[size_t(r)] || stopped_by[size_t(r)]) continue;
      int one = 0;
      MPI_Recv(&one, 1, MPI_INT, r, kStopTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return all;
  }

  int rank = 0, size = 1, ranks_here = 1;
  std::vector<bool> stopped_by;
};

// What a rank reports to rank 0 for --stats.
constexpr int kReportFields = 9;
std::array<double, kReportFields> report(const StreamRunResult &r) {
  return {double(r.inputs),       double(r.rows),        double(r.stats.nodes),
          double(r.stats.levels), double(r.stats.calls), double(r.chunks),
          r.stats.inspector_ms,   r.stats.compute_ms,    r.read_wait_ms};
}

// Writes `bytes` at `offset` of `file`, in pieces MPI's int counts can hold.
void write_at(MPI_File file, uint64_t offset, const char *bytes, uint64_t size) {
  constexpr uint64_t kPiece = uint64_t(1) << 30;
  for (uint64_t done = 0; done < size;) {
    int n = int(std::min(kPiece, size - done));
    check(MPI_File_write_at(file, MPI_Offset(offset + done), bytes + done, n, MPI_BYTE, MPI_STATUS_IGNORE),
          "MPI_File_write_at");
    done += uint64_t(n);
  }
}

// The steps of Distributed.h on one rank: returns the exit status; rank 0 throws its UserError.
int run_rank(World &world, const RunCommand &c, const RunInput &input) {
  auto t0 = std::chrono::steady_clock::now();
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = std::max(1, cores / world.ranks_here);
  std::future<std::unique_ptr<RunModel> > pending =
      std::async(std::launch::async, [&c, threads] { return RunModel::prepare(c, threads); });
  std::unique_ptr<RunModel> model;
  auto executor = [&]() -> const ModelRunner & {
    if (!model) model = pending.get();
    return model->executor();
  };
  // A failure before the shares run ends the run on every rank with rank 0's message.
  auto give_up = [&](const std::string &message) -> int {
    if (pending.valid()) pending.wait();
    if (world.rank == 0) throw UserError(message);
    return 1;
  };

  // 1. Rank 0 reads the input and cuts it into shares; every rank gets the plan.
  const StreamRunOptions options = stream_options(c);
  const int64_t unit = c.batch > 0 ? c.batch : chunk_inputs(c.chunk, 0);
  std::string text;
  bool ok = true;
  double plan_ms = 0;
  if (world.rank == 0) {
    try {
      auto t_plan = std::chrono::steady_clock::now();
      InputStream stream = input.open();
      text = to_bytes(plan_shares(stream, world.size, unit, options.outputs));
      plan_ms = ms_since(t_plan);
    } catch (const UserError &e) {
      ok = false;
      text = e.what();
    }
  }
  std::tie(ok, text) = world.broadcast(ok, text, 0);
  if (!ok) return give_up(text);
  const SharePlan plan = share_plan_from_bytes(text);
  const Share &share = plan.shares[size_t(world.rank)];

  // 2. Rank 0 creates the output's temporary file (it needs the model's row shape).
  std::optional<NpyWriter> writer;
  std::vector<int64_t> out_shape;
  if (world.rank == 0) {
    try {
      const ModelAbi &abi = executor().abi();
      out_shape = abi.output_shape;
      writer.emplace(c.out, out_shape);
      out_shape.insert(out_shape.begin(), plan.rows);
      text = nlohmann::json{{"data_offset", writer->data_offset()},
                            {"row_bytes", writer->row_bytes()},
                            {"temporary", writer->temporary()}}
                 .dump();
      ok = true;
    } catch (const UserError &e) {
      ok = false;
      text = e.what();
    }
  }
  std::tie(ok, text) = world.broadcast(ok, text, 0);
  if (!ok) return give_up(text);
  const nlohmann::json output = nlohmann::json::parse(text);
  const uint64_t data_offset = output.at("data_offset"), row_bytes = output.at("row_bytes");
  const std::string temporary = output.at("temporary");

  // 3. Each rank runs its share, writing its rows in place; a failure stops the others.
  std::string failure;
  StreamRunResult result;
  MPI_File file = MPI_FILE_NULL;
  try {
    check(MPI_File_open(MPI_COMM_SELF, temporary.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &file),
          "MPI_File_open of the output");
    if (share.inputs() > 0) {
      InputStream stream = input.open();
      stream.seek(share.start);
      StreamRunOptions mine = options;
      mine.end_index = share.end_index;
      mine.end_offset = share.end_offset;
      uint64_t row = uint64_t(share.first_row);
      auto sink = [&](const Tensor &rows) {
        const uint64_t count = rows.shape.empty() ? 0 : uint64_t(rows.shape[0]);
        write_at(file, data_offset + row * row_bytes, reinterpret_cast<const char *>(rows.data.data()),
                 count * row_bytes);
        row += count;
      };
      Progress progress(fmt::format("run (rank 0 of {})", world.size), plural_noun(input.format),
                        world.rank == 0 && progress_wanted(c.quiet));
      result = run_stream(executor, stream, mine, sink, &progress, [&] { return world.poll_stop(); });
    } else {
      executor();  // compile errors are every rank's
    }
  } catch (const UserError &e) {
    failure = e.what();
    world.send_stop();
  }
  if (file != MPI_FILE_NULL) MPI_File_close(&file);

  // 4. Agree on the outcome: the first failing rank's message, or rank 0 renames the file.
  std::vector<int> failed = world.agree(!failure.empty());
  auto first = std::find(failed.begin(), failed.end(), 1);
  if (first != failed.end()) {
    int who = int(first - failed.begin());
    std::tie(ok, text) = world.broadcast(false, failure, who);
    if (world.rank != 0) return 1;
    writer.reset();  // removes the temporary
    throw UserError(fmt::format(msg::kMpiRankFailed, text, who, world.size));
  }
  std::array<double, kReportFields> mine = report(result);
  std::vector<double> all(size_t(kReportFields * world.size));
  MPI_Gather(mine.data(), kReportFields, MPI_DOUBLE, all.data(), kReportFields, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  if (world.rank != 0) return 0;
  writer->commit(plan.rows);
  double run_ms = ms_since(t0);
  print_notes(model->notes());

  if (c.stats) {
    StreamRunResult total;
    for (int r = 0; r < world.size; ++r) {
      const double *f = &all[size_t(kReportFields * r)];
      total.inputs += int64_t(f[0]);
      total.rows += int64_t(f[1]);
      total.stats.nodes += int64_t(f[2]);
      total.stats.levels += int64_t(f[3]);
      total.stats.calls += int64_t(f[4]);
      total.chunks += int64_t(f[5]);
      total.stats.inspector_ms = std::max(total.stats.inspector_ms, f[6]);
      total.stats.compute_ms = std::max(total.stats.compute_ms, f[7]);
      total.read_wait_ms = std::max(total.read_wait_ms, f[8]);
    }
    std::cout << model->describe();
    std::cout << fmt::format("ranks     {} ({} threads each); rank 0 read the input to cut it in {:.1f} ms\n",
                             world.size, threads, plan_ms);
    for (int r = 0; r < world.size; ++r) {
      const double *f = &all[size_t(kReportFields * r)];
      std::cout << fmt::format("  rank {}  {} {} ({} nodes), compute {:.2f} ms\n", r, int64_t(f[0]),
                               plural_noun(input.format), int64_t(f[2]), f[7]);
    }
    print_run_stats(std::cout, c, input, total, out_shape, run_ms);
  }
  return 0;
}

}  // namespace

// Every rank ends at one barrier, after rank 0 has printed the error (if any): a rank that exits
// with an error status earlier would make mpirun kill rank 0 before it says why.
int run_distributed(const RunCommand &c, const RunInput &input) {
  World world;
  int status = 1;
  try {
    status = run_rank(world, c, input);
  } catch (const UserError &e) {
    print_user_error(e.what());  // only rank 0 throws
    std::cerr.flush();
  } catch (const std::exception &e) {
    // Anything else (a grove bug, memory exhausted) cannot be agreed on: end the whole job now.
    std::cerr << fmt::format("grove: rank {}: {}\n", world.rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return status;
}

#endif  // GROVE_HAVE_MPI

}  // namespace grove::tool
