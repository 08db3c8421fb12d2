#pragma once
// The example programs of models/relay with their fixtures (models/relay/fixtures/make_fixtures.py):
// loading, typing, and building @main's arguments — tensors by parameter name, the LSTM's sequence
// as a List, the TreeLSTM's trees as a List of Tree values (relay/TreeValues.h). Shared by the
// interpreter's and the VM's tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "datasets/PTBReader.h"
#include "frontend/relay/NDArrayIO.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/TreeValues.h"
#include "frontend/relay/TypeInfer.h"
#include "frontend/relay/Value.h"

namespace grove::relay::testing {

inline const std::string kModels = std::string(GROVE_SOURCE_DIR) + "/models/relay/";

struct LoadedModel {
  Module module;
  std::map<std::string, NDArray> fixture;
};

// models/relay/NAME.relay, type-checked, with fixtures/NAME.safetensors.
inline LoadedModel load_model(const std::string &name) {
  LoadedModel l{parse_relay_file(kModels + name + ".relay"),
                read_safetensors_arrays(kModels + "fixtures/" + name + ".safetensors")};
  infer_types(l.module);
  return l;
}

inline Value list_value(const Module &m, const std::vector<Value> &items) {
  Value list = adt_value(*m.find_constructor("Nil"), {});
  for (auto it = items.rbegin(); it != items.rend(); ++it)
    list = adt_value(*m.find_constructor("Cons"), {*it, list});
  return list;
}

// The arguments of @main by parameter name: from `special` when given there, else the fixture's tensor.
inline std::vector<Value> main_args(const LoadedModel &l, const std::map<std::string, Value> &special = {}) {
  std::vector<Value> args;
  for (const Expr &p : l.module.find_function("main")->as<Function>()->params) {
    const std::string &name = p.as<Var>()->name_hint;
    if (auto it = special.find(name); it != special.end()) {
      args.push_back(it->second);
      continue;
    }
    auto it = l.fixture.find(name);
    EXPECT_NE(it, l.fixture.end()) << "the fixture has no " << name;
    args.push_back(tensor_value(it->second));
  }
  return args;
}

// The LSTM's input: the fixture's xs [T, 1, D] as a List of T tensors [1, D].
inline Value lstm_sequence(const LoadedModel &l) {
  const NDArray &xs = l.fixture.at("xs");
  std::vector<Value> steps;
  for (int64_t t = 0; t < xs.shape()[0]; ++t) {
    NDArray x(DType::Float32, {1, xs.shape()[2]});
    std::copy_n(xs.data<float>() + t * x.size(), x.size(), x.data<float>());
    steps.push_back(tensor_value(x));
  }
  return list_value(l.module, steps);
}

// The TreeLSTM's input: fixtures/treelstm_trees.txt as a List[Tree[int32]] (relay/TreeValues.h).
inline Value treelstm_trees(const LoadedModel &l, size_t *count = nullptr) {
  const std::string path = kModels + "fixtures/treelstm_trees.txt";
  std::vector<Tree> trees = read_ptb_trees(path, nullptr);
  if (count) *count = trees.size();
  const Expr &trees_param = l.module.find_function("main")->as<Function>()->params[0];
  return trees_to_value(l.module, trees_param.type(), trees, path);
}

}  // namespace grove::relay::testing
