#ifndef GROVE_GROVE_H
#define GROVE_GROVE_H
/*
 * grove's C API, version 1: run recursive neural networks (TreeLSTM, TreeGRU, MV-RNN, DAG-RNN,
 * sequence LSTM/GRU, ...) compiled by grove, from C, C++ or anything with a C FFI.
 *
 *   grove_model *model;
 *   if (grove_model_open("out/libtreelstm.so", &model) != GROVE_OK ||      // `grove compile`'s output
 *       grove_model_bind_weights_file(model, "treelstm.safetensors") != GROVE_OK) {
 *     fprintf(stderr, "%s\n", grove_last_error());
 *     ...
 *   }
 *   grove_trees trees = {...};                                          // see grove_trees
 *   float *roots = malloc(sizeof(float) * trees.num_trees * info.output_elements);
 *   grove_model_run_trees(model, &trees, NULL, roots, capacity, &rows);
 *   grove_model_free(model);
 *
 * Libraries. Everything here is in libgrove_runtime (CMake: grove::runtime), except
 * grove_model_compile, which compiles a model file at run time and needs the compiler library
 * (grove::compiler); linked against the runtime alone it returns GROVE_ERROR_UNSUPPORTED.
 *
 * Errors. Every function that can fail returns a grove_status; on failure the calling thread's
 * grove_last_error() holds a message that says what was wrong and where (the file, the tree and
 * node, the tensor and its expected shape). No function aborts on bad input, and none writes to
 * the caller's output buffers unless it returns GROVE_OK.
 *
 * Threads. grove_model_run_* may be called from any number of threads at once on one model. The
 * bind functions may be called while runs are in flight, under any load: a run uses the weights
 * bound when it started for all of its work (never a mix of two sets), and a bind checks and packs
 * the new weights without stopping the runs, then makes them the ones later runs start with. A
 * bind waits for no run that started after it; it waits for the runs that started before it only
 * when the weights it replaces were bound in place (grove_model_bind_weights with copy = 0), so
 * that those buffers may be freed once it returns. grove_model_free must not race any other call
 * on the same model.
 *
 * Indices. Inputs are given as flat arrays over all nodes of a batch. Nodes are numbered globally,
 * 0 .. N-1 with N = node_begin[count]; input k owns nodes [node_begin[k], node_begin[k+1]), and every
 * index stored in parent, children or preds is such a global id of a node of the same input.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GROVE_API_VERSION 1

typedef enum grove_status {
  GROVE_OK = 0,
  GROVE_ERROR_INVALID_ARGUMENT = 1, /* API misuse: a null pointer, a negative count, a buffer too small */
  GROVE_ERROR_USER = 2,        /* bad input: a tree, weight file, model file or library that does not fit */
  GROVE_ERROR_UNSUPPORTED = 3, /* grove_model_compile without the compiler library */
  GROVE_ERROR_OUT_OF_MEMORY = 4,
  GROVE_ERROR_INTERNAL = 5 /* a bug in grove: please report the message */
} grove_status;

/* GROVE_API_VERSION of the library linked at run time. */
int grove_api_version(void);

/* The message of the last call on this thread that failed; "" if none did. Valid until the next
 * grove call on this thread. */
const char *grove_last_error(void);

/* "invalid argument", "user error", ... */
const char *grove_status_string(grove_status status);

typedef struct grove_model grove_model;

/* ---- Opening and compiling --------------------------------------------------------------------- */

/* What a library written by `grove compile` exports: its shared library defines
 * `const grove_compiled_model *grove_compiled_model_entry(void)`, its static library
 * `const grove_compiled_model *<model>_grove_model(void)` (declared in the generated header). */
