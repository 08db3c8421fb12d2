# grove's entry points: `make build`, `make run` (the SST TreeLSTM demo), `make test`, `make format`;
# `make test-sanitize` (the suite under ASan + UBSan), `make test-tsan` (the concurrency suites under
# ThreadSanitizer) and `make fuzz FUZZ_SECONDS=N` (every fuzz target).
BUILD_DIR := build
JOBS := 2
CLANG_FORMAT := $(shell command -v clang-format-14 || command -v clang-format)
# xargs -r: with no tracked sources, clang-format must not wait on stdin.
TRACKED_SOURCES := git ls-files -z '*.h' '*.cpp' | xargs -0 -r
SST := datasets/sst
WEIGHTS := $(BUILD_DIR)/treelstm-h256.safetensors

.PHONY: configure build run test test-sanitize test-tsan fuzz format format-check clean

# The Debian packages and the configured build tree; `build` builds everything (the test suite too),
# `run` only the grove program it runs.
configure:
	scripts/install-deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

run: configure
	cmake --build $(BUILD_DIR) -j$(JOBS) --target grove
	./$(BUILD_DIR)/tools/grove init-weights models/treelstm.grove \
	  --sizes H=256,D=256,V=$$(wc -l < $(SST)/vocab.txt) --seed 1 --out $(WEIGHTS)
	./$(BUILD_DIR)/tools/grove run models/treelstm.grove --weights $(WEIGHTS) \
	  --trees $(SST)/test.txt --vocab $(SST)/vocab.txt --out $(BUILD_DIR)/sst-test-roots.npy --batch 10 --stats

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS)
	$(MAKE) format-check

# The whole suite built with AddressSanitizer and UndefinedBehaviorSanitizer. Halide's JIT-compiled code
# is not instrumented; tests/sanitizers/lsan.supp holds leak suppressions for libraries grove does not own.
ASAN_BUILD_DIR := build-asan
# Extra ctest arguments for the sanitized run; e.g. SANITIZE_CTEST_ARGS='-E grove_scheduling_properties'
# leaves out the schedule sweep (it checks Halide-generated code, which the sanitizers do not see).
SANITIZE_CTEST_ARGS :=
# Suites the sanitized build leaves out altogether (a ;-list of grove_add_gtest names, tests/CMakeLists.txt).
SANITIZE_SKIP_SUITES :=
SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-sanitize:
	scripts/install-deps
	cmake -S . -B $(ASAN_BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
	  -DGROVE_SANITIZE=ON -DGROVE_SKIP_SUITES="$(SANITIZE_SKIP_SUITES)"
	cmake --build $(ASAN_BUILD_DIR) -j$(JOBS)
	$(SANITIZER_ENV) ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure -j$(JOBS) $(SANITIZE_CTEST_ARGS)

# The concurrency suites under ThreadSanitizer (tests/CMakeLists.txt: only the targets of
# grove_tsan_tests are built). Halide's generated code is instrumented and its parallel loops run on
# std::threads (backends/cpu/TsanParallel.h); tests/sanitizers/tsan.supp may name only libraries
# grove does not own, and the MPI runs use tsan-mpi.supp, for Open MPI alone. The sequence and DAG
# streams are left out (compile-bound; the tree streams run the same reader thread).
TSAN_BUILD_DIR := build-tsan
TSAN_OPTIONS_BASE := halt_on_error=1:second_deadlock_stack=1
TSAN_CTEST := ctest --test-dir $(TSAN_BUILD_DIR) --output-on-failure -j$(JOBS)
test-tsan:
	scripts/install-deps
	cmake -S . -B $(TSAN_BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
	  -DCMAKE_C_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" -DGROVE_TSAN=ON
	cmake --build $(TSAN_BUILD_DIR) -j$(JOBS) --target grove_tsan_tests
	TSAN_OPTIONS=$(TSAN_OPTIONS_BASE):suppressions=$(CURDIR)/tests/sanitizers/tsan.supp \
	  $(TSAN_CTEST) -E '^(MpiRun|StreamRun)\.'
	TSAN_OPTIONS=$(TSAN_OPTIONS_BASE):suppressions=$(CURDIR)/tests/sanitizers/tsan-mpi.supp \
	  $(TSAN_CTEST) -R '^MpiRun\.' -E '^MpiRun\.SequencesAndDags'

# libFuzzer targets (fuzz/), built with clang++-14, each run FUZZ_SECONDS on its seed corpus
# fuzz/corpus/<reader>/; new inputs go to $(FUZZ_BUILD_DIR)/corpus/, crashes to $(FUZZ_BUILD_DIR)/findings/.
FUZZ_BUILD_DIR := build-fuzz
FUZZ_SECONDS := 60
FUZZERS := fuzz_model fuzz_ptb fuzz_ptb_vocab fuzz_vocab fuzz_glove fuzz_safetensors fuzz_npy fuzz_structures fuzz_input_stream fuzz_relay fuzz_relay_arrays fuzz_tvm_metadata fuzz_relay_vm fuzz_relay_program fuzz_onnx fuzz_model_abi fuzz_c_api
fuzz:
	cmake -S . -B $(FUZZ_BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGROVE_FUZZ=ON -DGROVE_BUILD_TESTS=OFF \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
	cmake --build $(FUZZ_BUILD_DIR) -j$(JOBS) --target $(FUZZERS)
	mkdir -p $(FUZZ_BUILD_DIR)/findings
	set -e; for f in $(FUZZERS); do \
	  reader=$${f#fuzz_}; reader=$${reader%_vocab}; \
	  dict=; if [ -f fuzz/$$reader.dict ]; then dict=-dict=fuzz/$$reader.dict; fi; \
	  mkdir -p $(FUZZ_BUILD_DIR)/corpus/$$f; \
	  ./$(FUZZ_BUILD_DIR)/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD_DIR)/findings/$$f- $$dict \
	    $(FUZZ_BUILD_DIR)/corpus/$$f fuzz/corpus/$$reader; \
	done

# grove against its peers, one run (experiments/bench.py; about 20 minutes): writes experiments/results/.
# `make bench BENCH_ARGS=--quick` runs a small subset; any other bench.py option goes in BENCH_ARGS too.
.PHONY: bench
BENCH_ARGS :=
bench: build
	/usr/bin/python3 experiments/bench.py --grove $(BUILD_DIR)/tools/grove --work $(BUILD_DIR)/bench-data $(BENCH_ARGS)

format:
	$(TRACKED_SOURCES) $(CLANG_FORMAT) -i

format-check:
	$(TRACKED_SOURCES) $(CLANG_FORMAT) --dry-run --Werror

clean:
	rm -rf $(BUILD_DIR)
