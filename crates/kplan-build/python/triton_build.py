"""Compile every Triton kernel in a Python file for each requested target, without a GPU.

kplan (crates/kplan-build/src/triton.rs) embeds this file and runs it with the Python that has
Triton. argv[1] is a JSON request; one JSON document goes to stdout. Each kernel goes through
triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget(...)); resource usage
comes from the compiled binary: cuobjdump --dump-resource-usage on the cubin (NVIDIA) and the
AMDGPU metadata in the assembly (AMD).

Signature and constexpr values, first match wins per parameter:
  1. the request's overrides (kplan build --triton-arg NAME=VALUE),
  2. a sidecar `<file stem>.kplan.toml` with `[kernels.<name>]` tables of NAME = VALUE,
  3. `# kplan: NAME=VALUE ...` comment lines directly above the kernel's decorators,
  4. the kernel itself: parameter annotations (`n: tl.int32`, `x: "*fp16"`), constexpr defaults,
     the first `triton.autotune` config (every config is compiled),
  5. inference: parameters that reach `tl.load`/`tl.store`/`tl.atomic_*`/block pointers or have
     `.dtype.element_ty` read are pointers to `dtype` (default fp32); names like eps/scale/alpha
     are fp32; other runtime parameters are i32.
Keys that are not parameters: dtype (pointer element type), num_warps, num_stages.
"""

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import types

from kplan_driver_common import error_line  # written beside this driver by kplan

POINTER_SINKS = {"load", "store", "make_block_ptr", "make_tensor_descriptor", "atomic_add", "atomic_max",
                 "atomic_min", "atomic_cas", "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor"}
FLOAT_NAME = re.compile(r"(^|_)(eps|epsilon|scale|alpha|beta|gamma|temperature|temp|softcap|momentum|"
                        r"dropout_p|p_drop|lr|weight_decay|factor|sm_scale|slope|threshold|theta)($|_)", re.I)
