#!/usr/bin/env python3
"""How many of TVM's own Relay text-format test programs grove reads (issue 25, item 2).

Reads the Python tests of a TVM source checkout (a work tree, or a git directory and a revision),
collects with Python's `ast` the Relay programs they hand to TVM's parser, drops those outside the
goal, writes each to a file and runs grove on it:

    experiments/tvm_text_tests.py --tvm /path/to/tvm [--rev v0.13.0] [--grove build/tools/grove] \
        [--out experiments/results/tvm_text_tests.md] [--keep DIR]

What a program is:
  1. every call of TVM's parser — `tvm.parser.parse`, `tvm.parser.fromtext`, `tvm.relay.parse`,
     `tvm.relay.fromtext`, `tvm.relay.parse_expr`, `relay.parse`, ... (`parse_expr` reads an
     expression, the others a module) — and of every function of the same file that passes one of
     its parameters to such a call (test_ir_parser's `parse_text`, `parse_module`, `assert_parses_as`,
     any depth), whose text argument can be computed without running the test: string literals,
     `+` of strings, module-level string constants (`SEMVER`, `LIST_DEFN`), local variables assigned
     once from those, f-strings without fields;
  2. every other string constant that starts with `#[version` (a module TVM's tests print or parse).
What is outside the goal (counted apart, with the reason):
  - a program a test expects to fail: inside `with pytest.raises(...)` (grove should reject those
    too; the report says whether it does);
  - device planning (`on_device`, `device_copy`, virtual devices), lowering-only operators
    (`memory.*`, `vm.*`, `call_lowered`, ...), vector dtypes (`float32x4`), `extern`;
  - a program whose `meta[...]` refer to a table the test gives the parser from Python
    (`init_meta_table`) rather than to a `#[metadata]` section of the text.
How grove reads it, matching what TVM does with it:
  - a module: `grove relay check FILE` (TVM's parse runs InferType on the module);
  - an expression: `grove relay equal FILE FILE`, which parses without type-checking, as TVM's
    `parse_expr` does; grove reads a file holding one expression (after optional `free_var`s) as
    `@main`. Whether `grove relay check` also types it is reported as well.
A failure's first error line is grouped by cause; a program rejected only for an operator grove
does not have is counted apart ("would pass but for operator X").
"""

import argparse
import ast
import collections
import copy
import os
import re
import subprocess
import sys
import tempfile

TEST_DIRS = ["tests/python/relay"]

PARSE_FUNCS = {"parse": "module", "fromtext": "module", "parse_module": "module", "parse_expr": "expr"}
PARSE_PREFIXES = {"tvm", "relay", "parser"}

DEVICE_RE = re.compile(r"\bon_device\b|\bdevice_copy\b|virtual_device|\bVirtualDevice\b")
LOWERING_RE = re.compile(
    r"\b(memory\.\w+|vm\.\w+|call_lowered|annotation\.\w+|dyn\.\w+_tensor|"
    r"device_api\.\w+|alloc_storage|alloc_tensor|invoke_tvm_op|shape_func|reshape_tensor)\b")
VECTOR_DTYPE_RE = re.compile(r"\b(u?int|float|bfloat)\d+x\d+\b")
EXTERN_RE = re.compile(r"\bextern\b|Extern\s*=")


class Tvm:
    """The test files, from a work tree or from `git show REV:path` of a git directory."""

    def __init__(self, root, rev):
        self.root, self.rev = root, rev
        self.git = rev is not None
        if self.git:
            self.commit = self._git("rev-parse", rev + "^{commit}").strip()
        else:
            try:
                self.commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                                             text=True, check=True).stdout.strip()
            except (OSError, subprocess.CalledProcessError):
                self.commit = "(not a git work tree)"

    def _git(self, *args):
        return subprocess.run(["git", "--git-dir", self.root, *args], capture_output=True, text=True,
                              check=True).stdout

    def files(self):
        if self.git:
            names = self._git("ls-tree", "-r", "--name-only", self.commit, "--", *TEST_DIRS).split("\n")
        else:
            names = []
            for d in TEST_DIRS:
                for dirpath, _, files in os.walk(os.path.join(self.root, d)):
                    names += [os.path.relpath(os.path.join(dirpath, f), self.root) for f in files]
        return sorted(n for n in names if n.endswith(".py"))

    def read(self, name):
        if self.git:
            return self._git("show", f"{self.commit}:{name}")
        with open(os.path.join(self.root, name), encoding="utf-8") as f:
            return f.read()


