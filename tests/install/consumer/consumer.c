/* A consumer of grove's C API, built against an install tree by tests/install/check_install.sh:
 *   consumer write-trees OUT.txt            writes the trees below in PTB bracket format (for `grove run`)
 *   consumer compile MODEL WEIGHTS REF.npy  grove_model_compile (grove::compiler), runs the trees
 *   consumer open LIBRARY WEIGHTS REF.npy   grove_model_open of a `grove compile` library (grove::runtime)
 *   consumer static WEIGHTS REF.npy         the libtreelstm.a linked in (consumer_static only)
 *   consumer relay                          grove_relay_open_text of a small Relay program (grove::compiler),
 *                                           checked against the same arithmetic in C
 * The last two compare every root state with REF.npy, `grove run`'s output on the same trees, and
 * exit 1 when one differs by more than kTolerance or anything fails. */
#include <grove/grove.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CONSUMER_STATIC_MODEL
#include "treelstm.h"
#endif

/* The same program run the same way (`grove run` is also the JIT; `grove compile` is Halide's AOT
 * output of the same lowered code), so only floating-point contraction may differ. */
static const double kTolerance = 1e-5;

/* Four binary trees, nodes numbered in preorder so that a left child precedes its right sibling:
 * a lone leaf, (3 7), (1 (7 0)) and ((2 8) 4); token ids index a vocabulary of 10. */
enum { kNumTrees = 4, kNumNodes = 14 };
static const int64_t kNodeBegin[kNumTrees + 1] = {0, 1, 4, 9, 14};
static const int32_t kParent[kNumNodes] = {-1, -1, 1, 1, -1, 4, 4, 6, 6, -1, 9, 10, 10, 9};
static const int32_t kToken[kNumNodes] = {5, -1, 3, 7, -1, 1, -1, 7, 0, -1, -1, 2, 8, 4};

static int fail(const char *what) {
  fprintf(stderr, "consumer: %s: %s\n", what, grove_last_error());
  return 1;
}

/* Node `node` of the tree ending before `end`, as PTB text; the label (2) is not read. */
static void write_node(FILE *out, int32_t node, int32_t end) {
  int32_t child;
  if (kToken[node] >= 0) {
    fprintf(out, "(2 %d)", (int)kToken[node]);
    return;
  }
  fprintf(out, "(2");
  for (child = node + 1; child < end; ++child) {
    if (kParent[child] == node) {
      fprintf(out, " ");
      write_node(out, child, end);
    }
  }
  fprintf(out, ")");
}

static int write_trees(const char *path) {
  int k;
  FILE *out = fopen(path, "w");
  if (!out) {
    fprintf(stderr, "consumer: cannot write %s\n", path);
    return 1;
  }
  for (k = 0; k < kNumTrees; ++k) {
    write_node(out, (int32_t)kNodeBegin[k], (int32_t)kNodeBegin[k + 1]);
    fprintf(out, "\n");
  }
  return fclose(out) == 0 ? 0 : 1;
}