typedef struct grove_compiled_model {
  int32_t abi_version;          /* the runtime refuses a version it does not read */
  const char *name;             /* the model's name */
  const char *abi_json;         /* arguments, layout, input checks (see backends/runtime/ModelAbi.h) */
  int (*entry)(void **args);    /* the compiled code, Halide's argv calling convention */
  int (*set_num_threads)(int);  /* the library's Halide runtime: halide_set_num_threads */
  const unsigned char *weights; /* with `--embed-weights`: a safetensors image; else NULL */
  uint64_t weights_size;
} grove_compiled_model;

/* Opens a shared library written by `grove compile` (dlopen). With embedded weights the model is
 * ready to run; otherwise bind weights first. */
grove_status grove_model_open(const char *library_path, grove_model **model);

/* The same for a model linked in statically: grove_model_open_compiled(treelstm_grove_model(), &m). */
grove_status grove_model_open_compiled(const grove_compiled_model *compiled, grove_model **model);

typedef struct grove_compile_options {
  const char *sizes;    /* "H=256,D=300,V=21701": needed when weights_file is NULL; else NULL */
  const char *schedule; /* overrides over the default schedule, "batch=on,unroll=2"; NULL: none */
  const char *target;   /* a Halide target string; NULL: "host" */
  int32_t threads;      /* > 0: the thread pool's size; 0: the machine's hardware threads */
} grove_compile_options;

/* Compiles a model file (`.grove`) at run time (JIT). With weights_file the weights are bound and
 * give the sizes; without it options->sizes must. options may be NULL. Needs grove::compiler. */
grove_status grove_model_compile(const char *model_file, const char *weights_file,
                                 const grove_compile_options *options, grove_model **model);

/* Frees the model (NULL is fine). Caller-owned weight buffers may be freed after this. */
void grove_model_free(grove_model *model);

/* ---- What a model is --------------------------------------------------------------------------- */

typedef enum grove_input_kind {
  GROVE_INPUT_TREES = 0, /* binary trees or trees of any arity: grove_model_run_trees */
  GROVE_INPUT_DAGS = 1   /* DAGs, grids and sequences: grove_model_run_dags, _grids, _sequences */
} grove_input_kind;

typedef struct grove_model_info {
  const char *name;      /* e.g. "treelstm" */
  const char *structure; /* "binary tree", "tree", "dag", "grid", "sequence" */
  grove_input_kind input;
  int32_t predecessor_slots; /* DAG models: slots per node; 0 for tree models */
  int64_t vocab_size;        /* tokens must be in [0, vocab_size); -1 if the model has no table */
  int64_t output_elements;   /* floats per output row (one tree's root state, e.g. H) */
  int32_t num_params;        /* weights the model needs: grove_model_param(0 .. num_params - 1) */
  const char *schedule;      /* the schedule compiled in, KEY=VALUE pairs */
} grove_model_info;

/* The strings stay valid as long as the model. */
grove_status grove_model_get_info(const grove_model *model, grove_model_info *info);

/* Parameter `index`: its name (e.g. "W_iou") and shape. */
grove_status grove_model_param(const grove_model *model, int32_t index, const char **name,
                               const int64_t **shape, int32_t *rank);

/* ---- Weights ----------------------------------------------------------------------------------- */

/* Reads a safetensors file (float32 tensors, the names and shapes of grove_model_param). */
grove_status grove_model_bind_weights_file(grove_model *model, const char *path);

typedef struct grove_tensor_view {
  const char *name;
  const float *data; /* row-major float32 */
  const int64_t *shape;
  int32_t rank;
} grove_tensor_view;

/* Binds every parameter from caller buffers: exactly the model's parameters, each with its shape.
 * copy = 0: the buffers are used in place and must stay alive and unchanged until the model is
 * freed or the next bind returns; copy = 1: they are copied now. */
grove_status grove_model_bind_weights(grove_model *model, const grove_tensor_view *tensors, size_t count,
                                      int copy);

/* ---- Running ----------------------------------------------------------------------------------- */

typedef struct grove_run_options {
  int64_t batch; /* inputs per call of the compiled code; 0: all in one call. Results agree
                    across batch sizes to float rounding, not bit for bit. */
} grove_run_options;

