#include "python/Inputs.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <limits>
#include <string_view>
#include <utility>

#include "backends/runtime/RandomWeights.h"
#include "datasets/PTBReader.h"
#include "python/Messages.h"
#include "support/Error.h"

namespace grove::python {

namespace py = pybind11;
namespace msg = python_messages;

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

template <typename... Args>
[[noreturn]] void type_error(fmt::format_string<Args...> format, Args &&...args) {
  throw py::type_error(fmt::format(format, std::forward<Args>(args)...));
}

bool is_path(py::handle value) { return py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__"); }

std::string path_string(py::handle value) {
  return py::str(py::module_::import("os").attr("fspath")(value)).cast<std::string>();
}

// A Python int (not a bool) or a NumPy integer scalar: anything with __index__ but bool.
bool is_integer(py::handle value) {
  return PyIndex_Check(value.ptr()) && !PyBool_Check(value.ptr()) && !py::isinstance<py::array>(value);
}

int64_t integer_value(py::handle value) {
  // Values past int64 saturate: every range check below then rejects them.
  int overflow = 0;
  py::int_ index = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0)
    return overflow > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return v;
}

// An integer array of the given rank, as int64 (a list of ints, a NumPy array of any integer dtype; an
// empty list counts as integer). `what` names the argument in messages.
py::array_t<int64_t> int_array(py::handle value, const std::string &what, int rank) {
  py::array a = py::array::ensure(value);
  if (!a) {
    PyErr_Clear();
    type_error(msg::kArrayType, what, type_name(value));
  }
  char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u' && a.size() != 0)
    type_error(msg::kArrayDtype, what, py::str(a.dtype()).cast<std::string>());
  if (a.ndim() != rank) {
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    user_error(msg::kArrayRank, what, rank, shape_string(shape));
  }
  auto result = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!result) throw py::error_already_set();
  return result;
}

// A (parent, tokens) pair's arrays, or a DAG's: both elements lists or NumPy arrays.
bool is_array_pair(py::handle value) {
  if (!(py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value)) || py::len(value) != 2)
    return false;
  auto seq = py::reinterpret_borrow<py::sequence>(value);
  auto array_like = [](py::handle e) { return py::isinstance<py::list>(e) || py::isinstance<py::array>(e); };
  return array_like(seq[0]) && array_like(seq[1]);
}

// Builds one tree from parent ids in [begin, end) of `parent` (global ids) and its tokens: checks
// every parent is -1 or a node of the tree and that exactly one node is the root, then hands the
// local ids to grove::tree_from_parents (datasets/Tree.h). Cycles, arity and tokens are the
// inspector's to check (it knows the model).
Tree tree_from_parents(const int64_t *parent, const int64_t *token, int64_t begin, int64_t end,
                       const std::string &where) {
  const int64_t n = end - begin;
  if (n == 0) user_error(msg::kEmptyArrayTree, where);
  if (n > kInt32Max) user_error(msg::kTooLarge, where);
  std::vector<int32_t> local(n), tokens(n);
  int64_t root = -1;
  for (int64_t i = 0; i < n; ++i) {
    int64_t p = parent[begin + i];
    if (p == -1) {
      if (root >= 0) user_error(msg::kTwoRoots, where, begin + root, begin + i);
      root = i;
    } else if (p < begin || p >= end) {
      user_error(msg::kParentRange, where, begin + i, p, begin, end - 1);
    }
    local[i] = p == -1 ? -1 : static_cast<int32_t>(p - begin);
    int64_t t = token[begin + i];
    // Out-of-range tokens become -2, which the inspector rejects as negative, naming the node.
    tokens[i] = t < -1 || t > kInt32Max ? -2 : static_cast<int32_t>(t);
  }
  if (root < 0) user_error(msg::kNoRoot, where);
  return grove::tree_from_parents(local, std::move(tokens));
}

Tree tree_from_pair(py::handle pair, size_t index) {
  auto seq = py::reinterpret_borrow<py::sequence>(pair);
  const std::string where = fmt::format("tree {}", index);
  py::array_t<int64_t> parent = int_array(seq[0], where + " parent", 1);
  py::array_t<int64_t> tokens = int_array(seq[1], where + " tokens", 1);
  if (parent.size() != tokens.size()) user_error(msg::kArrayLengths, where, parent.size(), tokens.size());
  return tree_from_parents(parent.data(), tokens.data(), 0, parent.size(), where);
}