/* A 2-D float32 .npy file (`grove run --out`): its data, or NULL with a message. */
static float *read_npy(const char *path, long long *rows, long long *cols) {
  FILE *in = fopen(path, "rb");
  unsigned char *bytes = NULL;
  float *data = NULL;
  long size;
  size_t header_begin, header_size;
  char *header, *shape;
  if (!in || fseek(in, 0, SEEK_END) != 0 || (size = ftell(in)) < 12 || fseek(in, 0, SEEK_SET) != 0 ||
      !(bytes = malloc((size_t)size + 1)) || fread(bytes, 1, (size_t)size, in) != (size_t)size) {
    fprintf(stderr, "consumer: cannot read %s\n", path);
    goto done;
  }
  bytes[size] = '\0';
  /* Version 1 has a 2-byte header length at offset 8; versions 2 and 3 a 4-byte one. */
  if (memcmp(bytes, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "consumer: %s is not a .npy file\n", path);
    goto done;
  }
  header_begin = bytes[6] == 1 ? 10 : 12;
  header_size = bytes[8] | (size_t)bytes[9] << 8;
  if (bytes[6] != 1) header_size |= (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
  header = (char *)bytes + header_begin;
  shape = strstr(header, "'shape': (");
  if (header_begin + header_size > (size_t)size || !strstr(header, "'descr': '<f4'") ||
      !strstr(header, "'fortran_order': False") || !shape ||
      sscanf(shape, "'shape': (%lld, %lld)", rows, cols) != 2 || *rows < 0 || *cols < 0 ||
      (size_t)(*rows * *cols) * sizeof(float) != (size_t)size - header_begin - header_size) {
    fprintf(stderr, "consumer: %s is not a 2-D float32 array\n", path);
    goto done;
  }
  data = malloc((size_t)(*rows * *cols) * sizeof(float) + 1);
  if (data) memcpy(data, bytes + header_begin + header_size, (size_t)(*rows * *cols) * sizeof(float));
done:
  if (in) fclose(in);
  free(bytes);
  return data;
}

/* Runs the trees in one call and in calls of one tree (results must not depend on the batch), and
 * compares both with `expected`. */
static int run_and_compare(grove_model *model, const float *expected, long long rows, long long cols) {
  grove_model_info info;
  grove_trees trees;
  grove_run_options one_by_one;
  float *roots[2] = {NULL, NULL};
  int64_t got_rows = 0;
  double max_difference = 0, max_magnitude = 0;
  long long i;
  int run, status = 1;

  if (grove_model_get_info(model, &info) != GROVE_OK) return fail("grove_model_get_info");
  if (info.input != GROVE_INPUT_TREES || info.output_elements != cols || rows != kNumTrees) {
    fprintf(stderr, "consumer: model %s gives %lld floats per tree; the reference is %lld x %lld\n",
            info.name, (long long)info.output_elements, rows, cols);
    return 1;
  }
  memset(&trees, 0, sizeof trees);
  trees.num_trees = kNumTrees;
  trees.node_begin = kNodeBegin;
  trees.parent = kParent;
  trees.token = kToken;
  memset(&one_by_one, 0, sizeof one_by_one);
  one_by_one.batch = 1;
  for (run = 0; run < 2; ++run) {
    roots[run] = malloc(sizeof(float) * (size_t)(rows * cols));
    if (!roots[run] || grove_model_run_trees(model, &trees, run == 0 ? NULL : &one_by_one, roots[run],
                                             rows * cols, &got_rows) != GROVE_OK) {
      fail("grove_model_run_trees");
      goto done;
    }
    if (got_rows != rows) {
      fprintf(stderr, "consumer: %lld rows, expected %lld\n", (long long)got_rows, rows);
      goto done;
    }
    for (i = 0; i < rows * cols; ++i) {
      double difference = fabs((double)roots[run][i] - expected[i]);
      max_difference = difference > max_difference || difference != difference ? difference : max_difference;
      max_magnitude = fabs(expected[i]) > max_magnitude ? fabs(expected[i]) : max_magnitude;
    }
  }
  printf(
      "%s (%s): %lld trees x %lld floats; tree 0's root: %.6f %.6f %.6f; max |difference| from grove run: "
      "%.3g\n",
      info.name, info.structure, rows, cols, roots[0][0], roots[0][1], roots[0][2], max_difference);
  /* All-zero states would agree with anything. */
  if (!(max_difference <= kTolerance) || max_magnitude < 1e-3) {
    fprintf(stderr,
            "consumer: the root states differ from grove run's by %.3g (tolerance %.0e), or are all ~0\n",
            max_difference, kTolerance);
    goto done;
  }
  status = 0;
done:
  free(roots[0]);
  free(roots[1]);
  return status;
}

/* Opens the model of mode "open" (the library at `path`) or "static" (the one linked in), with weights. */
static int open_model(const char *mode, const char *path, const char *weights, grove_model **model) {
  grove_status opened = GROVE_ERROR_UNSUPPORTED;
  if (strcmp(mode, "open") == 0) {
    opened = grove_model_open(path, model);
  } else {
#ifdef CONSUMER_STATIC_MODEL
    opened = grove_model_open_compiled(treelstm_grove_model(), model);
#else
    fprintf(stderr, "consumer: no model is linked into this program (consumer_static has one)\n");
    return 1;
#endif
  }
  if (opened != GROVE_OK) return fail("opening the model");
  if (grove_model_bind_weights_file(*model, weights) != GROVE_OK)
    return fail("grove_model_bind_weights_file");
  return 0;
}

/* A Relay program through grove_relay_*: relu(x W^T + b) on the VM against the same sums in C. */
static int run_relay(void) {
  static const char kProgram[] =
      "#[version = \"0.0.5\"]\n"
      "def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32], %b: Tensor[(4), float32]) {\n"
      "  nn.relu(nn.bias_add(nn.dense(%x, %w), %b))\n"
      "}\n";
  static const int64_t kXShape[2] = {2, 3}, kWShape[2] = {4, 3}, kBShape[1] = {4};
  float x[6], w[12], b[4];
  grove_relay_options options;
  grove_relay *program = NULL;
  grove_relay_result *result = NULL;
  grove_tensor inputs[3], out;
  int i, j, k, status = 1;
  for (i = 0; i < 6; ++i) x[i] = 0.25f * (float)(i - 2);
  for (i = 0; i < 12; ++i) w[i] = 0.125f * (float)((i * 5) % 7 - 3);
  for (i = 0; i < 4; ++i) b[i] = 0.5f - 0.25f * (float)i;
  memset(&options, 0, sizeof options);
  options.threads = 2;
  if (grove_relay_open_text(kProgram, &options, &program) != GROVE_OK) return fail("grove_relay_open_text");
  inputs[0].dtype = GROVE_DTYPE_FLOAT32, inputs[0].data = x, inputs[0].shape = kXShape, inputs[0].rank = 2;
  inputs[1].dtype = GROVE_DTYPE_FLOAT32, inputs[1].data = w, inputs[1].shape = kWShape, inputs[1].rank = 2;
  inputs[2].dtype = GROVE_DTYPE_FLOAT32, inputs[2].data = b, inputs[2].shape = kBShape, inputs[2].rank = 1;
  if (grove_relay_run(program, inputs, 3, NULL, &result) != GROVE_OK) {
    fail("grove_relay_run");
    goto done;
  }
  if (grove_relay_result_tensor(result, 0, &out) != GROVE_OK) {
    fail("grove_relay_result_tensor");
    goto done;
  }
  if (out.dtype != GROVE_DTYPE_FLOAT32 || out.rank != 2 || out.shape[0] != 2 || out.shape[1] != 4) {
    fprintf(stderr, "consumer: the Relay program's result is not a [2, 4] float32 tensor\n");
    goto done;
  }
  for (i = 0; i < 2; ++i)
    for (j = 0; j < 4; ++j) {
      double want = b[j], got = ((const float *)out.data)[i * 4 + j];
      for (k = 0; k < 3; ++k) want += (double)x[i * 3 + k] * w[j * 3 + k];
      if (want < 0) want = 0;
      if (fabs(got - want) > kTolerance) {
        fprintf(stderr, "consumer: relay result [%d, %d] is %g, expected %g\n", i, j, got, want);
        goto done;
      }
    }
  status = 0;
done:
  grove_relay_result_free(result);
  grove_relay_close(program);
  return status;
}

int main(int argc, char **argv) {
  grove_model *model = NULL;
  grove_compile_options options;
  const char *mode = argc > 1 ? argv[1] : "", *weights, *reference;
  float *expected;
  long long rows = 0, cols = 0;
  int status = 1;

  if (argc == 3 && strcmp(mode, "write-trees") == 0) return write_trees(argv[2]);
  if (argc == 2 && strcmp(mode, "relay") == 0) return run_relay();
  if (!(argc == 5 && (strcmp(mode, "compile") == 0 || strcmp(mode, "open") == 0)) &&
      !(argc == 4 && strcmp(mode, "static") == 0)) {
    fprintf(stderr,
            "usage: consumer write-trees OUT | compile MODEL WEIGHTS REF.npy | open LIBRARY WEIGHTS REF.npy"
            " | static WEIGHTS REF.npy | relay\n");
    return 2;
  }
  weights = argv[argc - 2];
  reference = argv[argc - 1];
  if (grove_api_version() != GROVE_API_VERSION) {
    fprintf(stderr, "consumer: built for C API version %d, linked with %d\n", GROVE_API_VERSION,
            grove_api_version());
    return 1;
  }
  if (!(expected = read_npy(reference, &rows, &cols))) return 1;
  if (strcmp(mode, "compile") == 0) {
    memset(&options, 0, sizeof options);
    options.threads = 2;
    if (grove_model_compile(argv[2], weights, &options, &model) != GROVE_OK) {
      fail("grove_model_compile");
      goto done;
    }
  } else if (open_model(mode, argv[2], weights, &model) != 0) {
    goto done;
  }
  status = run_and_compare(model, expected, rows, cols);
done:
  grove_model_free(model);
  free(expected);
  return status;
}
