/* grove's C API from C (C11, compiled as C: the header must be valid C), with threads.
 *
 * Compiles models/treelstm.grove at run time with a weights file this program writes (seeded,
 * small sizes), runs a batch of random binary trees given as parent arrays and as child arrays,
 * then from 4 threads at once on the one model, and checks:
 *   - every thread's rows equal the single-threaded rows of the same batch size bit for bit, with
 *     either tree form (the batch size may change the last ulps, so each size has its own rows);
 *   - the rows match an independent TreeLSTM written below in double precision from docs/MODELS.md,
 *     per element |grove - reference| <= 1e-4 |reference| + 1e-5 (float32 against double);
 *   - a bad tree fails with GROVE_ERROR_USER, names the tree, and leaves the output untouched.
 *
 * Usage: c_api_test SOURCE_DIR. Scratch files go to a fresh directory under $TMPDIR (or /tmp). */

#define _POSIX_C_SOURCE 200809L

#include <grove/grove.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { H = 8, D = 6, V = 40, NUM_TREES = 40, MAX_LEAVES = 24, NUM_THREADS = 4, ROUNDS = 3 };

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      failures++;                                                              \
    }                                                                          \
  } while (0)

/* ---- Deterministic numbers ---------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t next_u32(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33);
}

static float uniform(float scale) { return scale * ((float)(next_u32() % 2001) / 1000.0f - 1.0f); }

/* ---- Weights: docs/MODELS.md's TreeLSTM parameters, written as a safetensors file ---------------- */

typedef struct {
  const char *name;
  int64_t shape[2];
  int32_t rank;
  float *data;
} param;

static param params[] = {
    {"emb", {V, D}, 2, NULL},       {"W_iou", {3 * H, D}, 2, NULL},   {"U_iou", {3 * H, 2 * H}, 2, NULL},
    {"b_iou", {3 * H, 0}, 1, NULL}, {"U_f", {2 * H, 2 * H}, 2, NULL}, {"b_f", {H, 0}, 1, NULL},
};
enum { NUM_PARAMS = sizeof(params) / sizeof(params[0]) };

static int64_t elements(const param *p) { return p->rank == 1 ? p->shape[0] : p->shape[0] * p->shape[1]; }

static void make_weights(void) {
  for (int k = 0; k < NUM_PARAMS; k++) {
    param *p = &params[k];
    p->data = malloc(sizeof(float) * (size_t)elements(p));
    float scale = p->rank == 2 ? 1.0f / sqrtf((float)p->shape[1]) : 0.1f;
    for (int64_t i = 0; i < elements(p); i++) p->data[i] = uniform(scale);
  }
}

/* The safetensors format: an 8-byte little-endian header length, a JSON header, the raw data. */
static int write_weights(const char *path) {
  char header[2048];
  size_t used = 0;
  int64_t offset = 0;
  used += (size_t)snprintf(header + used, sizeof header - used, "{");
  for (int k = 0; k < NUM_PARAMS; k++) {
    const param *p = &params[k];
    int64_t bytes = 4 * elements(p);
    if (p->rank == 1)
      used += (size_t)snprintf(header + used, sizeof header - used,
                               "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],\"data_offsets\":[%lld,%lld]}",
                               k ? "," : "", p->name, (long long)p->shape[0], (long long)offset,
                               (long long)(offset + bytes));
    else
      used +=
          (size_t)snprintf(header + used, sizeof header - used,
                           "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],\"data_offsets\":[%lld,%lld]}",
                           k ? "," : "", p->name, (long long)p->shape[0], (long long)p->shape[1],
                           (long long)offset, (long long)(offset + bytes));
    offset += bytes;
  }
  used += (size_t)snprintf(header + used, sizeof header - used, "}");
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  unsigned char length[8];
  for (int i = 0; i < 8; i++) length[i] = (unsigned char)(((uint64_t)used >> (8 * i)) & 0xFF);
  int ok = fwrite(length, 1, 8, f) == 8 && fwrite(header, 1, used, f) == used;
  for (int k = 0; k < NUM_PARAMS; k++)
    ok = ok && fwrite(params[k].data, sizeof(float), (size_t)elements(&params[k]), f) ==
                   (size_t)elements(&params[k]);
  return fclose(f) == 0 && ok;
}