// A nested tuple, walked with an explicit stack (a tree may be far deeper than the C stack allows),
// numbering nodes in post-order as the PTB reader does.
// 1. Push the root. A frame holds a tuple and how many of its children were visited.
// 2. An int is a leaf: number it and push its id on `done`. A tuple's frame visits its children
//    one by one; when all are done, its children are the last k ids of `done`.
Tree tree_from_tuple(py::handle root, size_t index) {
  struct Frame {
    py::handle node;
    size_t next = 0;
  };
  Tree tree;
  tree.child_begin.push_back(0);
  std::vector<int32_t> done;
  std::vector<Frame> stack;
  auto add_node = [&](int32_t token) {
    if (tree.token.size() >= static_cast<size_t>(kInt32Max))
      user_error(msg::kTooLarge, fmt::format("tree {}", index));
    tree.token.push_back(token);
    tree.child_begin.push_back(static_cast<int32_t>(tree.children.size()));
    done.push_back(tree.size() - 1);
  };
  auto visit = [&](py::handle node) {
    if (is_integer(node)) {
      int64_t token = integer_value(node);
      if (token < 0 || token > kInt32Max) user_error(msg::kTupleToken, index, token);
      add_node(static_cast<int32_t>(token));
    } else if (py::isinstance<py::tuple>(node)) {
      if (py::len(node) == 0) user_error(msg::kTupleEmpty, index);
      stack.push_back({node});
    } else {
      type_error(msg::kTupleNodeType, index, type_name(node));
    }
  };
  visit(root);
  while (!stack.empty()) {
    Frame &frame = stack.back();
    PyObject *tuple = frame.node.ptr();
    const size_t k = static_cast<size_t>(PyTuple_GET_SIZE(tuple));
    if (frame.next < k) {
      visit(PyTuple_GET_ITEM(tuple, frame.next++));  // may grow `stack`: `frame` is not used after
      continue;
    }
    stack.pop_back();
    tree.children.insert(tree.children.end(), done.end() - k, done.end());
    done.resize(done.size() - k);
    add_node(-1);
  }
  tree.root = tree.size() - 1;
  return tree;
}

}  // namespace

std::string type_name(py::handle value) {
  py::handle type = reinterpret_cast<PyObject *>(Py_TYPE(value.ptr()));
  std::string module = py::str(type.attr("__module__")).cast<std::string>();
  std::string name = py::str(type.attr("__qualname__")).cast<std::string>();
  return module == "builtins" ? name : module + "." + name;
}

std::shared_ptr<const InputVocab> to_vocab(py::handle vocab) {
  if (vocab.is_none()) return nullptr;
  auto result = std::make_shared<InputVocab>();
  if (is_path(vocab)) {
    result->vocab = std::make_shared<Vocab>(Vocab::load(path_string(vocab)));
    return result;
  }
  if (!py::isinstance<py::dict>(vocab)) type_error(msg::kVocabType, type_name(vocab));
  // The dict's tokens, one per line, get Vocab's checks (no spaces or parentheses, no duplicates).
  std::string text;
  for (auto [token, id] : py::reinterpret_borrow<py::dict>(vocab)) {
    if (!py::isinstance<py::str>(token) || !is_integer(id))
      type_error(msg::kVocabEntryType, type_name(token), type_name(id));
    int64_t v = integer_value(id);
    std::string word = token.cast<std::string>();
    if (v < 0 || v > kInt32Max) user_error(msg::kVocabId, word, v);
    text += word;
    text += '\n';
    result->ids.push_back(static_cast<int32_t>(v));
  }
  result->vocab = std::make_shared<Vocab>(Vocab::parse(text, msg::kVocabDictName));
  return result;
}

Weights to_weights(py::handle weights) {
  if (!py::isinstance<py::dict>(weights)) type_error(msg::kWeightsType, type_name(weights));
  Weights result;
  for (auto [name, value] : py::reinterpret_borrow<py::dict>(weights)) {
    if (!py::isinstance<py::str>(name)) type_error(msg::kWeightNameType, type_name(name));
    std::string key = name.cast<std::string>();
    py::array a = py::array::ensure(value);
    if (!a) {
      PyErr_Clear();
      type_error(msg::kWeightValueType, key, type_name(value));
    }
    char kind = a.dtype().kind();
    if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f')
      type_error(msg::kWeightDtype, key, py::str(a.dtype()).cast<std::string>());
    auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
    if (!f) throw py::error_already_set();
    Tensor t(std::vector<int64_t>(f.shape(), f.shape() + f.ndim()));
    std::copy(f.data(), f.data() + f.size(), t.data.begin());
    result.emplace(std::move(key), std::move(t));
  }
  return result;
}

std::map<std::string, int64_t> to_sizes(py::handle sizes) {
  if (sizes.is_none()) return {};
  if (py::isinstance<py::str>(sizes)) return grove::parse_sizes(sizes.cast<std::string>());
  if (!py::isinstance<py::dict>(sizes)) type_error(msg::kSizesType, type_name(sizes));
  std::map<std::string, int64_t> result;
  for (auto [name, value] : py::reinterpret_borrow<py::dict>(sizes)) {
    if (!py::isinstance<py::str>(name) || !is_integer(value))
      type_error(msg::kSizesEntryType, type_name(name), type_name(value));
    result[name.cast<std::string>()] = integer_value(value);
  }
  return result;
}

