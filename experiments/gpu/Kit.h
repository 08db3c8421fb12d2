#pragma once
// The GPU check kit: what `grove_gpu_prepare` (Prepare.cpp) writes on a machine with grove, and
// what `run_kit` (RunKit.cpp) reads on a GPU machine that has only the CUDA toolkit (no Halide, no
// LLVM, no grove build). Plain C++17, no dependency: both sides and the emulated self-test
// (tests/backends/cuda/test_cuda_kit.cpp) include it.
//
// kit.txt holds cases, one block each:
//   case NAME                 a line per field, in this order
//   source FILE.cu            the emitted kernels (grove dump --stage cuda)
//   grid BLOCKS THREADS SHARED_BYTES
//   form persistent|per_level
//   repeat N                  timed calls after one checked call
//   arg KIND ...              the kernel's arguments in order:
//       f32file FILE COUNT    floats from FILE (weights, packed panels)
//       f32random SEED COUNT  uniform in [-0.05, 0.05) (timing cases: weights not carried)
//       f32zero COUNT         zeros (states, the scratch)
//       i32file FILE COUNT    the inspector's arrays
//       u32zero COUNT         the barrier's counter, zeroed before every call
//       int VALUE             num_levels
//       level                 the per-level kernels' last argument, set per launch
//   launch KERNEL LEVEL       one call's launches, in order
//   output ARG WIDTH ROOTS.bin [EXPECTED.bin]   the output state's argument, its rows' width, the
//                             rows to read (int32), and the reference's rows (float32) to compare
//   end

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace grove_kit {

struct Arg {
  std::string kind, file;
  int64_t count = 0, seed = 0;
  int value = 0;
};

struct Launch {
  std::string kernel;
  int level = -1;
};

struct Case {
  std::string name, source, form = "persistent";
  int blocks = 1, threads = 1, repeat = 0;
  int64_t shared_bytes = 0;
  std::vector<Arg> args;
  std::vector<Launch> launches;
  int output_arg = -1;
  int64_t width = 0;
  std::string roots, expected;  // expected empty: timing only
};

inline std::vector<Case> read_kit(const std::string &dir) {
  std::ifstream in(dir + "/kit.txt");
  if (!in) throw std::runtime_error("cannot read " + dir + "/kit.txt");
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    s >> key;
    if (key.empty() || key[0] == '#') continue;
    if (key == "case") {
      cases.emplace_back();
      s >> cases.back().name;
      continue;
    }
    if (cases.empty()) throw std::runtime_error("kit.txt: '" + key + "' before any case");
    Case &c = cases.back();
    if (key == "source") {
      s >> c.source;
    } else if (key == "grid") {
      s >> c.blocks >> c.threads >> c.shared_bytes;
    } else if (key == "form") {
      s >> c.form;
    } else if (key == "repeat") {
      s >> c.repeat;
    } else if (key == "arg") {
      Arg a;
      s >> a.kind;
      if (a.kind == "f32file" || a.kind == "i32file")
        s >> a.file >> a.count;
      else if (a.kind == "f32random")
        s >> a.seed >> a.count;
      else if (a.kind == "f32zero" || a.kind == "u32zero")
        s >> a.count;
      else if (a.kind == "int")
        s >> a.value;
      else if (a.kind != "level")
        throw std::runtime_error("kit.txt: unknown argument kind " + a.kind);
      c.args.push_back(a);
    } else if (key == "launch") {
      Launch l;
      s >> l.kernel >> l.level;
      c.launches.push_back(l);
    } else if (key == "output") {
      s >> c.output_arg >> c.width >> c.roots >> c.expected;
    } else if (key != "end") {
      throw std::runtime_error("kit.txt: unknown line " + line);
    }
    if (!s && key != "end" && !(key == "output" && c.expected.empty()))
      throw std::runtime_error("kit.txt: bad line " + line);
  }
  return cases;
}

template <typename T>
std::vector<T> read_file(const std::string &path, int64_t count) {
  std::vector<T> v(size_t(count > 0 ? count : 0));
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char *>(v.data()), std::streamsize(v.size() * sizeof(T)));
  if (!in && count > 0)
    throw std::runtime_error("cannot read " + std::to_string(count) + " values from " + path);
  return v;
}

template <typename T>
void write_file(const std::string &path, const std::vector<T> &v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(v.data()), std::streamsize(v.size() * sizeof(T)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// An argument's initial host contents (4-byte words), as the case describes them.
inline std::vector<uint32_t> initial_words(const std::string &dir, const Arg &a) {
  std::vector<uint32_t> w(size_t(a.count), 0u);
  if (a.kind == "f32file" || a.kind == "i32file") {
    w = read_file<uint32_t>(dir + "/" + a.file, a.count);
  } else if (a.kind == "f32random") {
    std::mt19937 rng(uint32_t(a.seed));
    std::uniform_real_distribution<float> u(-0.05f, 0.05f);
    for (uint32_t &x : w) {
      float f = u(rng);
      std::memcpy(&x, &f, 4);
    }
  }
  return w;
}

// Compares the roots' rows of `state` (the output argument's contents) with the expected rows:
// |got - want| <= 1e-4 |want| + 1e-5 (float32 against the double reference). Returns the number of
// mismatches and prints the first few.
inline int compare_output(const std::string &dir, const Case &c, const std::vector<float> &state) {
  std::vector<int32_t> roots;
  {
    std::ifstream in(dir + "/" + c.roots, std::ios::binary | std::ios::ate);
    roots = read_file<int32_t>(dir + "/" + c.roots, int64_t(in.tellg()) / 4);
  }
  std::vector<float> want = read_file<float>(dir + "/" + c.expected, int64_t(roots.size()) * c.width);
  int bad = 0;
  for (size_t r = 0; r < roots.size(); ++r)
    for (int64_t j = 0; j < c.width; ++j) {
      const double g = state[size_t(roots[r] * c.width + j)], w = want[r * c.width + size_t(j)];
      if (std::abs(g - w) <= 1e-4 * std::abs(w) + 1e-5) continue;
      if (bad++ < 5)
        std::printf("  %s: row %zu element %lld: %.9g, reference %.9g\n", c.name.c_str(), r, (long long)j, g,
                    w);
    }
  return bad;
}

}  // namespace grove_kit