/* ---- Trees: random binary trees, both forms --------------------------------------------------------
 * A tree of L leaves: leaves get the first L ids, and each merge of two neighbouring items makes a
 * new node, so children always have smaller ids than their parent. */

typedef struct {
  int64_t node_begin[NUM_TREES + 1];
  int32_t *parent, *token, *children;
  int64_t *child_begin;
  int64_t num_nodes;
} batch;

static void make_trees(batch *b) {
  int32_t leaves[NUM_TREES];
  b->node_begin[0] = 0;
  for (int k = 0; k < NUM_TREES; k++) {
    leaves[k] = 1 + (int32_t)(next_u32() % MAX_LEAVES);
    b->node_begin[k + 1] = b->node_begin[k] + 2 * leaves[k] - 1;
  }
  b->num_nodes = b->node_begin[NUM_TREES];
  b->parent = malloc(sizeof(int32_t) * (size_t)b->num_nodes);
  b->token = malloc(sizeof(int32_t) * (size_t)b->num_nodes);
  b->children = malloc(sizeof(int32_t) * (size_t)b->num_nodes);
  b->child_begin = malloc(sizeof(int64_t) * (size_t)(b->num_nodes + 1));
  for (int k = 0; k < NUM_TREES; k++) {
    int32_t base = (int32_t)b->node_begin[k], items[MAX_LEAVES], count = leaves[k], next = base + leaves[k];
    for (int32_t i = 0; i < leaves[k]; i++) {
      items[i] = base + i;
      b->token[base + i] = (int32_t)(next_u32() % V);
    }
    while (count > 1) {
      int32_t at = (int32_t)(next_u32() % (uint32_t)(count - 1));
      b->parent[items[at]] = b->parent[items[at + 1]] = next;
      b->token[next] = -1;
      items[at] = next++;
      memmove(&items[at + 1], &items[at + 2], sizeof(int32_t) * (size_t)(count - at - 2));
      count--;
    }
    b->parent[items[0]] = -1;
  }
  /* The child form of the same trees: each node's children in id order, as the parent form implies. */
  int64_t entries = 0;
  for (int64_t i = 0; i < b->num_nodes; i++) {
    b->child_begin[i] = entries;
    for (int64_t j = 0; j < b->num_nodes; j++)
      if (b->parent[j] == i) b->children[entries++] = (int32_t)j;
  }
  b->child_begin[b->num_nodes] = entries;
}

static grove_trees as_parents(const batch *b) {
  grove_trees t = {NUM_TREES, b->node_begin, b->parent, NULL, NULL, b->token};
  return t;
}

static grove_trees as_children(const batch *b) {
  grove_trees t = {NUM_TREES, b->node_begin, NULL, b->child_begin, b->children, b->token};
  return t;
}

