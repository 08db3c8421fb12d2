/* A C program linked against libgrove_runtime alone that runs a library written by `grove compile`
 * (a CUDA one in test_cuda_library.cpp) through the C API:
 *
 *   cuda_library_run LIBRARY WEIGHTS TREES OUT [BATCH]
 *
 * WEIGHTS is a safetensors file, or "-" for a library with embedded weights. TREES has one tree per
 * line in the child form of grove_trees: n, then n tokens, then n + 1 child_begin offsets, then the
 * children (local ids). OUT gets the roots' rows as raw float32, written only when every call
 * succeeded. A failure prints "STATUS: MESSAGE" (grove_status_string, grove_last_error) and exits 1. */
#include <grove/grove.h>
#include <stdio.h>
#include <stdlib.h>

/* What main allocated, freed on every way out (the sanitized CI run checks for leaks). */
static grove_model *model = NULL;
static int64_t *node_begin = NULL, *child_begin = NULL;
static int32_t *token = NULL, *children = NULL;
static float *out = NULL;

static int finish(int code) {
  grove_model_free(model);
  free(out);
  free(node_begin);
  free(child_begin);
  free(token);
  free(children);
  return code;
}

static int fail(grove_status status) {
  fprintf(stderr, "%s: %s\n", grove_status_string(status), grove_last_error());
  return finish(1);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s LIBRARY WEIGHTS TREES OUT [BATCH]\n", argv[0]);
    return 2;
  }
  grove_status s = grove_model_open(argv[1], &model);
  if (s != GROVE_OK) return fail(s);
  if (argv[2][0] != '-' && (s = grove_model_bind_weights_file(model, argv[2])) != GROVE_OK) return fail(s);

  FILE *in = fopen(argv[3], "r");
  if (!in) return finish(2);
  int64_t num_trees = 0, nodes = 0, edges = 0, capacity = 1 << 16;
  node_begin = calloc((size_t)capacity, sizeof(int64_t));
  child_begin = calloc((size_t)capacity, sizeof(int64_t));
  token = calloc((size_t)capacity, sizeof(int32_t));
  children = calloc((size_t)capacity, sizeof(int32_t));
  long n;
  while (fscanf(in, "%ld", &n) == 1) {
    for (long i = 0; i < n; ++i) fscanf(in, "%d", &token[nodes + i]);
    for (long i = 0; i <= n; ++i) {
      long c;
      fscanf(in, "%ld", &c);
      child_begin[nodes + i] = edges + c;
    }
    long m = (long)(child_begin[nodes + n] - edges);
    for (long i = 0; i < m; ++i) {
      int c;
      fscanf(in, "%d", &c);
      children[edges + i] = (int32_t)(nodes + c);
    }
    nodes += n;
    edges += m;
    node_begin[++num_trees] = nodes;
  }
  fclose(in);

  grove_model_info info;
  if ((s = grove_model_get_info(model, &info)) != GROVE_OK) return fail(s);
  grove_trees trees = {num_trees, node_begin, NULL, child_begin, children, token};
  grove_run_options options = {argc > 5 ? atoll(argv[5]) : 0};
  out = malloc(sizeof(float) * (size_t)(num_trees * info.output_elements + 1));
  int64_t rows = 0;
  /* Twice: the second call of a shape reuses its buffers (and graph). */
  for (int pass = 0; pass < 2; ++pass)
    if ((s = grove_model_run_trees(model, &trees, &options, out, num_trees * info.output_elements, &rows)) !=
        GROVE_OK)
      return fail(s);
  FILE *o = fopen(argv[4], "wb");
  if (!o) return finish(2);
  const size_t written = fwrite(out, sizeof(float), (size_t)(rows * info.output_elements), o);
  fclose(o);
  if (written != (size_t)(rows * info.output_elements)) return finish(2);
  printf("%lld rows of %lld\n", (long long)rows, (long long)info.output_elements);
  return finish(0);
}
