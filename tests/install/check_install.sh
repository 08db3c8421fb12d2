#!/usr/bin/env bash
# grove's install tree, checked as a user meets it (ctest: grove_install_consumer):
#   1. `cmake --install BUILD --prefix P` into a fresh temporary prefix; the files cmake/Install.cmake
#      promises are there; the installed binaries find grove's libraries relative to themselves, the
#      runtime library links no Halide or LLVM, and no object is in both shared libraries;
#   2. the installed grove writes random weights and compiles models/treelstm.grove ahead of time;
#      its library loads the installed runtime;
#   3. the consumer project (consumer/) configures with find_package(grove) from P alone and builds;
#   4. its program, on the same trees and weights as the installed `grove run`, matches it through
#      grove_model_compile (grove::compiler), `grove compile`'s shared library (grove::runtime alone)
#      and its static library; linked with grove::runtime alone it cannot compile, and says so;
#      it opens and runs a Relay program through grove_relay_* (grove::compiler), and without the
#      compiler says so;
#   5. with the Python package installed (and no sanitizers), `import grove` loads it from P.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR CMAKE SANITIZE(0|1)
set -euo pipefail
build=$1 source=$2 cmake=$3 sanitize=${4:-0}

work=$(mktemp -d "${TMPDIR:-/tmp}/grove-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() {
  echo "check_install: $*" >&2
  exit 1
}
# Runs a command quietly, showing its output only when it fails.
quietly() {
  "$@" >"$work/last.log" 2>&1 || {
    cat "$work/last.log" >&2
    fail "failed: $*"
  }
}

# 1. The install tree.
quietly "$cmake" --install "$build" --prefix "$prefix"
for file in bin/grove lib/libgrove_runtime.so lib/libgrove_compiler.so include/grove/grove.h \
  lib/cmake/grove/groveConfig.cmake lib/cmake/grove/groveConfigVersion.cmake lib/cmake/grove/groveTargets.cmake; do
  [[ -e $prefix/$file ]] || fail "the install tree lacks $file"