/* ---- The independent reference: docs/MODELS.md's TreeLSTM in double precision -------------------- */

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void reference_roots(const batch *b, double *roots) {
  const float *emb = params[0].data, *W_iou = params[1].data, *U_iou = params[2].data,
              *b_iou = params[3].data, *U_f = params[4].data, *b_f = params[5].data;
  double(*h)[H] = malloc(sizeof(double[H]) * (size_t)b->num_nodes);
  double(*c)[H] = malloc(sizeof(double[H]) * (size_t)b->num_nodes);
  for (int64_t n = 0; n < b->num_nodes; n++) { /* children before parents: ids increase upwards */
    double iou[3 * H], f[2 * H], s[2 * H];
    int leaf = b->child_begin[n + 1] == b->child_begin[n];
    int32_t l = leaf ? -1 : b->children[b->child_begin[n]],
            r = leaf ? -1 : b->children[b->child_begin[n] + 1];
    for (int j = 0; j < H && !leaf; j++) {
      s[j] = h[l][j];
      s[H + j] = h[r][j];
    }
    for (int row = 0; row < 3 * H; row++) {
      double sum = b_iou[row];
      if (leaf)
        for (int k = 0; k < D; k++) sum += (double)W_iou[row * D + k] * emb[b->token[n] * D + k];
      else
        for (int k = 0; k < 2 * H; k++) sum += (double)U_iou[row * 2 * H + k] * s[k];
      iou[row] = sum;
    }
    for (int row = 0; row < 2 * H && !leaf; row++) {
      double sum = b_f[row % H];
      for (int k = 0; k < 2 * H; k++) sum += (double)U_f[row * 2 * H + k] * s[k];
      f[row] = sigmoid(sum);
    }
    for (int j = 0; j < H; j++) {
      double i = sigmoid(iou[j]), o = sigmoid(iou[H + j]), u = tanh(iou[2 * H + j]);
      c[n][j] = i * u + (leaf ? 0.0 : f[j] * c[l][j] + f[H + j] * c[r][j]);
      h[n][j] = o * tanh(c[n][j]);
    }
    if (b->parent[n] == -1) {
      int64_t k = 0;
      while (b->node_begin[k + 1] <= n) k++;
      memcpy(&roots[k * H], h[n], sizeof(double[H]));
    }
  }
  free(h);
  free(c);
}

/* ---- Threads ---------------------------------------------------------------------------------------- */

typedef struct {
  const grove_model *model;
  const batch *trees;
  const float *expected, *expected_batch7;
  int index;
  int mismatches;
  char error[512];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  float out[NUM_TREES * H];
  for (int round = 0; round < ROUNDS; round++) {
    grove_trees t = (w->index + round) % 2 ? as_children(w->trees) : as_parents(w->trees);
    grove_run_options options = {round == 1 ? 7 : 0};
    int64_t rows = 0;
    if (grove_model_run_trees(w->model, &t, &options, out, NUM_TREES * H, &rows) != GROVE_OK) {
      snprintf(w->error, sizeof w->error, "%s", grove_last_error());
      w->mismatches++;
      continue;
    }
    if (rows != NUM_TREES || memcmp(out, round == 1 ? w->expected_batch7 : w->expected, sizeof out) != 0)
      w->mismatches++;
  }
  return NULL;
}