/* A batch of trees. Give either `parent` or `child_begin` + `children`:
 *   parent[i]: the global id of node i's parent, -1 for its tree's root; a node's children are
 *     ordered by id (the left child has the smaller id);
 *   children[child_begin[i] .. child_begin[i+1]): node i's children in order, child_begin with N + 1
 *     entries; the root is the one node of its tree that is no one's child.
 * token[i]: a leaf's token id in [0, vocab_size); -1 for an internal node. */
typedef struct grove_trees {
  int64_t num_trees;
  const int64_t *node_begin; /* num_trees + 1 entries, node_begin[0] = 0 */
  const int32_t *parent;     /* N entries, or NULL */
  const int64_t *child_begin;
  const int32_t *children;
  const int32_t *token; /* N entries */
} grove_trees;

/* Every tree's root state, tree by tree: rows = num_trees, rows × output_elements floats into out.
 * With out == NULL only *rows is set. capacity counts floats. */
grove_status grove_model_run_trees(const grove_model *model, const grove_trees *trees,
                                   const grove_run_options *options, float *out, int64_t capacity,
                                   int64_t *rows);

typedef enum grove_dag_outputs {
  GROVE_OUTPUTS_SINKS = 0,    /* each DAG's sinks (nodes that are no one's predecessor), in node order */
  GROVE_OUTPUTS_ALL_NODES = 1 /* every node, in node order */
} grove_dag_outputs;

/* A batch of DAGs: node i's predecessor slots are preds[pred_begin[i] .. pred_begin[i+1]) (global ids,
 * -1 for an empty slot), predecessor_slots of them per node; token[i] is node i's token. */
typedef struct grove_dags {
  int64_t num_dags;
  const int64_t *node_begin; /* num_dags + 1 */
  const int64_t *pred_begin; /* N + 1 */
  const int32_t *preds;
  const int32_t *token; /* N */
  grove_dag_outputs outputs;
} grove_dags;

grove_status grove_model_run_dags(const grove_model *model, const grove_dags *dags,
                                  const grove_run_options *options, float *out, int64_t capacity,
                                  int64_t *rows);

/* The direction a DAG-RNN sweeps a grid, named by the corner it runs towards; a cell's two
 * predecessor slots, an empty slot outside the grid: */
typedef enum grove_sweep {
  GROVE_SWEEP_SOUTHEAST = 0, /* the cell above, the cell to its left */
  GROVE_SWEEP_SOUTHWEST = 1, /* above, right */
  GROVE_SWEEP_NORTHEAST = 2, /* below, left */
  GROVE_SWEEP_NORTHWEST = 3  /* below, right */
} grove_sweep;

/* A batch of grids, each rows[k] × cols[k] tokens, row-major from tokens[token_begin[k]]. A grid
 * DAG-RNN's output: each grid's last cell (its one sink). */
typedef struct grove_grids {
  int64_t num_grids;
  const int32_t *rows;
  const int32_t *cols;
  const int64_t *token_begin; /* num_grids + 1 */
  const int32_t *tokens;
  grove_sweep sweep;
} grove_grids;

grove_status grove_model_run_grids(const grove_model *model, const grove_grids *grids,
                                   const grove_run_options *options, float *out, int64_t capacity,
                                   int64_t *rows);

/* A batch of sequences: sequence k is tokens[token_begin[k] .. token_begin[k+1]); its last token's
 * state is its output row. */
typedef struct grove_sequences {
  int64_t num_sequences;
  const int64_t *token_begin; /* num_sequences + 1 */
  const int32_t *tokens;
} grove_sequences;

grove_status grove_model_run_sequences(const grove_model *model, const grove_sequences *sequences,
                                       const grove_run_options *options, float *out, int64_t capacity,
                                       int64_t *rows);

#ifdef __cplusplus
}
#endif

#endif /* GROVE_GROVE_H */
