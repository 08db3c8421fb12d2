// Every user error about DAGs, grids and sequences, matched by its message: the JSON DAG reader
// (including hostile JSON), the grid and sequence readers, the DAG inspector, the model language's
// dag/sequence rules, and running a model over the wrong kind of input.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "backends/runtime/DagInspector.h"
#include "datasets/DagReader.h"
#include "frontend/dsl/Frontend.h"
#include "tests/UserError.h"

namespace grove {
namespace {

using grove::testing::user_error_of;
using ::testing::HasSubstr;

std::string dag_error(const std::string &json) {
  return user_error_of([&] { read_dag_text(json, "d.json"); });
}

// --- JSON DAG files -------------------------------------------------------------------------------

TEST(DagReaderErrors, NotJson) {
  // Syntax errors name the file's line and column (characters) and the DAG they are in.
  EXPECT_THAT(dag_error(""), HasSubstr("d.json:1:1: not valid JSON: syntax error while parsing value - "
                                       "unexpected end of input"));
  EXPECT_THAT(
      dag_error("{\"nodes\": [}"),
      HasSubstr("d.json:1:12: DAG 1: not valid JSON: syntax error while parsing value - unexpected '}'"));
  EXPECT_THAT(
      dag_error("{\"nodes\": []} x"),
      HasSubstr("d.json:1:15: not valid JSON: unexpected 'x' after the end of the DAG; a DAG file holds one "
                "DAG object or one list of them"));
  EXPECT_THAT(dag_error("[\"\xff\"]"),
              HasSubstr("d.json:1:3: DAG 1: not valid JSON: syntax error while parsing "
                        "value - invalid string: ill-formed UTF-8 byte"));
  EXPECT_THAT(
      dag_error("[{\"nodes\": []},\n {\"nodes\": []}\n {\"nodes\": []}]"),
      HasSubstr("d.json:3:2: not valid JSON: expected ',' or ']' after DAG 2 in the list, found '{'"));
  EXPECT_THAT(
      dag_error("[{\"nodes\": []},\n  {\"nodes\": [{\"token\": tru}]}]"),
      HasSubstr("d.json:2:27: DAG 2: not valid JSON: syntax error while parsing value - invalid literal"));
  EXPECT_THAT(
      dag_error("[{\"nodes\": []}"),
      HasSubstr(
          "d.json:1:15: not valid JSON: expected ',' or ']' after DAG 1 in the list, found end of file"));
  EXPECT_THAT(dag_error("[{\"nodes\": []}] ]"),
              HasSubstr("d.json:1:17: not valid JSON: unexpected ']' after the end of the list"));
  EXPECT_THAT(
      dag_error("[{\"nodes\": []},]"),
      HasSubstr("d.json:1:16: DAG 2: not valid JSON: syntax error while parsing value - unexpected ']'"));
  EXPECT_THAT(dag_error("tru"),
              HasSubstr("d.json:1:4: not valid JSON: syntax error while parsing value - invalid "
                        "literal; last read: 'tru'"));
}

TEST(DagReaderErrors, TopLevel) {
  EXPECT_THAT(dag_error("3"),
              HasSubstr("d.json: expected a DAG object {\"nodes\": [...]} or a JSON list of them, found 3"));
  EXPECT_THAT(dag_error("[]"), HasSubstr("d.json: the list holds no DAGs"));
  EXPECT_THAT(dag_error("[{\"nodes\": [{\"token\": 1}]}, 7]"),
              HasSubstr("d.json: DAG 2: expected an object {\"nodes\": [...]}, found 7"));
  EXPECT_THAT(dag_error("{\"nodes\": [], \"edges\": 1}"),
              HasSubstr("d.json: DAG 1: unexpected key 'edges'; a DAG object has only 'nodes'"));
  EXPECT_THAT(dag_error("{}"), HasSubstr("d.json: DAG 1: missing 'nodes'"));
  EXPECT_THAT(dag_error("{\"nodes\": {}}"),
              HasSubstr("d.json: DAG 1: 'nodes' must be a list of node objects, found an object"));
}

TEST(DagReaderErrors, Nodes) {
  EXPECT_THAT(
      dag_error("{\"nodes\": [{\"token\": 1}, [0]]}"),
      HasSubstr("d.json: DAG 1, node 1: expected an object {\"token\": 3, \"preds\": [0, 1]}, found a list"));
  EXPECT_THAT(dag_error("{\"nodes\": [{\"token\": 1, \"pred\": [0]}]}"),
              HasSubstr("d.json: DAG 1, node 0: unexpected key 'pred'; a node has 'token' and 'preds'"));
  EXPECT_THAT(dag_error("{\"nodes\": [{\"preds\": []}]}"),
              HasSubstr("d.json: DAG 1, node 0: missing 'token'; expected an integer id"));
  EXPECT_THAT(dag_error("{\"nodes\": [{\"token\": -1}]}"),
              HasSubstr("d.json: DAG 1, node 0: 'token' must be an integer in [0, 2147483647], found -1"));
  EXPECT_THAT(dag_error("{\"nodes\": [{\"token\": 1.5}]}"), HasSubstr("found 1.5"));
  EXPECT_THAT(dag_error("{\"nodes\": [{\"token\": \"cat\"}]}"), HasSubstr("found \"cat\""));
  EXPECT_THAT(dag_error("{\"nodes\": [{\"token\": 99999999999}]}"), HasSubstr("found 99999999999"));
  EXPECT_THAT(dag_error("{\"nodes\": [{\"token\": 1, \"preds\": 0}]}"),
              HasSubstr("d.json: DAG 1, node 0: 'preds' must be a list of node indices (null for an empty "
                        "slot), found 0"));
  EXPECT_THAT(
      dag_error("{\"nodes\": [{\"token\": 1}, {\"token\": 1, \"preds\": [null, -2]}]}"),
      HasSubstr("d.json: DAG 1, node 1: predecessor slot 1 must be a node index in [0, 2147483647] or "
                "null for an empty slot, found -2"));
  EXPECT_THAT(dag_error("{\"nodes\": [{\"token\": 1, \"preds\": [true]}]}"), HasSubstr("found true"));
}

TEST(DagReaderErrors, HostileJsonIsAnErrorNotACrash) {
  // Nested a million deep: nlohmann's parser and destructor are iterative, and messages never print
  // a container.
  std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  EXPECT_THAT(dag_error(deep), HasSubstr("DAG 1: expected an object {\"nodes\": [...]}, found a list"));
  std::string long_string = "{\"nodes\": [{\"token\": \"" + std::string(100'000, 'a') + "\"}]}";
  std::string message = dag_error(long_string);
  EXPECT_THAT(message, HasSubstr("'token' must be an integer"));
  EXPECT_LT(message.size(), 300u);
  EXPECT_THAT(user_error_of([] { read_dags("/nonexistent/d.json"); }),
              HasSubstr("cannot read DAG file '/nonexistent/d.json'"));
}

TEST(DagReader, ReadsSlotsAndEmptySlots) {
  std::vector<Dag> dags = read_dag_text(
      "[{\"nodes\": [{\"token\": 4, \"preds\": [1, null]}, {\"token\": 2}, {\"token\": 0, \"preds\": [null, "
      "0]}]},"
      " {\"nodes\": [{\"token\": 9, \"preds\": []}]}]",
      "d.json");
  ASSERT_EQ(dags.size(), 2u);
  EXPECT_EQ(dags[0].token, (std::vector<int32_t>{4, 2, 0}));
  EXPECT_EQ(dags[0].pred_begin, (std::vector<int32_t>{0, 2, 2, 4}));
  EXPECT_EQ(dags[0].preds, (std::vector<int32_t>{1, -1, -1, 0}));
  EXPECT_EQ(dags[1].size(), 1);
  EXPECT_EQ(read_dag_text("{\"nodes\": [{\"token\": 3}]}", "d.json").size(), 1u);
}

// --- Grids and sequences ------------------------------------------------------------------------

std::string grid_error(const std::string &text) {
  return user_error_of([&] { read_grid_text(text, Sweep::SouthEast, "g.txt"); });
}

TEST(GridReaderErrors, Lines) {
  EXPECT_THAT(grid_error(""), HasSubstr("g.txt: the file is empty; expected one grid per line"));
  EXPECT_THAT(grid_error("1 1 3\n\n1 1 3\n"), HasSubstr("g.txt:2: empty line; expected one grid per line"));
  EXPECT_THAT(grid_error("1 1 3\r\n"),
              HasSubstr("g.txt:1:6: carriage return (CR) in the line; grid files must use LF line endings"));
  EXPECT_THAT(grid_error("1 1\t3\n"), HasSubstr("g.txt:1:4: unexpected control character 0x09"));
  EXPECT_THAT(grid_error("1 1 \xc3\x28\n"), HasSubstr("g.txt:1:5: invalid UTF-8: byte 0xC3"));
}

TEST(GridReaderErrors, SizesAndTokens) {
  EXPECT_THAT(grid_error("0 2\n"),
              HasSubstr("g.txt:1:1: the grid's row count '0' must be an integer in [1, 1073741823]"));
  EXPECT_THAT(grid_error("2 x 1 2\n"),
              HasSubstr("g.txt:1:3: the grid's column count 'x' must be an integer"));
  EXPECT_THAT(grid_error("2\n"), HasSubstr("g.txt:1:2: the grid's column count '' must be an integer"));
  EXPECT_THAT(grid_error("100000 100000 1\n"),
              HasSubstr("g.txt:1: a 100000x100000 grid has more than 1073741823 cells"));
  EXPECT_THAT(grid_error("2 2 1 2 3\n"),
              HasSubstr("g.txt:1: a 2x2 grid needs 4 tokens after 'R C', found 3"));
  EXPECT_THAT(grid_error("1 2 1 2\n2 1 1 -2\n"),
              HasSubstr("g.txt:2:7: grid token '-2' is not an integer id; tokens must be integers in [0, "
                        "2147483647]"));
}

TEST(GridReader, SweepsNameTheNeighboursTheyComeFrom) {
  // A 2x2 grid, cells 0 1 / 2 3: each sweep's slot p0 is the vertical neighbour, p1 the horizontal.
  auto preds = [](Sweep sweep) { return read_grid_text("2 2 5 6 7 8", sweep, "g.txt")[0].preds; };
  EXPECT_EQ(preds(Sweep::SouthEast), (std::vector<int32_t>{-1, -1, -1, 0, 0, -1, 1, 2}));
  EXPECT_EQ(preds(Sweep::SouthWest), (std::vector<int32_t>{-1, 1, -1, -1, 0, 3, 1, -1}));
  EXPECT_EQ(preds(Sweep::NorthEast), (std::vector<int32_t>{2, -1, 3, 0, -1, -1, -1, 2}));
  EXPECT_EQ(preds(Sweep::NorthWest), (std::vector<int32_t>{2, 1, 3, -1, -1, 3, -1, -1}));
  EXPECT_EQ(read_grid_text("2 2 5 6 7 8", Sweep::SouthEast, "g.txt")[0].token,
            (std::vector<int32_t>{5, 6, 7, 8}));
}

TEST(SequenceReaderErrors, Lines) {
  Vocab vocab = Vocab::parse("the\ncat\n", "v.txt");
  auto error = [&](const std::string &text, const Vocab *v) {
    return user_error_of([&] { read_sequence_text(text, v, "s.txt"); });
  };
  EXPECT_THAT(error("", nullptr), HasSubstr("s.txt: the file is empty; expected one sequence per line"));
  EXPECT_THAT(error("1 2\n   \n", nullptr), HasSubstr("s.txt:2: empty line; expected one sequence per line"));
  EXPECT_THAT(error("1 x2\n", nullptr),
              HasSubstr("s.txt:1:3: token 'x2' is not an integer id; without a vocabulary, tokens must be "
                        "integers in [0, 2147483647]"));
  EXPECT_THAT(
      error("the dog\n", &vocab),
      HasSubstr("s.txt:1:5: token 'dog' is not in the vocabulary 'v.txt', which has no '<unk>' line"));
  EXPECT_THAT(error("the\rcat\n", &vocab),
              HasSubstr("s.txt:1:4: carriage return (CR) in the line; sequence files"));
  auto sequences = read_sequence_text("  the cat   the\ncat\n", &vocab, "s.txt");
  EXPECT_EQ(sequences, (std::vector<std::vector<int32_t>>{{0, 1, 0}, {1}}));
}

// --- The DAG inspector ----------------------------------------------------------------------------

std::string inspect_error(const Dag &dag, DagInspectorOptions options = {}) {
  options.vocab_size = 10;
  options.first_dag_number = 4;
  return user_error_of([&] { linearize_dags(std::span(&dag, 1), options); });
}

Dag dag_of(std::vector<std::vector<int32_t>> preds, std::vector<int32_t> tokens = {}) {
  Dag dag;
  dag.pred_begin.push_back(0);
  for (size_t v = 0; v < preds.size(); ++v) {
    dag.token.push_back(tokens.empty() ? 1 : tokens[v]);
    dag.preds.insert(dag.preds.end(), preds[v].begin(), preds[v].end());
    dag.pred_begin.push_back(static_cast<int32_t>(dag.preds.size()));
  }
  return dag;
}

TEST(DagInspectorErrors, EveryMalformedDag) {
  EXPECT_THAT(inspect_error(Dag{}), HasSubstr("DAG 4: it is empty (0 nodes); expected at least one node"));
  EXPECT_THAT(
      inspect_error(dag_of({{}, {0, 2}})),
      HasSubstr("DAG 4, node 1: predecessor slot 1 holds 2, which is out of range: there are 2 nodes (0 "
                "to 1)"));
  EXPECT_THAT(inspect_error(dag_of({{}, {-5}})), HasSubstr("DAG 4, node 1: predecessor slot 0 holds -5"));
  EXPECT_THAT(inspect_error(dag_of({{}, {-1, 1}})),
              HasSubstr("DAG 4, node 1: predecessor slot 1 names the node itself, a cycle"));
  EXPECT_THAT(
      inspect_error(dag_of({{2}, {0}, {1}})),
      HasSubstr("DAG 4: cycle: node 2 is a predecessor of node 0, which is itself an ancestor of node 2"));
  EXPECT_THAT(
      inspect_error(dag_of({{}, {}, {0, 1, -1}})),
      HasSubstr("DAG 4, node 2: 3 predecessor slots, but this model reads at most 2 (a dag model reads "
                "h[pred0] and h[pred1])"));
  DagInspectorOptions sequence;
  sequence.slots = 1;
  sequence.noun = "sequence";
  EXPECT_THAT(inspect_error(dag_of({{}, {0, -1}}), sequence),
              HasSubstr("sequence 4, node 1: 2 predecessor slots, but this model reads at most 1 (a sequence "
                        "model reads h[prev])"));
  EXPECT_THAT(inspect_error(dag_of({{}, {0}}, {1, 10})),
              HasSubstr("DAG 4, node 1: token 10 is out of range: the vocabulary has 10 entries"));
  EXPECT_THAT(inspect_error(dag_of({{}, {0}}, {-3, 1})),
              HasSubstr("DAG 4, node 0: token -3 is negative; a token must be >= 0"));
  Dag broken = dag_of({{}, {0}});
  broken.pred_begin.pop_back();
  EXPECT_THAT(inspect_error(broken), HasSubstr("DAG 4: malformed DAG: pred_begin has 2 entries; expected 3"));
}

TEST(DagInspector, LevelsZeroNodeAndSinks) {
  // Node 0 <- (2, empty), node 1 <- (empty, empty), node 2 <- (1, 1), node 3 <- (0, 2).
  Dag dag = dag_of({{2, -1}, {}, {1, 1}, {0, 2}});
  LinearizedBatch batch = linearize_dags(std::span(&dag, 1), {});
  // Levels: 1 -> 0, 2 -> 1, 0 -> 2, 3 -> 3: new ids equal the levels here.
  EXPECT_EQ(batch.num_levels, 4);
  EXPECT_EQ(batch.level_begin, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(batch.zero_node, 4);
  EXPECT_EQ(batch.child_begin, (std::vector<int32_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(batch.children, (std::vector<int32_t>{4, 4, 0, 0, 1, 4, 2, 1}));
  EXPECT_EQ(batch.roots, (std::vector<int32_t>{3}));  // the one sink, node 3
  DagInspectorOptions all;
  all.outputs = DagOutputs::AllNodes;
  EXPECT_EQ(linearize_dags(std::span(&dag, 1), all).roots, (std::vector<int32_t>{2, 0, 1, 3}));
}

// --- The model language ---------------------------------------------------------------------------

std::string model_error(const std::string &text) {
  return user_error_of([&] { dsl::parse_model(text, "m.grove"); });
}

const char kDagHeader[] = "model M\nstructure dag\nparam E [V, H]\nparam W [H, H]\nstate h [H]\n";
const char kSeqHeader[] = "model M\nstructure sequence\nparam E [V, H]\nparam W [H, H]\nstate h [H]\n";

TEST(DslDagErrors, CasesFitTheStructure) {
  EXPECT_THAT(
      model_error(std::string(kDagHeader) + "leaf { h = E[token] }\noutput h\n"),
      HasSubstr("m.grove:6:1: error: a 'structure dag' model has a single 'node { ... }' case, not 'leaf'; "
                "every node of a dag has a token and reads its predecessors' states as h[pred0] and "
                "h[pred1]"));
  EXPECT_THAT(model_error(std::string(kSeqHeader) + "output h\n"),
              HasSubstr("m.grove:7:1: error: the model has no 'node' declaration; expected 'node { ... }'"));
  EXPECT_THAT(
      model_error("model M\nstructure tree\nparam E [V, H]\nstate h [H]\nnode { h = E[token] }\noutput h\n"),
      HasSubstr("m.grove:5:1: error: a 'structure tree' model has 'leaf' and 'internal' cases, not 'node'"));
  EXPECT_THAT(
      model_error(std::string(kDagHeader) + "node { h = E[token] }\nnode { h = E[token] }\noutput h\n"),
      HasSubstr("m.grove:7:1: error: second 'node' section (the first is at line 6)"));
}

TEST(DslDagErrors, SlotsFitTheStructure) {
  EXPECT_THAT(
      model_error(std::string(kDagHeader) + "node { h = W @ h[prev] }\noutput h\n"),
      HasSubstr("m.grove:6:16: error: 'h[prev]' is not available in a 'structure dag' model; read its "
                "predecessors' states as h[pred0] and h[pred1]"));
  EXPECT_THAT(
      model_error(std::string(kSeqHeader) + "node { h = W @ h[pred1] }\noutput h\n"),
      HasSubstr("'h[pred1]' is not available in a 'structure sequence' model; read the previous token's "
                "state as h[prev]"));
  EXPECT_THAT(model_error(std::string(kSeqHeader) + "node { h = W @ h[left] }\noutput h\n"),
              HasSubstr("'h[left]' is not available in a 'structure sequence' model"));
  EXPECT_THAT(
      model_error("model M\nstructure binary_tree\nparam E [V, H]\nstate h [H]\nleaf { h = E[token] }\n"
                  "internal { h = h[pred0] }\noutput h\n"),
      HasSubstr("'h[pred0]' is not available in a 'structure binary_tree' model; read h[left] and "
                "h[right]"));
  EXPECT_THAT(
      model_error(std::string(kDagHeader) + "node { h = sum(k in children) h[k] }\noutput h\n"),
      HasSubstr("m.grove:6:12: error: sum(k in children) needs 'structure tree'; in a 'dag' model read "
                "its predecessors' states as h[pred0] and h[pred1]"));
  EXPECT_THAT(
      model_error(std::string(kSeqHeader) + "node { h = W @ h }\noutput h\n"),
      HasSubstr("state 'h' of this node is used before it is assigned in the node case; read the previous "
                "token's state as h[prev]"));
  EXPECT_THAT(model_error(std::string(kDagHeader) + "node { h = E[pred0] }\noutput h\n"),
              HasSubstr("'E[pred0]' reads a child's state, but 'E' is a param; expected a state"));
}

TEST(DslDag, NodeCaseIsBothCasesAndReadsSlotsAndToken) {
  ilir::Program p = dsl::parse_model(
      std::string(kDagHeader) + "node { h = E[token] + W @ h[pred1] }\noutput h\n", "m.grove");
  EXPECT_EQ(p.structure, ilir::StructureKind::Dag);
  ASSERT_EQ(p.leaf.body.size(), 1u);
  ASSERT_EQ(p.internal.body.size(), 1u);
  EXPECT_TRUE(p.leaf.body[0].value.same_as(p.internal.body[0].value));
}

}  // namespace
}  // namespace grove