# ----------------------------------------------------------------------------------------------
# Extraction
# ----------------------------------------------------------------------------------------------

class Unknown(Exception):
    pass


def evaluate(node, env):
    """The string `node` computes, or Unknown."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(env.get(node.id), str):
        return env[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return evaluate(node.left, env) + evaluate(node.right, env)
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(v.value for v in node.values)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
            and node.func.attr in ("strip", "lstrip", "rstrip")):
        return getattr(evaluate(node.func.value, env), node.func.attr)()
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and not node.keywords):
        return evaluate(node.func.value, env).format(*[evaluate(a, env) for a in node.args])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        return evaluate(node.left, env) % tuple(evaluate(v, env) for v in values)
    raise Unknown()


def strings_of(node, env):
    """The strings a literal collection (or a module-level name of one) holds: a dict's keys."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "keys":
        node = node.func.value
    if isinstance(node, ast.Name):
        return env.get(("collection", node.id))
    if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        elts = node.keys if isinstance(node, ast.Dict) else node.elts
        if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
            return sorted(e.value for e in elts)
    return None


def dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return list(reversed(parts))
    return None


def parser_mode(call):
    """'module' or 'expr' for a call of TVM's parser, else None."""
    name = dotted(call.func)
    if not name or len(name) < 2 or name[-1] not in PARSE_FUNCS:
        return None
    if not PARSE_PREFIXES & set(name[:-1]):
        return None
    return PARSE_FUNCS[name[-1]]


def text_arg(call):
    if call.args:
        return call.args[0]
    for k in call.keywords:
        if k.arg in ("source", "text", "code", "source_code", "expr"):
            return k.value
    return None


def augmented(node, parents):
    """Whether `node` is assigned to a name that is later extended with `+=` (its text is built at run time)."""
    assign = parents.get(node)
    if not isinstance(assign, ast.Assign):
        return False
    names = {t.id for t in assign.targets if isinstance(t, ast.Name)}
    scope = assign
    while scope in parents and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = parents[scope]
    return any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id in names
               for n in ast.walk(scope))


def assigned_strings(func, env):
    """Local names assigned exactly once in `func` from a computable string."""
    counts, values = collections.Counter(), {}
    for node in ast.walk(func):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] += 1
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    counts[t.id] += 1
                    try:
                        values[t.id] = evaluate(node.value, env)
                    except Unknown:
                        values.pop(t.id, None)
    return {k: v for k, v in values.items() if counts[k] == 1}


class Program:
    def __init__(self, file, line, test, text, mode, excluded=None):
        self.file, self.line, self.test, self.text, self.mode = file, line, test, text, mode
        self.excluded = excluded


