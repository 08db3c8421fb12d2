#include "abi/ModelAbi.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "abi/Messages.h"
#include "support/Error.h"
#include "support/Tensor.h"

namespace grove {

namespace msg = abi_messages;
using nlohmann::json;

uint16_t round_to_bf16(float x) {
  uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return uint16_t((bits >> 16) | 0x0040u);  // a NaN, kept quiet and a NaN
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

float bf16_to_float(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float x = 0;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

const char *to_string(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::Fma:
      return "fma";
    case GemmKernel::Vdpbf16ps:
      return "vdpbf16ps";
    case GemmKernel::AmxBf16:
      return "amx";
  }
  return "?";
}

std::optional<GemmKernel> gemm_kernel_named(const std::string &name) {
  for (GemmKernel k : {GemmKernel::Fma, GemmKernel::Vdpbf16ps, GemmKernel::AmxBf16})
    if (name == to_string(k)) return k;
  return std::nullopt;
}

namespace {

// pack() of w from `at(row, col)`, the value of the weight's row (from w.row_offset) and column. A
// float32 panel is filled row block by row block, each of its columns a run of `panel` floats.
template <typename At>
void pack_from(const PackedWeight &w, void *out, At at) {
  if (w.element == PackedElement::BF16) {
    // bf16 values are built in a vector of their own and copied in: `out` holds 32-bit words.
    std::vector<uint16_t> b16(w.size(), 0);
    for (int64_t p = 0; p < w.panels(); p++)
      for (int64_t k = 0; k < w.cols; k++)
        for (int64_t r = 0; r < w.panel && p * w.panel + r < w.rows; r++)
          b16[w.offset(p, k, r)] = round_to_bf16(at(p * w.panel + r, k));
    std::memcpy(out, b16.data(), b16.size() * sizeof(uint16_t));
    return;
  }
  float *f32 = static_cast<float *>(out);
  for (int64_t p = 0; p < w.panels(); p++) {
    const int64_t rows = std::min(w.panel, w.rows - p * w.panel);
    float *panel = f32 + w.offset(p, int64_t{0}, int64_t{0});
    for (int64_t k = 0; k < w.cols; k++) {
      float *column = panel + k * w.panel;
      for (int64_t r = 0; r < rows; r++) column[r] = at(p * w.panel + r, k);
      std::fill(column + rows, column + w.panel, 0.0f);
    }
  }
}

}  // namespace

void pack(const PackedWeight &w, const float *param, void *out) {
  const float *rows = param + w.row_offset * w.cols;
  pack_from(w, out, [rows, cols = w.cols](int64_t r, int64_t k) { return rows[r * cols + k]; });
}

void pack_transposed(const PackedWeight &w, const float *param, int64_t param_cols, int64_t row0, void *out) {
  // The weight's row r, column k: param[row0 + k, w.row_offset + r], read along param's rows.
  const float *block = param + row0 * param_cols + w.row_offset;
  pack_from(w, out, [block, param_cols](int64_t r, int64_t k) { return block[k * param_cols + r]; });
}

int64_t ModelAbi::output_elements() const { return Tensor::num_elements(output_shape); }

bool ModelAbi::bf16_panels() const {
  return std::any_of(packed.begin(), packed.end(),
                     [](const PackedWeight &w) { return w.element == PackedElement::BF16; });
}

namespace {

const char *kArgKinds[] = {"param",    "packed", "state",      "level_begin", "child_begin",
                           "children", "token",  "team_begin", "num_levels",  "saved",
                           "gradient", "parent", "child_slot", "parent_begin"};

const char *to_string(ModelAbi::ArgKind kind) { return kArgKinds[int(kind)]; }

ModelAbi::ArgKind arg_kind(const std::string &s, const std::string &where) {
  for (size_t i = 0; i < std::size(kArgKinds); i++)
    if (s == kArgKinds[i]) return ModelAbi::ArgKind(i);
  user_error(msg::kAbiBadField, where, "args[].kind", s);
}

}  // namespace

uint64_t fnv1a64(const void *data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string to_json(const ModelAbi &abi) {
  json j;
  j["grove_abi"] = abi.version;
  j["model"] = abi.model;
  j["structure"] = abi.structure;
  j["function"] = abi.function;
  j["target"] = abi.target;
  j["schedule"] = abi.schedule;
  j["sizes"] = abi.sizes;
  j["min_children"] = abi.min_children;
  j["max_children"] = abi.max_children;
  j["predecessor_slots"] = abi.predecessor_slots;
  j["vocab_size"] = abi.vocab_size;
  j["params"] = json::array();
  for (const ModelAbi::Param &p : abi.params) j["params"].push_back({{"name", p.name}, {"shape", p.shape}});
  j["packed"] = json::array();
  for (const PackedWeight &w : abi.packed)
    j["packed"].push_back({{"buffer", w.buffer},
                           {"param", w.param},
                           {"row_offset", w.row_offset},
                           {"rows", w.rows},
                           {"cols", w.cols},
                           {"panel", w.panel},
                           {"element", w.element == PackedElement::BF16 ? "bf16" : "f32"},
                           {"bf16_col_align", w.bf16_col_align}});
  j["states"] = json::array();
  for (const ModelAbi::State &s : abi.states)
    j["states"].push_back({{"name", s.name}, {"row_elements", s.row_elements}});
  if (!abi.saved.empty()) {
    j["saved"] = json::array();
    for (const ModelAbi::State &s : abi.saved)
      j["saved"].push_back({{"name", s.name}, {"row_elements", s.row_elements}});
  }
  if (!abi.gradients.empty()) {
    j["gradients"] = json::array();
    for (const ModelAbi::Param &g : abi.gradients)
      j["gradients"].push_back({{"name", g.name}, {"shape", g.shape}});
  }
  j["args"] = json::array();
  for (const ModelAbi::Arg &a : abi.args)
    j["args"].push_back({{"kind", to_string(a.kind)}, {"name", a.name}, {"index", a.index}});
  j["output"] = abi.output;
  j["output_shape"] = abi.output_shape;
  j["hoist"] = abi.hoist;
  j["unroll"] = abi.unroll;
  j["unroll_team"] = abi.unroll_team;
  j["threads"] = abi.threads;
  j["gemm_kernel"] = to_string(abi.gemm_kernel);
  if (abi.cuda) {
    const CudaLaunch &c = *abi.cuda;
    json images = json::array();
    for (const CudaLaunch::Image &i : c.images)
      images.push_back({{"arch", i.arch}, {"size", i.size}, {"checksum", i.checksum}});
    j["cuda"] = {{"form", c.persistent ? "persistent" : "per_level"},
                 {"blocks", c.blocks},
                 {"threads", c.threads},
                 {"shared_bytes", c.shared_bytes},
                 {"scratch_floats_per_node", c.scratch_floats_per_node},
                 {"specialized", c.specialized},
                 {"graph", c.graph},
                 {"kernels", c.kernels},
                 {"hoisted", c.hoisted},
                 {"leaf", c.leaf},
                 {"internal", c.internal},
                 {"images", images}};
  }
  return j.dump(1);
}

// Steps:
//   1. Parse; check the version first (a newer library may have any other fields).
//   2. Read every field with its type checked (nlohmann's type_error becomes a UserError).
//   3. Check the cross references the executor relies on: indices in range, packed weights inside
//      their params, one NumLevels argument, sizes that are not negative.
ModelAbi model_abi_from_json(const std::string &text, const std::string &where) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) user_error(msg::kAbiNotJson, where);
  if (!j.contains("grove_abi") || !j["grove_abi"].is_number_integer() ||
      j["grove_abi"].get<int>() != kModelAbiVersion)
    user_error(msg::kAbiVersion, where, j.contains("grove_abi") ? j["grove_abi"].dump() : "none",
               kModelAbiVersion);
  ModelAbi abi;
  try {
    abi.model = j.at("model").get<std::string>();
    abi.structure = j.at("structure").get<std::string>();
    abi.function = j.at("function").get<std::string>();
    abi.target = j.at("target").get<std::string>();
    abi.schedule = j.at("schedule").get<std::string>();
    abi.sizes = j.at("sizes").get<std::map<std::string, int64_t>>();
    abi.min_children = j.at("min_children").get<int32_t>();
    abi.max_children = j.at("max_children").get<int32_t>();
    abi.predecessor_slots = j.at("predecessor_slots").get<int32_t>();
    abi.vocab_size = j.at("vocab_size").get<int64_t>();
    for (const json &p : j.at("params"))
      abi.params.push_back({p.at("name").get<std::string>(), p.at("shape").get<std::vector<int64_t>>()});
    for (const json &w : j.at("packed")) {
      abi.packed.push_back({w.at("buffer").get<std::string>(), w.at("param").get<std::string>(),
                            w.at("row_offset").get<int64_t>(), w.at("rows").get<int64_t>(),
                            w.at("cols").get<int64_t>(), w.at("panel").get<int64_t>()});
      // Absent in libraries written before bf16 weights existed: float32.
      std::string element = w.value("element", std::string("f32"));
      if (element != "f32" && element != "bf16")
        user_error(msg::kAbiBadField, where, "packed[].element", abi.packed.back().buffer);
      abi.packed.back().element = element == "bf16" ? PackedElement::BF16 : PackedElement::F32;
      // Absent in libraries written before the AMX kernels: bf16 columns padded to a pair.
      const int64_t align = w.value("bf16_col_align", int64_t{2});
      if (align < 2 || align > kMaxBf16ColumnAlign || align % 2 != 0)
        user_error(msg::kAbiBadField, where, "packed[].bf16_col_align", abi.packed.back().buffer);
      abi.packed.back().bf16_col_align = align;
    }
    for (const json &s : j.at("states"))
      abi.states.push_back({s.at("name").get<std::string>(), s.at("row_elements").get<int64_t>()});
    if (j.contains("saved"))
      for (const json &s : j.at("saved"))
        abi.saved.push_back({s.at("name").get<std::string>(), s.at("row_elements").get<int64_t>()});
    if (j.contains("gradients"))
      for (const json &g : j.at("gradients"))
        abi.gradients.push_back({g.at("name").get<std::string>(), g.at("shape").get<std::vector<int64_t>>()});
    for (const json &a : j.at("args"))
      abi.args.push_back({arg_kind(a.at("kind").get<std::string>(), where), a.at("name").get<std::string>(),
                          a.at("index").get<int>()});
    abi.output = j.at("output").get<int>();
    abi.output_shape = j.at("output_shape").get<std::vector<int64_t>>();
    abi.hoist = j.at("hoist").get<bool>();
    abi.unroll = j.at("unroll").get<int>();
    abi.unroll_team = j.at("unroll_team").get<int>();
    abi.threads = j.at("threads").get<int>();
    const std::string kernel = j.value("gemm_kernel", std::string(abi.bf16_panels() ? "vdpbf16ps" : "fma"));
    std::optional<GemmKernel> gemm = gemm_kernel_named(kernel);
    if (!gemm || (*gemm != GemmKernel::Fma) != abi.bf16_panels())
      user_error(msg::kAbiBadField, where, "gemm_kernel", kernel);
    abi.gemm_kernel = *gemm;
    if (j.contains("cuda")) {
      const json &c = j.at("cuda");
      CudaLaunch launch;
      const std::string form = c.at("form").get<std::string>();
      if (form != "persistent" && form != "per_level")
        user_error(msg::kAbiBadField, where, "cuda.form", form);
      launch.persistent = form == "persistent";
      launch.blocks = c.at("blocks").get<int>();
      launch.threads = c.at("threads").get<int>();
      launch.shared_bytes = c.at("shared_bytes").get<int64_t>();
      launch.scratch_floats_per_node = c.at("scratch_floats_per_node").get<int64_t>();
      launch.specialized = c.at("specialized").get<bool>();
      launch.graph = c.at("graph").get<bool>();
      launch.kernels = c.at("kernels").get<std::vector<std::string>>();
      launch.hoisted = c.at("hoisted").get<std::vector<std::string>>();
      launch.leaf = c.at("leaf").get<std::vector<std::string>>();
      launch.internal = c.at("internal").get<std::vector<std::string>>();
      for (const json &i : c.at("images"))
        launch.images.push_back({i.at("arch").get<std::string>(), i.at("size").get<uint64_t>(),
                                 i.at("checksum").get<uint64_t>()});
      if (launch.blocks < 1 || launch.threads < 1 || launch.shared_bytes < 0 ||
          launch.scratch_floats_per_node < 0 || launch.kernels.empty())
        user_error(msg::kAbiBadField, where, "cuda", "grid, shared bytes, scratch or kernels");
      auto known = [&](const std::vector<std::string> &names) {
        for (const std::string &k : names)
          if (std::find(launch.kernels.begin(), launch.kernels.end(), k) == launch.kernels.end())
            user_error(msg::kAbiBadField, where, "cuda.kernels", k);
      };
      known(launch.hoisted);
      known(launch.leaf);
      known(launch.internal);
      if (launch.persistent) known({"grove_persistent"});
      abi.cuda = std::move(launch);
    }
  } catch (const json::exception &e) {
    user_error(msg::kAbiBadJson, where, e.what());
  }

  auto param_of = [&](const std::string &name) -> const ModelAbi::Param * {
    for (const ModelAbi::Param &p : abi.params)
      if (p.name == name) return &p;
    return nullptr;
  };
  for (const ModelAbi::Param &p : abi.params)
    for (int64_t d : p.shape)
      if (d < 0) user_error(msg::kAbiBadField, where, "params[].shape", p.name);
  for (const PackedWeight &w : abi.packed) {
    const ModelAbi::Param *p = param_of(w.param);
    int64_t param_rows = p && p->shape.size() == 2 ? p->shape[0] : -1;
    if (!p || p->shape.size() != 2 || p->shape[1] != w.cols || w.panel <= 0 || w.rows < 0 ||
        w.row_offset < 0 || w.row_offset + w.rows > param_rows)
      user_error(msg::kAbiBadField, where, "packed[]", w.buffer);
  }
  for (const ModelAbi::State &s : abi.states)
    if (s.row_elements <= 0) user_error(msg::kAbiBadField, where, "states[].row_elements", s.name);
  int num_levels = 0;
  for (const ModelAbi::Arg &a : abi.args) {
    using K = ModelAbi::ArgKind;
    size_t limit = a.kind == K::Param      ? abi.params.size()
                   : a.kind == K::Packed   ? abi.packed.size()
                   : a.kind == K::Saved    ? abi.saved.size()
                   : a.kind == K::Gradient ? abi.gradients.size()
                                           : abi.states.size();
    bool indexed = a.kind == K::Param || a.kind == K::Packed || a.kind == K::State || a.kind == K::Saved ||
                   a.kind == K::Gradient;
    if (indexed && (a.index < 0 || size_t(a.index) >= limit))
      user_error(msg::kAbiBadField, where, "args[].index", a.name);
    num_levels += a.kind == ModelAbi::ArgKind::NumLevels;
  }
  if (num_levels != 1) user_error(msg::kAbiBadField, where, "args", "num_levels");
  if (abi.output < 0 || size_t(abi.output) >= abi.states.size())
    user_error(msg::kAbiBadField, where, "output", std::to_string(abi.output));
  int64_t out = abi.output_elements();
  if (out != abi.states[abi.output].row_elements) user_error(msg::kAbiBadField, where, "output_shape", "");
  if (abi.min_children < 0 || abi.max_children < abi.min_children || abi.predecessor_slots < 0 ||
      abi.threads < 0 || abi.unroll_team < 0 || abi.unroll < 1)
    user_error(msg::kAbiBadField, where, "structure", abi.structure);
  return abi;
}

}  // namespace grove
