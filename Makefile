# grove's entry points: `make build`, `make run` (the SST TreeLSTM demo), `make test`, `make format`.
BUILD_DIR := build
JOBS := 2
CLANG_FORMAT := $(shell command -v clang-format-14 || command -v clang-format)
# xargs -r: with no tracked sources, clang-format must not wait on stdin.
TRACKED_SOURCES := git ls-files -z '*.h' '*.cpp' | xargs -0 -r
SST := datasets/sst
WEIGHTS := $(BUILD_DIR)/treelstm-h256.safetensors

.PHONY: build run test format format-check clean

build:
	scripts/install-deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j$(JOBS)

run: build
	./$(BUILD_DIR)/tools/grove init-weights models/treelstm.grove \
	  --sizes H=256,D=256,V=$$(wc -l < $(SST)/vocab.txt) --seed 1 --out $(WEIGHTS)
	./$(BUILD_DIR)/tools/grove run models/treelstm.grove --weights $(WEIGHTS) \
	  --trees $(SST)/test.txt --vocab $(SST)/vocab.txt --out $(BUILD_DIR)/sst-test-roots.npy --batch 10 --stats

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS)
	$(MAKE) format-check

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