std::vector<Tree> to_trees(py::handle trees, const InputVocab *vocab) {
  if (!py::isinstance<py::list>(trees) && !py::isinstance<py::tuple>(trees))
    type_error(msg::kTreesType, type_name(trees));
  std::vector<Tree> result;
  size_t index = 1;  // inputs are numbered from 1, as the inspectors number them
  for (py::handle tree : trees) {
    if (py::isinstance<py::str>(tree)) {
      // The list reads like a file of trees, one per line: `trees:3:7: missing ')' ...`.
      Tree t = parse_ptb_tree(tree.cast<std::string>(), vocab ? vocab->vocab.get() : nullptr, "trees",
                              static_cast<int64_t>(index));
      if (vocab && !vocab->ids.empty())
        for (int32_t &token : t.token)
          if (token >= 0) token = vocab->ids[token];
      result.push_back(std::move(t));
    } else if (is_array_pair(tree)) {
      result.push_back(tree_from_pair(tree, index));
    } else if (py::isinstance<py::tuple>(tree) || is_integer(tree)) {
      result.push_back(tree_from_tuple(tree, index));
    } else {
      type_error(msg::kTreeType, index, type_name(tree));
    }
    ++index;
  }
  return result;
}

std::vector<Tree> to_trees(py::handle parent, py::handle tokens, py::handle node_begin) {
  py::array_t<int64_t> p = int_array(parent, "parent", 1);
  py::array_t<int64_t> t = int_array(tokens, "tokens", 1);
  py::array_t<int64_t> b = int_array(node_begin, "node_begin", 1);
  if (p.size() != t.size()) user_error(msg::kArrayLengths, "trees", p.size(), t.size());
  const int64_t *offsets = b.data();
  const int64_t trees = b.size() - 1;
  if (b.size() == 0) user_error(msg::kNodeBegin, p.size(), 0, "missing");
  for (int64_t i = 0; i <= trees; ++i) {
    bool ok = i == 0 ? offsets[0] == 0 : offsets[i] >= offsets[i - 1];
    if (i == trees) ok = ok && offsets[i] == p.size();
    if (!ok) user_error(msg::kNodeBegin, p.size(), i, offsets[i]);
  }
  std::vector<Tree> result;
  result.reserve(trees);
  for (int64_t i = 0; i < trees; ++i)
    result.push_back(
        tree_from_parents(p.data(), t.data(), offsets[i], offsets[i + 1], fmt::format("tree {}", i + 1)));
  return result;
}

std::vector<std::vector<int32_t>> to_sequences(py::handle sequences) {
  if (!py::isinstance<py::list>(sequences) && !py::isinstance<py::tuple>(sequences))
    type_error(msg::kTreesType, type_name(sequences));
  std::vector<std::vector<int32_t>> result;
  size_t index = 1;  // inputs are numbered from 1, as the inspectors number them
  for (py::handle sequence : sequences) {
    py::array_t<int64_t> a = int_array(sequence, fmt::format("sequence {}", index), 1);
    std::vector<int32_t> tokens(a.size());
    for (int64_t k = 0; k < a.size(); ++k) {
      int64_t v = a.data()[k];
      if (v < 0 || v > kInt32Max) user_error(msg::kSequenceToken, index, v, k);
      tokens[k] = static_cast<int32_t>(v);
    }
    result.push_back(std::move(tokens));
    ++index;
  }
  return result;
}

std::vector<Dag> to_dags(py::handle dags) {
  if (!py::isinstance<py::list>(dags) && !py::isinstance<py::tuple>(dags))
    type_error(msg::kTreesType, type_name(dags));
  std::vector<Dag> result;
  size_t index = 1;  // inputs are numbered from 1, as the inspectors number them
  for (py::handle item : dags) {
    if (!is_array_pair(item)) type_error(msg::kDagType, index, type_name(item));
    auto pair = py::reinterpret_borrow<py::sequence>(item);
    py::array_t<int64_t> preds = int_array(pair[0], fmt::format("DAG {} preds", index), 2);
    py::array_t<int64_t> tokens = int_array(pair[1], fmt::format("DAG {} tokens", index), 1);
    if (preds.shape(0) != tokens.size()) user_error(msg::kDagLengths, index, preds.shape(0), tokens.size());
    const int64_t n = tokens.size(), slots = preds.shape(1);
    if (n * std::max<int64_t>(slots, 1) > kInt32Max) user_error(msg::kTooLarge, fmt::format("DAG {}", index));
    Dag dag;
    dag.pred_begin.resize(n + 1);
    for (int64_t i = 0; i <= n; ++i) dag.pred_begin[i] = static_cast<int32_t>(i * slots);
    // Out-of-range values become n (past the last node): the inspector rejects them, naming the node.
    auto narrow = [n](int64_t v, int64_t low) {
      return v < low || v > kInt32Max ? static_cast<int32_t>(n) : static_cast<int32_t>(v);
    };
    for (int64_t i = 0; i < n * slots; ++i) dag.preds.push_back(narrow(preds.data()[i], -1));
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = tokens.data()[i];
      dag.token.push_back(v < 0 || v > kInt32Max ? -1 : static_cast<int32_t>(v));
    }
    result.push_back(std::move(dag));
    ++index;
  }
  return result;
}

}  // namespace grove::python