def extract(name, source):
    """The programs of one test file, and the number of parser calls whose text is not computable."""
    tree = ast.parse(source)
    module_env = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                module_env[node.targets[0].id] = evaluate(node.value, module_env)
            except Unknown:
                values = strings_of(node.value, module_env)
                if values is not None:
                    module_env[("collection", node.targets[0].id)] = values
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def enclosing_function(node):
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return None

    # Wrappers: function name -> [(parameter names, the text argument's expression, mode)], found to a
    # fixpoint so that assert_parses_as -> parse_text -> tvm.relay.parse_expr is one wrapper too.
    wrappers = {}

    def call_mode(call):
        """[(text expression, mode, env of the callee's parameters)] for a parser or wrapper call."""
        mode = parser_mode(call)
        if mode:
            arg = text_arg(call)
            return [(arg, mode, {})] if arg is not None else []
        if isinstance(call.func, ast.Name) and call.func.id in wrappers:
            out = []
            for params, expr, mode in wrappers[call.func.id]:
                bound = dict(zip(params, call.args))
                for k in call.keywords:
                    if k.arg in params:
                        bound[k.arg] = k.value
                out.append((expr, mode, bound))
            return out
        return []

    changed = True
    while changed:
        changed = False
        for f in functions:
            params = [a.arg for a in f.args.args]
            for node in ast.walk(f):
                if not isinstance(node, ast.Call):
                    continue
                for expr, mode, bound in call_mode(node):
                    # The text reaches the parser from one of f's parameters: substitute what the
                    # call passes, then see whether f's own parameter is what remains.
                    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
                    if bound:
                        names = set()
                        for p, arg in bound.items():
                            if any(isinstance(n, ast.Name) and n.id == p for n in ast.walk(expr)):
                                names |= {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
                    hit = [p for p in params if p in names]
                    if not hit:
                        continue
                    entry = (params, substitute(expr, bound), mode)
                    known = wrappers.setdefault(f.name, [])
                    if all(ast.dump(e[1]) != ast.dump(entry[1]) or e[2] != mode for e in known):
                        known.append(entry)
                        changed = True

    # Only `pytest.raises` says the parser must fail: an `xfail` test (test_copy_to_output) parses its
    # program and fails later.
    def expected_failure(node):
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.With):
                for item in node.items:
                    d = item.context_expr
                    if isinstance(d, ast.Call) and (dotted(d.func) or [""])[-1] == "raises":
                        return True
        return False

    def loop_envs(node, env):
        """One environment per iteration of the `for NAME in COLLECTION` loops around `node`."""
        envs = [env]
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                values = strings_of(node.iter, env)
                if values is not None:
                    envs = [dict(e, **{node.target.id: v}) for e in envs for v in values]
        return envs

    programs, uncomputable, seen_nodes = [], 0, set()
    env_cache = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = enclosing_function(node)
        if f is not None and f.name in wrappers:
            params = [a.arg for a in f.args.args]
            # A call inside a wrapper that passes the wrapper's parameter is counted at its callers.
            if any(isinstance(n, ast.Name) and n.id in params for arg in node.args for n in ast.walk(arg)):
                continue
        for expr, mode, bound in call_mode(node):
            if f not in env_cache:
                env = dict(module_env)
                if f is not None:
                    env.update(assigned_strings(f, module_env))
                env_cache[f] = env
            texts = []
            for env in loop_envs(node, env_cache[f]):
                try:
                    texts.append(evaluate(substitute(expr, bound), env))
                except Unknown:
                    texts = []
                    break
            if not texts:
                uncomputable += 1
                continue
            seen_nodes |= {id(n) for n in ast.walk(expr)} | {id(n) for a in bound.values() for n in ast.walk(a)}
            for text in texts:
                p = Program(name, node.lineno, f.name if f else "<module>", text, mode)
                if expected_failure(node):
                    p.excluded = "a test expects it to fail"
                programs.append(p)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in seen_nodes
                and node.value.lstrip().startswith("#[version")):
            if augmented(node, parents):
                uncomputable += 1
                continue
            f = enclosing_function(node)
            p = Program(name, node.lineno, f.name if f else "<module>", node.value, "module")
            if expected_failure(node):
                p.excluded = "a test expects it to fail"
            programs.append(p)
    return programs, uncomputable


def substitute(expr, bound):
    """`expr` with the parameter names in `bound` replaced by the caller's argument expressions."""
    if not bound:
        return expr

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            return bound.get(node.id, node)

    return Sub().visit(copy.deepcopy(expr))


def outside_goal(text):
    if DEVICE_RE.search(text):
        return "device planning (on_device, device_copy, virtual devices)"
    if LOWERING_RE.search(text):
        return "lowering-only operators"
    if VECTOR_DTYPE_RE.search(text):
        return "vector dtypes"
    if EXTERN_RE.search(text):
        return "extern"
    if "meta[" in text and "#[metadata]" not in text:
        # The test passes the table to the parser from Python (init_meta_table).
        return "meta[...] from a metadata table given in Python"
    return None


# ----------------------------------------------------------------------------------------------
# Running grove
# ----------------------------------------------------------------------------------------------

MISSING_OP_RE = re.compile(r"grove does not support the operator '([^']+)'")
OP_TYPE_RE = re.compile(r"type error in ([\w.]+): ")


def first_error(stderr, stdout):
    for line in (stderr + "\n" + stdout).splitlines():
        line = line.strip()
        if line:
            return line
    return "(no message)"