done
runpath() { readelf -d "$1" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p'; }
# shellcheck disable=SC2016 # $ORIGIN is literal: the loader expands it
for check in 'bin/grove:$ORIGIN/../lib' 'lib/libgrove_runtime.so:$ORIGIN' 'lib/libgrove_compiler.so:$ORIGIN'; do
  file=${check%%:*} expected=${check#*:}
  [[ $(runpath "$prefix/$file") == "$expected" ]] ||
    fail "$file's run path is '$(runpath "$prefix/$file")', expected '$expected'"
done
# (Pipes into `grep -q` would fail under pipefail when grep stops reading early: grep reads strings.)
needed=$(readelf -d "$prefix/lib/libgrove_runtime.so" | grep NEEDED)
if grep -qiE 'halide|llvm|grove_compiler' <<<"$needed"; then fail "libgrove_runtime.so links the compiler: $needed"; fi
if grep -rqF -e "$build" "$prefix/lib/cmake/grove"; then fail "the package config names the build folder $build"; fi
# Strong definitions only: inline functions and templates (weak, unique) are legitimately in both.
strong() { nm -D --defined-only "$1" | awk '$2 ~ /^[TDBR]$/ && $3 !~ /^_(init|fini)$/ {print $3}' | sort -u; }
both=$(comm -12 <(strong "$prefix/lib/libgrove_runtime.so") <(strong "$prefix/lib/libgrove_compiler.so"))
[[ -z $both ]] || fail "defined in both libgrove_runtime.so and libgrove_compiler.so: $(head -5 <<<"$both")"

# 2. Random weights and `grove compile`'s libraries, by the installed program.
grove=$prefix/bin/grove model=$source/models/treelstm.grove
quietly "$grove" init-weights "$model" --sizes H=16,D=8,V=10 --seed 3 --out "$work/weights.safetensors"
quietly "$grove" compile "$model" --weights "$work/weights.safetensors" -o "$work/aot"
[[ -e $work/aot/libtreelstm.so && -e $work/aot/libtreelstm.a && -e $work/aot/treelstm.h ]] ||
  fail "grove compile did not write libtreelstm.so, libtreelstm.a and treelstm.h: $(ls "$work/aot")"
loads=$(ldd "$work/aot/libtreelstm.so")
grep -qF "$prefix/lib/libgrove_runtime.so" <<<"$loads" ||
  fail "grove compile's library does not load the installed runtime: $(grep grove <<<"$loads" || true)"

# 3. The consumer, configured from the install tree alone: no package registry, no build folder.
flags=()
if [[ $sanitize == 1 ]]; then
  flags=("-DCMAKE_C_FLAGS=-fsanitize=address,undefined" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined")
fi
quietly "$cmake" -S "$source/tests/install/consumer" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DGROVE_MODEL_DIR="$work/aot" "${flags[@]}"
grep -qxF "grove_DIR:PATH=$prefix/lib/cmake/grove" "$work/consumer/CMakeCache.txt" ||
  fail "find_package(grove) did not find $prefix/lib/cmake/grove: $(grep grove_DIR "$work/consumer/CMakeCache.txt")"
quietly "$cmake" --build "$work/consumer"
for program in consumer_runtime consumer_compiler consumer_static; do
  loads=$(ldd "$work/consumer/$program")
  grep -qF "$prefix/lib/libgrove_runtime.so" <<<"$loads" ||
    fail "$program does not load the installed runtime: $(grep grove <<<"$loads" || true)"
done

# 4. Same trees, same weights: the C API three ways against the installed `grove run`.
quietly "$work/consumer/consumer_runtime" write-trees "$work/trees.txt"
quietly "$grove" run "$model" --weights "$work/weights.safetensors" --trees "$work/trees.txt" --out "$work/roots.npy"
run() { "$work/consumer/$1" "${@:2}" "$work/weights.safetensors" "$work/roots.npy"; }
run consumer_compiler compile "$model" || fail "grove_model_compile's results differ from grove run's"
run consumer_runtime open "$work/aot/libtreelstm.so" || fail "grove compile's libtreelstm.so differs from grove run"
run consumer_static static || fail "grove compile's libtreelstm.a differs from grove run"
# grove::runtime alone holds no compiler: grove_model_compile says so (GROVE_ERROR_UNSUPPORTED).
if run consumer_runtime compile "$model" 2>"$work/unsupported.log"; then
  fail "grove_model_compile succeeded in a program linked with grove::runtime alone"
fi
grep -qF "does not contain grove's compiler" "$work/unsupported.log" ||
  fail "grove_model_compile without the compiler: unexpected message: $(cat "$work/unsupported.log")"
# A Relay program through grove_relay_open_text: grove::compiler holds the Relay back end too.
"$work/consumer/consumer_compiler" relay || fail "grove_relay_* through grove::compiler failed"
if "$work/consumer/consumer_runtime" relay 2>"$work/relay_unsupported.log"; then
  fail "grove_relay_open_text succeeded in a program linked with grove::runtime alone"
fi
grep -qF "does not contain grove's Relay back end" "$work/relay_unsupported.log" ||
  fail "grove_relay_open_text without the compiler: unexpected message: $(cat "$work/relay_unsupported.log")"

# 5. The Python package, from the install tree (an instrumented module cannot load into python3).
package=$prefix/lib/python3/dist-packages
if [[ -e $package/grove/__init__.py && $sanitize != 1 && -x /usr/bin/python3 ]]; then
  loaded=$(cd "$work" && PYTHONPATH=$package /usr/bin/python3 -c 'import grove; print(grove.__file__)') ||
    fail "import grove from $package failed"
  [[ $loaded == "$package"/grove/* ]] || fail "import grove loaded $loaded, not the installed package"
else
  echo "check_install: no Python package installed, or a sanitizer build: import grove is not checked"
fi
echo "check_install: the install tree at a fresh prefix works"