TRITON_TYPES = {"i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp8e4nv", "fp8e5",
                "fp8e4b8", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"}
DTYPE_ALIASES = {"f32": "fp32", "float32": "fp32", "float": "fp32", "f16": "fp16", "float16": "fp16",
                 "half": "fp16", "bfloat16": "bf16", "f64": "fp64", "float64": "fp64"}


class Stub:
    """A permissive stand-in for anything from an absent module: attributes, calls, indexing,
    arithmetic and subclassing all work; comparisons take the `>=` branch (version and
    capability checks at import time pick their modern path instead of raising)."""

    def __init__(self, name):
        object.__setattr__(self, "_kplan_name", name)

    def __repr__(self):
        return f"<kplan stub {self._kplan_name}>"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Stub(f"{self._kplan_name}.{name}")

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)

    def __call__(self, *args, **kwargs):
        # used as a decorator: keep the decorated function
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Stub):
            return args[0]
        return Stub(f"{self._kplan_name}()")

    def __getitem__(self, key):
        return Stub(f"{self._kplan_name}[]")

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return True

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def __index__(self):
        return 0

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __ge__(self, other):
        return True

    __gt__ = __ge__

    def __le__(self, other):
        return False

    __lt__ = __le__

    def __mro_entries__(self, bases):
        return (object,)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def _op(self, *args):
        return Stub(f"{self._kplan_name}(op)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _op
    __floordiv__ = __rfloordiv__ = __mod__ = __or__ = __ror__ = __and__ = __rand__ = __neg__ = _op


def stub_value(name):
    return Stub(name)


class StubModule(types.ModuleType):
    """Stands in for an absent import (torch, ...) so a kernel file still loads for compilation."""

    def __getattr__(self, name):
        if name == "__version__":
            return "2.9.0"  # version checks in the kernel's package take their modern branch
        if name.startswith("__"):
            raise AttributeError(name)
        value = stub_value(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots):
        self.roots = set(roots)

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def package_name(path):
    """(sys.path root, dotted module name) when the file sits in a package (`__init__.py` up the
    tree), so that its relative and package imports resolve to the files next to it."""
    directory = os.path.dirname(os.path.abspath(path))
    parts = [os.path.splitext(os.path.basename(path))[0]]
    while os.path.exists(os.path.join(directory, "__init__.py")):
        parts.insert(0, os.path.basename(directory))
        directory = os.path.dirname(directory)
    if len(parts) == 1 or not all(p.isidentifier() for p in parts):
        return None
    return directory, ".".join(parts)


def load_module(path):
    """Import the file; stub missing third-party modules (typically torch) and say which."""
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    pkg = package_name(path)
    if pkg and pkg[0] not in sys.path:
        sys.path.insert(0, pkg[0])
    stubbed = []
    for _ in range(8):
        try:
            if pkg:
                return importlib.import_module(pkg[1]), stubbed
            name = "kplan_triton_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module, stubbed
        except ModuleNotFoundError as exc:
            root = (exc.name or "").split(".")[0]
            if not root or root in stubbed or root == "triton" or (pkg and root == pkg[1].split(".")[0]):
                raise
            stubbed.append(root)
            sys.meta_path.insert(0, StubFinder(stubbed))
            for key in [k for k in sys.modules if k.split(".")[0] == root]:
                del sys.modules[key]
    raise RuntimeError("too many missing imports")


def find_kernels(module):
    """(name, JITFunction, autotune configs or None) for every kernel defined in the module."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    found = []
    for name, obj in vars(module).items():
        configs, heuristics, fn = None, [], obj
        while isinstance(fn, (Autotuner, Heuristics)):
            if isinstance(fn, Autotuner):
                configs = list(fn.configs)
            else:
                heuristics.extend(fn.values.keys())
            fn = fn.fn
        if isinstance(fn, JITFunction) and getattr(fn, "__module__", None) == module.__name__:
            found.append((name, fn, configs, heuristics))
    # A jit function called from another kernel's body is a device helper, not a launch target.
    called = set()
    for _, fn, _, _ in found:
        called |= {n.func.id for n in ast.walk(ast.parse(textwrap.dedent(fn.src)))
                   if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return [k for k in found if k[0] not in called], [k[0] for k in found if k[0] in called]


def directives_above(lines, def_line):
    """`# kplan: k=v ...` comments directly above the decorators of the def at 1-based def_line."""
    out, i = {}, def_line - 2
    while i >= 0 and lines[i].lstrip().startswith("@"):
        i -= 1
    while i >= 0 and lines[i].lstrip().startswith("#"):
        m = re.match(r"\s*#\s*kplan:\s*(.*)", lines[i])
        if m:
            for key, value in re.findall(r"((?:cuda:|hip:)?[A-Za-z_]\w*)\s*=\s*(\S+)", m.group(1)):
                out.setdefault(key, value)
        i -= 1
    return out


def read_sidecar(path, kernel):
    side = os.path.splitext(path)[0] + ".kplan.toml"
    if not os.path.exists(side):
        return {}, None
    try:
        import tomllib
    except ImportError:
        return {}, None
    with open(side, "rb") as f:
        data = tomllib.load(f)
    table = dict(data.get("defaults", {}))
    table.update(data.get("kernels", {}).get(kernel, {}))
    return {k: str(v) if not isinstance(v, str) else v for k, v in table.items()}, side


def additive_names(expr):
    """Names that may carry a pointer through `expr`: operands of + and - chains (a pointer is never
    multiplied, compared or divided), through conditional expressions and tl.where-like calls."""
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        return additive_names(expr.left) | additive_names(expr.right)
    if isinstance(expr, ast.IfExp):
        return additive_names(expr.body) | additive_names(expr.orelse)
    if isinstance(expr, ast.Subscript):  # X + offs[:, None] keeps X; offs[...] is not a pointer
        return set()
    return set()


INT_CONTEXT_OPS = (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.BitAnd,
                   ast.BitOr, ast.BitXor)
POINTERISH = re.compile(r"(ptr|Ptr|PTR|_p$|^p_)")


def pointer_params(fn):
    """Parameters used as pointers: they reach the address operand of a load/store/atomic/block
    pointer through + and - chains and local assignments, and never appear as an integer (in a
    product, a comparison, range() or tl.cdiv)."""
    tree = ast.parse(textwrap.dedent(fn.src))
    names = set(fn.arg_names)
    assigns = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigns.setdefault(t.id, set()).update(additive_names(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            assigns.setdefault(node.target.id, set()).update(additive_names(node.value))
    ints = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, INT_CONTEXT_OPS):
            for side in (node.left, node.right):
                if isinstance(side, ast.Name):
                    ints.add(side.id)
        elif isinstance(node, ast.Compare):
            ints |= {n.id for n in [node.left, *node.comparators] if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if fname in ("range", "cdiv", "static_range", "arange", "full", "multiple_of", "max_contiguous"):
                ints |= {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)} - \
                    ({node.args[0].id} if fname in ("multiple_of", "max_contiguous") and node.args
                     and isinstance(node.args[0], ast.Name) else set())
    sinks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if fname in POINTER_SINKS:
                sinks += node.args[:1] + [k.value for k in node.keywords if k.arg in ("pointer", "base", "ptr")]
        if isinstance(node, ast.Attribute) and node.attr == "element_ty" and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "dtype" and isinstance(node.value.value, ast.Name):
            sinks.append(node.value.value)
    ptrs = set()
    for expr in sinks:
        seen, todo, cands = set(), list(additive_names(expr)), set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in names:
                cands.add(n)
            todo.extend(assigns.get(n, ()))
        cands -= ints
        named = {c for c in cands if POINTERISH.search(c)}
        ptrs |= named or cands
    return ptrs


def literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return {"True": True, "False": False}.get(text, text)


def norm_type(text, default_dtype):
    t = text.strip().strip("'\"")
    ptr = t.startswith("*")
    base = DTYPE_ALIASES.get(t.lstrip("*"), t.lstrip("*"))
    if base == "dtype":
        base = default_dtype
    if base not in TRITON_TYPES:
        return None
    return ("*" if ptr else "") + base


def resolve(path, lines, name, fn, configs, overrides):
    """Signature, constexprs, options and where each value came from, or raise ValueError."""
    side, side_path = read_sidecar(path, name)
    comments = directives_above(lines, fn.starting_line_number if hasattr(fn, "starting_line_number") else 0) \
        if False else directives_above(lines, def_line(lines, name))
    given = {}
    for source, table in (("comment", comments), ("sidecar", side), ("override", overrides)):
        for k, v in table.items():
            given[k] = (v, source)
    default_dtype = norm_type(given.get("dtype", ("fp32", ""))[0], "fp32") or "fp32"
    sig, consts, origin = {}, {}, {}
    first_cfg = configs[0].kwargs if configs else {}
    ptrs = pointer_params(fn)
    params = inspect.signature(fn.fn).parameters
    for p in fn.params:
        n = p.name
        if p.is_constexpr:
            sig[n] = "constexpr"
            if n in given:
                consts[n], origin[n] = literal(given[n][0]), given[n][1]
            elif n in first_cfg:
                consts[n], origin[n] = first_cfg[n], "autotune"
            elif params[n].default is not inspect.Parameter.empty:
                d = params[n].default
                consts[n], origin[n] = getattr(d, "value", d), "default"
            elif guess_constexpr(n) is not None:
                consts[n], origin[n] = guess_constexpr(n), "guessed"
            else:
                raise ValueError(f"constexpr `{n}` of `{name}` has no value: give it a default, a "
                                 f"`# kplan: {n}=...` line above the kernel, or a sidecar {os.path.basename(path)[:-3]}"
                                 f".kplan.toml")
            continue
        if n in given:
            t = norm_type(given[n][0], default_dtype)
            if t is None:
                raise ValueError(f"`{n}={given[n][0]}` ({given[n][1]}) is not a Triton type such as *fp16, i32, fp32")
            sig[n], origin[n] = t, given[n][1]
        elif p.annotation_type:
            sig[n], origin[n] = p.annotation_type, "annotation"
        elif n in ptrs:
            sig[n], origin[n] = "*" + default_dtype, "inferred"
        elif FLOAT_NAME.search(n):
            sig[n], origin[n] = "fp32", "inferred"
        else:
            sig[n], origin[n] = "i32", "inferred"
    return sig, consts, origin, given


def guess_constexpr(name):
    """A compilable value for a constexpr nobody gave one, from naming conventions; None if the
    name says nothing. Results compiled with guesses say so (origin `guessed`)."""
    u = name.upper()
    if re.match(r"(HAS|IS|USE|ENABLE|DO|RETURN|EVEN|APPLY|SAVE|COMPUTE|WITH|NEED)_", u) or u.endswith("_FLAG"):
        return False
    if "DTYPE" in u:
        import triton.language as tl
        return tl.float32
    if "GROUP" in u:
        return 8
    if "BLOCK" in u or "TILE" in u or u.startswith("BS"):
        if re.search(r"_(M|N)$", u):
            return 64
        if u.endswith("_K"):
            return 32
        return 1024
    if u.startswith("NUM_STAGES") or u.endswith("STAGES"):
        return 2
    if re.search(r"(^N_|COLS|DIM$|_SIZE$|HIDDEN|_LEN$)", u):
        return 1024
    if re.search(r"(ROWS|PER_PROGRAM|PER_BLOCK|STRIDE|^NUM_)", u):
        return 1
    if u.endswith("MODE"):
        return 0
    return None


def def_line(lines, name):
    pat = re.compile(r"\s*def\s+" + re.escape(name) + r"\s*\(")
    for i, line in enumerate(lines):
        if pat.match(line):
            return i + 1
    return 0


def parse_target(t):
    from triton.backends.compiler import GPUTarget

    m = re.fullmatch(r"sm_(\d+)([af]?)", t)
    if m:
        return GPUTarget("cuda", int(m.group(1)), 32)
    m = re.fullmatch(r"gfx([0-9a-f]+)", t)
    if m:
        wave = 64 if m.group(1).startswith("9") else 32
        return GPUTarget("hip", t, wave)
    return None


def nvidia_usage(cubin):
    import triton.backends.nvidia as nv

    tool = os.path.join(os.path.dirname(nv.__file__), "bin", "cuobjdump")
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.cubin")
        with open(p, "wb") as f:
            f.write(cubin)
        out = subprocess.run([tool, "--dump-resource-usage", p], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)", out)
    if not m:
        return {}
    reg, stack, shared, local = map(int, m.groups())
    return {"registers": reg, "spill_bytes": local, "static_shared_bytes": shared, "stack_bytes": stack}


def amd_usage(asm):
    def field(key):
        m = re.search(r"^\s*\." + key + r":\s*(\d+)", asm, re.M)
        return int(m.group(1)) if m else None

    agpr = field("agpr_count")
    vspill, sspill = field("vgpr_spill_count") or 0, field("sgpr_spill_count") or 0
    return {"registers": field("vgpr_count"), "sgprs": field("sgpr_count"), "agprs": agpr,
            "spill_bytes": 4 * (vspill + sspill), "spilled_vgprs": vspill, "spilled_sgprs": sspill,
            "static_shared_bytes": field("group_segment_fixed_size") or 0,
            "scratch_bytes": field("private_segment_fixed_size") or 0}


def compile_one(fn, sig, consts, target_name, options):
    import triton
    from triton.compiler import ASTSource

    target = parse_target(target_name)
    res = {"target": target_name, "num_warps": options.get("num_warps", 4)}
    if target is None:
        res.update(status="skipped", reason=f"`{target_name}` is not an sm_XY or gfxNNN target Triton compiles for")
        return res
    res["wave_size"] = target.warp_size
    res["backend"] = target.backend
    t0 = time.monotonic()
    try:
        k = triton.compile(ASTSource(fn, sig, consts), target=target, options=dict(options))
    except Exception as exc:  # a compile error is a result for this target, not a crash
        msg = str(exc).strip().splitlines()
        res.update(status="failed", reason=(f"{type(exc).__name__}: " + " | ".join(msg[-6:]))[:2000])
        res["compile_ms"] = round((time.monotonic() - t0) * 1000)
        return res
    md = k.metadata
    usage = nvidia_usage(k.asm["cubin"]) if target.backend == "cuda" else amd_usage(k.asm.get("amdgcn", ""))
    res.update(status="ok", compile_ms=round((time.monotonic() - t0) * 1000), num_warps=md.num_warps,
               num_stages=md.num_stages, wave_size=md.warp_size,
               shared_bytes=int(md.shared) + int(usage.pop("static_shared_bytes", 0) or 0),
               threads_per_block=md.num_warps * md.warp_size, **usage)
    if target.backend == "cuda":
        res["arch"] = getattr(md, "arch", None)
    return res


def backend_opts(opts, per_backend, target, from_config):
    """Options for one target: `cuda:num_warps=8` / `hip:num_warps=4` directives win over the
    backend-neutral ones, but not over an autotune config's own values."""
    t = parse_target(target)
    out = dict(opts)
    if t is not None:
        for key, value in per_backend.get(t.backend, {}).items():
            if key not in from_config:
                out[key] = value
    return out


def cfg_key(name, configs):
    """Constexprs worth naming in a variant's label: those an autotune config sets."""
    return any(name in cfg.kwargs for cfg in (configs or []))


def main():
    with open(sys.argv[1]) as f:
        req = json.load(f)
    path = req["path"]
    reply = {"path": path, "triton_version": None, "stubbed_imports": [], "kernels": [], "helpers": []}
    try:
        import triton

        reply["triton_version"] = triton.__version__
        module, reply["stubbed_imports"] = load_module(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        kernels, reply["helpers"] = find_kernels(module)
        if req.get("kernel"):
            kernels = [k for k in kernels if k[0] == req["kernel"]]
            if not kernels:
                raise LookupError(f"no @triton.jit kernel named `{req['kernel']}` in {path}")
        overrides = req.get("overrides", {})
        for name, fn, configs, heuristics in kernels:
            entry = {"name": name, "line": def_line(lines, name), "autotune_configs": len(configs or []),
                     "heuristics": heuristics, "variants": []}
            reply["kernels"].append(entry)
            try:
                sig, consts, origin, given = resolve(path, lines, name, fn, configs, overrides)
            except ValueError as exc:
                entry["error"] = str(exc)
                continue
            entry.update(signature=sig, constexprs={k: repr(v) for k, v in consts.items()}, origin=origin)
            base_opts, per_backend = {}, {"cuda": {}, "hip": {}}
            for key in ("num_warps", "num_stages"):
                if key in given:
                    base_opts[key] = int(given[key][0])
                for backend in per_backend:
                    if f"{backend}:{key}" in given:
                        per_backend[backend][key] = int(given[f"{backend}:{key}"][0])
            variants = []
            for i, cfg in enumerate(configs or [None]):
                opts, c = dict(base_opts), dict(consts)
                label = "default"
                if cfg is not None:
                    label = f"autotune[{i}]"
                    c.update({k: v for k, v in cfg.kwargs.items() if k in c and origin.get(k) != "override"})
                    opts.setdefault("num_warps", cfg.num_warps)
                    opts.setdefault("num_stages", cfg.num_stages)
                    if cfg.maxnreg is not None:
                        opts["maxnreg"] = cfg.maxnreg
                variants.append((label, c, opts, set(opts) - set(base_opts)))
            for label, c, opts, cfg_set in variants[: int(req.get("max_configs", 16))]:
                shown = [f"{k}={x}" for k, x in c.items() if cfg_key(k, configs)]
                nw = {b: o["num_warps"] for b, o in per_backend.items() if "num_warps" in o and "num_warps" not in cfg_set}
                if nw:
                    shown.append("num_warps=" + "/".join(f"{b}:{v}" for b, v in nw.items()))
                else:
                    shown.append(f"num_warps={opts.get('num_warps', 4)}")
                label = f"{label}: {', '.join(shown)}"
                v = {"config": label, "constexprs": {k: repr(x) for k, x in c.items()},
                      "results": [compile_one(fn, sig, c, t, backend_opts(opts, per_backend, t, cfg_set))
                                 for t in req["targets"]]}
                entry["variants"].append(v)
    except Exception as exc:
        reply["error"] = f"{type(exc).__name__}: {exc}"
        reply["line"] = error_line(exc, path)
        reply["traceback"] = traceback.format_exc(limit=6)
    sys.stdout.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