def run(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return r.returncode, first_error(r.stderr, r.stdout)
    except subprocess.TimeoutExpired:
        return 124, "timed out after 60 s"


def round_trip(grove, path):
    """None if grove's printed text of the typed program reads back as the same module, else what went
    wrong: print it with every type written (`opt --passes infer`), read that and print it again."""
    once, twice = path[:-len(".relay")] + ".printed.relay", path[:-len(".relay")] + ".reprinted.relay"
    for src, dst in ((path, once), (once, twice)):
        rc, msg = run([grove, "relay", "opt", src, "--passes", "infer", "--out", dst])
        if rc != 0:
            return msg
    rc, msg = run([grove, "relay", "equal", once, twice])
    return None if rc == 0 else msg


def strip_location(message, path):
    """grove's message without `grove: `, `error: ` and the program's file:line:col."""
    m = re.sub(r"^grove:\s*", "", message)
    m = re.sub(r"^error:\s*", "", m)
    m = re.sub("^" + re.escape(path) + r"(:\d+:\d+)?:\s*", "", m)
    return re.sub(r"^error:\s*", "", m)


def cause_of(message, path):
    """(kind, key): an operator grove lacks, an operator's type relation, or another cause with the
    program-specific names taken out, to group failures."""
    m = strip_location(message, path)
    op = MISSING_OP_RE.search(m)
    if op:
        return "missing operator", op.group(1)
    op = OP_TYPE_RE.match(m)
    if op:
        return "operator relation", op.group(1)
    m = re.sub(r"'[^']*'", "'…'", m)
    m = re.sub(r"%[\w.]+|@[\w.]+", "…", m)
    m = re.sub(r"\b\d+\b", "N", m)
    return "other", m[:160]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tvm", required=True, help="TVM source: a work tree, or a git directory with --rev")
    ap.add_argument("--rev", help="read the tests at this revision of the git directory --tvm (e.g. v0.13.0)")
    ap.add_argument("--grove", default="build/tools/grove")
    ap.add_argument("--out", help="write the report (Markdown) here")
    ap.add_argument("--keep", help="write the programs to this directory and keep them")
    args = ap.parse_args()

    tvm = Tvm(args.tvm, args.rev)
    programs, uncomputable = [], 0
    for name in tvm.files():
        try:
            found, n = extract(name, tvm.read(name))
        except SyntaxError:
            continue
        programs += found
        uncomputable += n
    # One program per distinct text and mode (tests repeat strings): its first occurrence that no test
    # expects to fail, if there is one.
    first = {}
    for p in programs:
        key = (p.text, p.mode)
        if key not in first or (first[key].excluded and not p.excluded):
            first[key] = p
    unique = list(first.values())
    for p in unique:
        if not p.excluded:
            p.excluded = outside_goal(p.text)

    work = args.keep or tempfile.mkdtemp(prefix="tvm_text_tests.")
    os.makedirs(work, exist_ok=True)
    results, round_trips = [], []
    for i, p in enumerate(unique):
        if p.excluded:
            continue
        path = os.path.join(work, f"{i:03d}_{os.path.basename(p.file)[:-3]}_{p.line}.relay")
        with open(path, "w", encoding="utf-8") as f:
            f.write(p.text)
        parse_rc, parse_msg = run([args.grove, "relay", "equal", path, path])
        check_rc, check_msg = run([args.grove, "relay", "check", path])
        if p.mode == "module":
            ok, msg = check_rc == 0, check_msg
        else:
            ok, msg = parse_rc == 0, parse_msg
        results.append((p, path, ok, msg, parse_rc == 0, check_rc == 0, check_msg))
        if check_rc == 0:
            round_trips.append((p, round_trip(args.grove, path)))

    # The programs a test expects TVM to reject: grove should reject them too, at file:line:col.
    rejected, wrongly_accepted = 0, []
    for i, p in enumerate(unique):
        if p.excluded != "a test expects it to fail":
            continue
        path = os.path.join(work, f"{i:03d}_{os.path.basename(p.file)[:-3]}_{p.line}_fails.relay")
        with open(path, "w", encoding="utf-8") as f:
            f.write(p.text)
        rc, msg = run([args.grove, "relay", "check" if p.mode == "module" else "equal", path] +
                      ([] if p.mode == "module" else [path]))
        if rc != 0 and re.search(re.escape(path) + r":\d+:\d+", msg):
            rejected += 1
        elif p.mode == "expr" and re.match(r"\s*(#\[version[^\]]*\]\s*)?(def|type)\b", p.text):
            # TVM's parse_expr reads no definitions; grove reads the file as the module it is.
            wrongly_accepted.append((p, "a module, which parse_expr rejects for its definitions"))
        else:
            wrongly_accepted.append((p, msg))

    total = len(results)
    accepted = sum(r[2] for r in results)
    pct = 100.0 * accepted / total if total else 0.0
    groups = {kind: collections.defaultdict(list) for kind in ("missing operator", "operator relation", "other")}
    for p, path, ok, msg, _, _, _ in results:
        if ok:
            continue
        kind, key = cause_of(msg, path)
        where = re.match("^(?:grove: )?(?:error: )?" + re.escape(path) + r":(\d+:\d+)", msg)
        groups[kind][key].append((p, (where.group(1) + ": " if where else "") + strip_location(msg, path)))
    missing = sum(len(v) for v in groups["missing operator"].values())
    relation = sum(len(v) for v in groups["operator relation"].values())
    excluded = collections.Counter(p.excluded for p in unique if p.excluded)

    def percent(n):
        return f"{100.0 * n / total if total else 0:.1f}%"

    out = []
    out.append("# TVM's text-format test programs in grove\n")
    out.append(f"TVM `{args.rev or 'work tree'}` (commit `{tvm.commit}`), the Python tests under "
               f"`{' '.join(TEST_DIRS)}`; made by `experiments/tvm_text_tests.py` (see `experiments/README.md`).\n")
    out.append(f"**grove accepts {accepted} of {total} programs ({pct:.1f}%).** Of the rest, {missing} stop at an "
               f"operator grove does not have and {relation} at an operator's type relation (stricter than TVM's, "
               f"or a layout grove lacks): {percent(accepted + missing + relation)} but for operators.\n")
    modules = [r for r in results if r[0].mode == "module"]
    exprs = [r for r in results if r[0].mode == "expr"]
    out.append(f"- modules (`grove relay check`: parsed and typed, as TVM's `parse` types them): "
               f"{sum(r[2] for r in modules)} of {len(modules)}")
    out.append(f"- expressions (parsed, as TVM's `parse_expr`; grove reads one as `@main`): "
               f"{sum(r[2] for r in exprs)} of {len(exprs)}; `grove relay check` also types "
               f"{sum(r[5] for r in exprs)} of them (TVM's `parse_expr` does not type)")
    out.append(f"- found: {len(programs)} parser calls and `#[version` strings, {len(unique)} distinct programs; "
               f"{uncomputable} more whose text is built at run time (`expr.astext()`, `+=` loops) are not counted")
    out.append("- outside the goal (not counted): " + (", ".join(f"{n} {why}" for why, n in excluded.most_common())
                                                       or "none"))
    out.append(f"- of the {rejected + len(wrongly_accepted)} programs a test expects TVM to reject, grove rejects "
               f"{rejected} with an error at file:line:col" +
               "".join(f"; not {p.file}:{p.line} ({p.test}): {msg}" for p, msg in wrongly_accepted))
    bad_trips = [(p, m) for p, m in round_trips if m is not None]
    out.append(f"- round trip: grove's printed text of {len(round_trips) - len(bad_trips)} of the {len(round_trips)} "
               "programs grove types reads back as the same module (`opt --passes infer` twice, then `equal`)" +
               "".join(f"; not {p.file}:{p.line} ({p.test}): `{m}`" for p, m in bad_trips) + "\n")
    titles = {"missing operator": "Stopped at an operator grove does not have",
              "operator relation": "Stopped at an operator's type relation",
              "other": "Other failures, by cause"}
    for kind, title in titles.items():
        if not groups[kind]:
            continue
        out.append(f"## {title}\n")
        for key, fails in sorted(groups[kind].items(), key=lambda kv: (-len(kv[1]), kv[0])):
            out.append(f"### {len(fails)} × {'`' + key + '`' if kind != 'other' else key}\n")
            for p, msg in fails:
                out.append(f"- {p.file}:{p.line} ({p.test}, {p.mode}): `{msg}`")
            out.append("")
    report = "\n".join(out) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(report)
    sys.stdout.write(report)


if __name__ == "__main__":
    main()