/* ---- The test --------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
    return 2;
  }
  CHECK(grove_api_version() == GROVE_API_VERSION, "runtime version %d", grove_api_version());

  const char *tmp = getenv("TMPDIR");
  char dir[512], weights[600], model_file[600];
  snprintf(dir, sizeof dir, "%s/grove-capi-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(weights, sizeof weights, "%s/treelstm.safetensors", dir);
  snprintf(model_file, sizeof model_file, "%s/models/treelstm.grove", argv[1]);
  make_weights();
  CHECK(write_weights(weights), "cannot write %s", weights);

  grove_compile_options options = {NULL, NULL, NULL, 2};
  grove_model *model = NULL;
  grove_status status = grove_model_compile(model_file, weights, &options, &model);
  remove(weights);
  rmdir(dir);
  if (status != GROVE_OK) {
    fprintf(stderr, "grove_model_compile: %s: %s\n", grove_status_string(status), grove_last_error());
    return 1;
  }

  grove_model_info info;
  CHECK(grove_model_get_info(model, &info) == GROVE_OK, "%s", grove_last_error());
  CHECK(info.input == GROVE_INPUT_TREES && info.output_elements == H && info.num_params == NUM_PARAMS &&
            info.vocab_size == V,
        "info: input %d, output_elements %lld, num_params %d, vocab_size %lld", (int)info.input,
        (long long)info.output_elements, (int)info.num_params, (long long)info.vocab_size);
  CHECK(strstr(info.schedule, "threads=2") != NULL, "schedule '%s' lacks threads=2", info.schedule);
  for (int32_t k = 0; k < info.num_params; k++) {
    const char *name;
    const int64_t *shape;
    int32_t rank;
    CHECK(grove_model_param(model, k, &name, &shape, &rank) == GROVE_OK, "%s", grove_last_error());
    int found = 0;
    for (int p = 0; p < NUM_PARAMS; p++)
      found |= strcmp(params[p].name, name) == 0 && params[p].rank == rank &&
               params[p].shape[0] == shape[0] && (rank == 1 || params[p].shape[1] == shape[1]);
    CHECK(found, "parameter %d: '%s' of rank %d is not docs/MODELS.md's", (int)k, name, (int)rank);
  }

  /* Single-threaded: both forms, against each other and the reference. */
  batch trees;
  make_trees(&trees);
  static float by_parents[NUM_TREES * H], by_children[NUM_TREES * H], batch7[NUM_TREES * H];
  static double reference[NUM_TREES * H];
  grove_trees t = as_parents(&trees);
  int64_t rows = -1;
  CHECK(grove_model_run_trees(model, &t, NULL, NULL, 0, &rows) == GROVE_OK && rows == NUM_TREES,
        "rows only: %lld (%s)", (long long)rows, grove_last_error());
  CHECK(grove_model_run_trees(model, &t, NULL, by_parents, NUM_TREES * H, &rows) == GROVE_OK, "%s",
        grove_last_error());
  t = as_children(&trees);
  CHECK(grove_model_run_trees(model, &t, NULL, by_children, NUM_TREES * H, &rows) == GROVE_OK, "%s",
        grove_last_error());
  CHECK(memcmp(by_parents, by_children, sizeof by_parents) == 0, "the two tree forms differ");
  grove_run_options seven = {7};
  CHECK(grove_model_run_trees(model, &t, &seven, batch7, NUM_TREES * H, &rows) == GROVE_OK, "%s",
        grove_last_error());
  reference_roots(&trees, reference);
  double worst = 0;
  for (int i = 0; i < NUM_TREES * H; i++) {
    double difference = fabs(by_parents[i] - reference[i]);
    if (difference > worst) worst = difference;
    CHECK(difference <= 1e-4 * fabs(reference[i]) + 1e-5, "tree %d, element %d: grove %.9g, reference %.9g",
          i / H, i % H, by_parents[i], reference[i]);
  }

  /* Four threads at once on the one model. */
  pthread_t threads[NUM_THREADS];
  worker workers[NUM_THREADS];
  for (int i = 0; i < NUM_THREADS; i++) {
    workers[i] = (worker){model, &trees, by_parents, batch7, i, 0, ""};
    CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0, "pthread_create %d", i);
  }
  for (int i = 0; i < NUM_THREADS; i++) {
    pthread_join(threads[i], NULL);
    CHECK(workers[i].mismatches == 0, "thread %d: %d of %d runs differ from the single-threaded run %s", i,
          workers[i].mismatches, ROUNDS, workers[i].error);
  }

  /* A bad tree: a leaf's token outside the vocabulary. The output stays as it was. */
  int32_t saved = trees.token[trees.node_begin[2]];
  trees.token[trees.node_begin[2]] = V + 5;
  float out[NUM_TREES * H];
  for (int i = 0; i < NUM_TREES * H; i++) out[i] = -7.0f;
  t = as_parents(&trees);
  status = grove_model_run_trees(model, &t, NULL, out, NUM_TREES * H, &rows);
  CHECK(status == GROVE_ERROR_USER, "status %s", grove_status_string(status));
  CHECK(strstr(grove_last_error(), "tree 3") != NULL && strstr(grove_last_error(), "out of range") != NULL,
        "message: %s", grove_last_error());
  int untouched = 1;
  for (int i = 0; i < NUM_TREES * H; i++) untouched &= out[i] == -7.0f;
  CHECK(untouched, "a failed run wrote to its output");
  trees.token[trees.node_begin[2]] = saved;

  grove_model_free(model);
  free(trees.parent);
  free(trees.token);
  free(trees.children);
  free(trees.child_begin);
  for (int k = 0; k < NUM_PARAMS; k++) free(params[k].data);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf(
      "c_api_test: %d trees, %d threads x %d runs: all equal; largest difference from the reference %.3g\n",
      NUM_TREES, NUM_THREADS, ROUNDS, worst);
  return 0;
}
