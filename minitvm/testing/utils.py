"""TVM's pytest helpers: `tvm.testing.parameter`, `fixture`, `requires_*`, `CompareBeforeAfter`...

TVM ships these with a pytest plugin that its conftest registers. Test files run under a plain
`sys.modules["tvm"] = minitvm` shim have no such conftest, so the first helper a test module
calls installs the plugin's per-module part into that module: a `pytest_generate_tests`
function (pytest calls one defined in a test module) and a `dev` fixture derived from `target`.
"""

from __future__ import annotations

import inspect
import os
import platform
import sys
import textwrap
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from ..error import ArgumentError

# --- targets -------------------------------------------------------------------------------

DEFAULT_TEST_TARGETS = ["llvm", "cuda", "nvptx", "vulkan", "opencl", "metal", "rocm", "hexagon"]


def _runnable_kinds() -> frozenset[str]:
    """The host CPU always; a compilable GPU kind when its device exists (PoCL is OpenCL)."""
    from ..target.kinds import gpu_kinds

    return frozenset({"llvm", *(k for k in sorted(gpu_kinds()) if _device_exists(k))})


def _target_kind(target: Any) -> str:
    """The kind of a target string or Target object ("llvm -mcpu=x" -> "llvm")."""
    if isinstance(target, str):
        return target.split()[0] if target.strip() else target
    return target.kind.name


def _test_targets() -> list[str]:
    """TVM_TEST_TARGETS (';'-separated) if set, else DEFAULT_TEST_TARGETS, without repeats."""
    text = os.environ.get("TVM_TEST_TARGETS", "").strip()
    if not text:
        return list(DEFAULT_TEST_TARGETS)
    return list(dict.fromkeys(t.strip() for t in text.split(";") if t.strip()))


def _runnable_targets() -> list[str]:
    """The test targets this build can compile for and run; 'llvm' when none of them can."""
    runnable = [t for t in _test_targets() if _target_kind(t) in _runnable_kinds()]
    return runnable or ["llvm"]


def device_enabled(target: str) -> bool:
    """Whether tests should run on `target` here: the CPU, or a GPU kind whose device exists."""
    if not isinstance(target, str):
        raise ArgumentError(
            f"device_enabled: expected a target string such as 'llvm', got {type(target).__name__}"
        )
    kind = _target_kind(target)
    return any(_target_kind(t) == kind for t in _runnable_targets())


def enabled_targets() -> list[tuple[str, Any]]:
    """(target, device) pairs of the targets tests run on: llvm, and opencl/cuda where present."""
    from ..runtime import device

    return [(t, device(t)) for t in _runnable_targets()]


# --- features: requires_* decorators -------------------------------------------------------


def _device_exists(kind: str) -> bool:
    from ..runtime import device

    return device(kind).exist


def _host_is(*machines: str) -> Callable[[], bool]:
    return lambda: platform.machine().lower() in machines


def _host_has_features(*features: str) -> Callable[[], bool]:
    def check() -> bool:
        from ..target import host_cpu_features

        have = {f.lstrip("+") for f in host_cpu_features().split(",") if f.startswith("+")}
        return all(f in have for f in features)

    return check


class Feature:
    """Something a test may need (a GPU, CUDA, an ISA extension); calling it marks a test so
    that it is skipped, with the reason, where the feature is absent.

    >>> @tvm.testing.requires_cuda
    ... def test_on_gpu(): ...
    """

    _all_features: ClassVar[dict[str, Feature]] = {}

    def __init__(
        self,
        name: str,
        long_name: str | None = None,
        available: Callable[[], bool] | None = None,
        parent_features: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.long_name = long_name or name
        self._available = available or (lambda: False)
        self.parent_features = tuple(parent_features)
        Feature._all_features[name] = self

    def is_available(self) -> bool:
        """Whether this feature and every feature it builds on exist here."""
        parents = (Feature._all_features[p] for p in self.parent_features)
        return all(p.is_available() for p in parents) and bool(self._available())

    def marks(self, support_required: str = "compile-and-run") -> list:
        """The pytest marks that skip a test needing this feature (none when "optional")."""
        _check_support_required(support_required)
        if support_required == "optional" or self.is_available():
            return []
        reason = f"{self.long_name} is not available in this build of minitvm (host CPU only)"
        return [pytest.mark.skipif(True, reason=reason)]

    def __call__(self, func: Callable | None = None, *, support_required: str = "compile-and-run"):
        _check_support_required(support_required)

        def wrapper(f: Callable) -> Callable:
            for mark in self.marks(support_required):
                f = mark(f)
            return f

        return wrapper if func is None else wrapper(func)

    @classmethod
    def require(cls, name: str, support_required: str = "compile-and-run"):
        """The decorator of the feature called `name`: `Feature.require("cuda")`."""
        return cls._all_features[name](support_required=support_required)


def _check_support_required(value: str) -> None:
    if value not in ("compile-and-run", "compile-only", "optional"):
        raise ArgumentError(
            f"support_required={value!r}; use 'compile-and-run', 'compile-only' or 'optional'"
        )


def _any_gpu() -> bool:
    return any(_device_exists(k) for k in ("cuda", "rocm", "opencl", "metal", "vulkan"))


requires_llvm = Feature("llvm", "LLVM", lambda: True)
requires_gpu = Feature("gpu", "a GPU", _any_gpu)
uses_gpu = requires_gpu(support_required="optional")
requires_multi_gpu = Feature("multi_gpu", "several GPUs", lambda: False, ("gpu",))
uses_multi_gpu = requires_multi_gpu(support_required="optional")
requires_cuda = Feature("cuda", "CUDA", lambda: _device_exists("cuda"), ("gpu",))
requires_tensorcore = Feature("tensorcore", "Tensor Cores", lambda: False, ("cuda",))
requires_cudnn = Feature("cudnn", "cuDNN", lambda: False, ("cuda",))
requires_cublas = Feature("cublas", "cuBLAS", lambda: False, ("cuda",))
requires_nvptx = Feature("nvptx", "NVPTX", lambda: False, ("cuda",))
requires_cudagraph = Feature("cudagraph", "CUDA Graph", lambda: False, ("cuda",))
requires_opencl = Feature("opencl", "OpenCL", lambda: _device_exists("opencl"), ("gpu",))
requires_rocm = Feature("rocm", "ROCm", lambda: _device_exists("rocm"), ("gpu",))
requires_matrixcore = Feature("matrixcore", "AMD Matrix Core", lambda: False, ("rocm",))
requires_hipblas = Feature("hipblas", "hipBLAS", lambda: False, ("rocm",))
requires_metal = Feature("metal", "Metal", lambda: _device_exists("metal"), ("gpu",))
requires_vulkan = Feature("vulkan", "Vulkan", lambda: _device_exists("vulkan"), ("gpu",))
requires_hexagon = Feature("hexagon", "Hexagon", lambda: False)
requires_rpc = Feature("rpc", "RPC", lambda: False)
requires_x86 = Feature("x86", "an x86 host", _host_is("x86_64", "amd64", "i386", "i686"))
requires_arm = Feature("arm", "an Arm host", _host_is("aarch64", "arm64", "armv7l"))
requires_x86_avx512 = Feature(
    "x86_avx512",
    "x86 AVX512",
    _host_has_features("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
    ("x86",),
)
requires_x86_vnni = Feature("x86_vnni", "x86 VNNI", _host_has_features("avx512vnni"), ("x86",))
requires_x86_amx = Feature("x86_amx", "x86 AMX", _host_has_features("amx-int8"), ("x86",))
requires_arm_dot = Feature("arm_dot", "Arm dot product", _host_has_features("dotprod"), ("arm",))
requires_arm_fp16 = Feature("arm_fp16", "Arm FP16", _host_has_features("fullfp16"), ("arm",))
requires_aarch64_sve = Feature("arm_sve", "AArch64 SVE", _host_has_features("sve"), ("arm",))


def requires_cuda_compute_version(major_version: int, minor_version: int = 0):
    """Skip unless a CUDA GPU of compute capability >= (major, minor) exists (never, here)."""
    wanted = f"{major_version}.{minor_version}"
    mark = pytest.mark.skipif(
        True, reason=f"needs CUDA compute capability >= {wanted}; minitvm has no CUDA device"
    )
    return lambda func: mark(func)


def requires_nvcc_version(major_version: int, minor_version: int = 0, release_version: int = 0):
    """Skip unless nvcc >= the version is installed (minitvm never uses nvcc: always skipped)."""
    mark = pytest.mark.skipif(True, reason="minitvm does not use nvcc (no CUDA code generation)")
    return lambda func: mark(func)


def requires_package(*packages: str):
    """Skip unless every named Python package imports."""

    def importable(name: str) -> bool:
        try:
            __import__(name)
        except ImportError:
            return False
        return True

    marks = [pytest.mark.skipif(not importable(p), reason=f"cannot import {p!r}") for p in packages]

    def wrapper(func: Callable) -> Callable:
        for mark in marks:
            func = mark(func)
        return func

    return wrapper


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in {"true", "1", "yes"}


skip_if_wheel_test = pytest.mark.skipif(_env_flag("WHEEL_TEST"), reason="not run in wheel tests")
slow = pytest.mark.skipif(_env_flag("SKIP_SLOW_TESTS"), reason="SKIP_SLOW_TESTS is set")


def skip_if_32bit(reason: str):
    """Skip the test on a 32-bit Python."""
    mark = pytest.mark.skipif("32bit" in platform.architecture()[0], reason=reason)
    return lambda func: mark(func)


# --- targets as test parameters --------------------------------------------------------------


def _target_param(target: str, with_dev: bool):
    """One `target` (and `dev`) parameter set, skipped with a reason when it cannot run here."""
    from ..runtime import device

    values = (target, device(target) if _runnable(target) else None) if with_dev else (target,)
    marks = (
        []
        if _runnable(target)
        else [
            pytest.mark.skip(reason=f"target {target!r} cannot run here (no such device on this machine)")
        ]
    )
    return pytest.param(*values, marks=marks, id=target)


def _runnable(target: str) -> bool:
    return _target_kind(target) in _runnable_kinds()


def parametrize_targets(*args: Any):
    """Run a test once per target: `@parametrize_targets("llvm", "cuda")` on
    `def test_x(target, dev)`; bare, it uses every enabled target."""
    _install_module_hooks(sys._getframe(1).f_globals)
    bare = len(args) == 1 and callable(args[0])
    targets = _runnable_targets() if bare else list(args)

    def wrap(func: Callable) -> Callable:
        excluded = set(getattr(func, "tvm_excluded_targets", ()))
        chosen = [t for t in targets if _target_kind(t) not in excluded]
        with_dev = "dev" in inspect.signature(func).parameters
        names = "target,dev" if with_dev else "target"
        params = [_target_param(t, with_dev) for t in chosen]
        return pytest.mark.parametrize(names, params)(func)

    return wrap(args[0]) if bare else wrap


def exclude_targets(*args: str):
    """Leave the given target kinds out of the test's target parametrization."""

    def wraps(func: Callable) -> Callable:
        func.tvm_excluded_targets = args
        return func

    return wraps


def known_failing_targets(*args: str):
    """Mark the given target kinds as expected to fail (xfail) for this test."""

    def wraps(func: Callable) -> Callable:
        func.tvm_known_failing_targets = args
        return func

    return wraps


# --- parameters and fixtures ------------------------------------------------------------------


def parameter(*values: Any, ids: Any = None, by_dict: dict | None = None):
    """A parametrized fixture: every test taking it runs once per value.

    >>> size = tvm.testing.parameter(1, 10, 100)
    """
    if by_dict is not None:
        if values or ids:
            raise ArgumentError("parameter: give either values (with ids) or by_dict, not both")
        ids, values = list(by_dict), tuple(by_dict.values())

    def as_fixture(*_cls: Any, request: Any) -> Any:  # *_cls: defined in a class body too
        return request.param

    caller = sys._getframe(1)
    _install_module_hooks(caller.f_globals)
    # In a class body the fixture becomes a method that pytest binds to each test instance, and
    # pytest 9.2 deprecates a session-scoped fixture bound that way: give it function scope.
    in_class_body = caller.f_code.co_name != "<module>" and "__qualname__" in caller.f_locals
    scope = "function" if in_class_body else "session"
    return pytest.fixture(params=values, ids=ids, scope=scope)(as_fixture)


_PARAMETERS_GROUP = "_tvm_parameters_group"
_group_counter = [0]


def parameters(*value_sets: tuple, ids: Any = None):
    """Fixtures that vary together: `size, dtype = parameters((16, "f32"), (512, "f16"))` runs
    each test taking them once per tuple (not once per combination)."""
    _group_counter[0] += 1
    group = _group_counter[0]
    columns = list(zip(*value_sets)) if value_sets else []
    outputs = []
    for column in columns:

        def column_fixture(*_cls: Any, request: Any) -> Any:
            return request.param

        setattr(column_fixture, _PARAMETERS_GROUP, (group, column, ids))
        outputs.append(pytest.fixture(column_fixture))
    _install_module_hooks(sys._getframe(1).f_globals)
    return outputs


def fixture(func: Callable | None = None, *, cache_return_value: bool = False):
    """A pytest fixture; with cache_return_value=True its value is computed once per set of
    parameter values and shared by the tests (they must not modify it). TVM_TEST_DISABLE_CACHE=1
    turns the cache off."""
    cache = cache_return_value and os.environ.get("TVM_TEST_DISABLE_CACHE", "0") in ("", "0")

    def wraps(f: Callable) -> Callable:
        _install_module_hooks(getattr(sys.modules.get(f.__module__), "__dict__", {}))
        return pytest.fixture(_cached(f) if cache else f)

    return wraps if func is None else wraps(func)


def _cached(func: Callable) -> Callable:
    """`func` computed once per distinct argument objects (parameters are the same objects in
    every test, so identity is the key; the arguments are kept alive so ids are not reused)."""
    results: dict[tuple, tuple[Any, Any]] = {}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = tuple(id(a) for a in args) + tuple((k, id(v)) for k, v in sorted(kwargs.items()))
        if key not in results:
            results[key] = ((args, kwargs), func(*args, **kwargs))
        return results[key][1]

    wrapper.__signature__ = inspect.signature(func)
    wrapper.__name__ = func.__name__
    wrapper.__qualname__ = func.__qualname__
    wrapper.__module__ = func.__module__
    return wrapper


# --- the per-module plugin --------------------------------------------------------------------


def _install_module_hooks(namespace: dict) -> None:
    """Give a test module TVM's plugin behaviour: correlated `parameters`, a `target`
    parametrization for tests that take `target` without one, and a `dev` fixture."""
    if namespace.get("__name__", "minitvm").startswith("minitvm."):
        return  # only test modules (and never minitvm's own import)
    namespace.setdefault("pytest_generate_tests", _generate_tests)
    namespace.setdefault("dev", _dev_fixture)


@pytest.fixture
def _dev_fixture(target: Any) -> Any:
    from ..runtime import device

    return device(target)


def _generate_tests(metafunc: Any) -> None:
    """pytest_generate_tests of a test module that uses tvm.testing helpers."""
    _parametrize_groups(metafunc)
    _parametrize_target(metafunc)


def _parametrize_groups(metafunc: Any) -> None:
    groups: dict[int, list] = {}
    ids_of: dict[int, Any] = {}
    for name, defs in metafunc.definition._fixtureinfo.name2fixturedefs.items():
        info = getattr(defs[-1].func, _PARAMETERS_GROUP, None)
        if info is not None:
            group, column, ids = info
            groups.setdefault(group, []).append((name, column))
            ids_of[group] = ids
    for group, members in groups.items():
        names = [name for name, _ in members]
        rows = list(zip(*[column for _, column in members]))
        values = rows if len(names) > 1 else [row[0] for row in rows]
        metafunc.parametrize(",".join(names), values, indirect=True, ids=ids_of[group])


def _parametrize_target(metafunc: Any) -> None:
    if "target" not in metafunc.fixturenames:
        return
    if "target" in metafunc.definition._fixtureinfo.name2fixturedefs:
        return  # the module defines its own `target` fixture (or parameter): it wins
    for mark in metafunc.definition.iter_markers("parametrize"):
        if "target" in [a.strip() for a in str(mark.args[0]).split(",")]:
            return
    excluded = set(getattr(metafunc.function, "tvm_excluded_targets", ()))
    failing = set(getattr(metafunc.function, "tvm_known_failing_targets", ()))
    params = []
    for target in _runnable_targets():
        if _target_kind(target) in excluded:
            continue
        marks = [pytest.mark.xfail(reason=f"known failing for {target}")] * (
            _target_kind(target) in failing
        )
        params.append(pytest.param(target, marks=marks, id=target))
    metafunc.parametrize("target", params)


# --- CompareBeforeAfter ---------------------------------------------------------------------


def _is_fixture(obj: Any) -> bool:
    fixture_type = getattr(sys.modules.get("_pytest.fixtures"), "FixtureFunctionDefinition", None)
    return hasattr(obj, "_pytestfixturefunction") or (
        fixture_type is not None and isinstance(obj, fixture_type)
    )


def _takes_self(obj: Any) -> bool:
    return callable(obj) and "self" in inspect.signature(obj).parameters


def _parse_script_function(func: Callable) -> Any:
    """A TVMScript function written without @T.prim_func, parsed now (at test time)."""
    from ..script import from_source

    lines, first = inspect.getsourcelines(func)
    padding = "\n" * max(first - 2, 0)  # so errors point at the right line of the test file
    source = padding + "@T.prim_func\n" + textwrap.dedent("".join(lines))
    return from_source(source, inspect.getsourcefile(func) or "<string>")


class CompareBeforeAfter:
    """A test class for transforms: define `transform`, `before` and `expected` (a PrimFunc, an
    undecorated TVMScript function, a class of them, a method, a fixture, or for `expected` an
    exception class the transform must raise); the generated `test_compare` checks it.

    >>> class TestSimplify(tvm.testing.CompareBeforeAfter):
    ...     transform = tvm.tir.transform.Simplify()
    ...     def before(A: T.Buffer(1, "int32")): A[0] = 1 + 1
    ...     def expected(A: T.Buffer(1, "int32")): A[0] = 2
    """

    check_well_formed: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _install_module_hooks(getattr(sys.modules.get(cls.__module__), "__dict__", {}))
        for canonical, spellings in (
            ("before", ("before", "Before")),
            ("expected", ("expected", "Expected")),
        ):
            given = [s for s in spellings if s in cls.__dict__]
            if len(given) > 1:
                raise ArgumentError(f"{cls.__name__}: define only one of {' / '.join(spellings)}")
            if given:
                setattr(cls, canonical, _as_ir_fixture(cls.__dict__[given[0]], canonical))
        if "transform" in cls.__dict__:
            cls.transform = _as_transform_fixture(cls, cls.__dict__["transform"])

    def test_compare(self, before: Any, expected: Any, transform: Any) -> None:
        """The transform of `before` equals `expected`, or raises the `expected` exception."""
        if inspect.isclass(expected) and issubclass(expected, BaseException):
            with pytest.raises(expected):
                after = transform(before)
                pytest.fail(
                    f"expected {expected.__name__} from the transform, but it returned:\n"
                    f"{_script(after, 'after')}"
                )
            return
        if not _is_ir(expected):
            raise TypeError(
                "CompareBeforeAfter: `expected` must give a PrimFunc, an IRModule or an "
                f"exception class, got {type(expected).__name__}"
            )
        after = transform(before)
        if _is_prim_func(after) and _is_prim_func(expected):
            after = after.with_attr("global_symbol", "main")
            expected = expected.with_attr("global_symbol", "main")
        from ..ir.structural import assert_structural_equal

        try:
            assert_structural_equal(after, expected)
        except ValueError as err:
            raise ValueError(
                "the transform's result differs from `expected`:\n"
                f"{_script(before, 'before')}\n{_script(after, 'after')}\n"
                f"{_script(expected, 'expected')}"
            ) from err


def _script(ir: Any, name: str) -> str:
    text = ir.script() if hasattr(ir, "script") else repr(ir)
    return f"# {name}\n{text}"


def _is_prim_func(obj: Any) -> bool:
    from ..tir.function import PrimFunc

    return isinstance(obj, PrimFunc)


def _is_ir(obj: Any) -> bool:
    from ..ir.module import IRModule

    return _is_prim_func(obj) or isinstance(obj, IRModule)


def _as_ir_fixture(value: Any, role: str) -> Any:
    """The class attribute `before`/`expected` as a fixture returning IR (or an exception)."""
    if _is_fixture(value):
        return value
    if role == "expected" and inspect.isclass(value) and issubclass(value, BaseException):
        return pytest.fixture(lambda self: value, name=role)
    if _is_ir(value):
        return pytest.fixture(lambda self: value, name=role)
    if _takes_self(value):
        return pytest.fixture(lambda self: value(self), name=role)
    if inspect.isclass(value):
        return pytest.fixture(lambda self: _module_of_class(value), name=role)
    if callable(value):
        return pytest.fixture(lambda self: _parse_script_function(value), name=role)
    raise TypeError(f"CompareBeforeAfter: cannot use {type(value).__name__} as `{role}`")


def _module_of_class(cls: type) -> Any:
    """An IRModule from a class of PrimFuncs / undecorated TVMScript functions."""
    from ..ir.module import IRModule

    funcs = {}
    for name, member in cls.__dict__.items():
        if name.startswith("_"):
            continue
        func = member if _is_prim_func(member) else _parse_script_function(member)
        funcs[name] = func.with_attr("global_symbol", name)
    return IRModule(funcs)


def _on_module(module_transform: Callable) -> Callable:
    """Apply an IRModule -> IRModule transform to an IRModule, or to a PrimFunc as "main"."""
    from ..ir.module import IRModule

    def apply(ir: Any) -> Any:
        if isinstance(ir, IRModule):
            return module_transform(ir)
        if _is_prim_func(ir):
            return module_transform(IRModule({"main": ir}))["main"]
        raise TypeError(f"expected an IRModule or a PrimFunc, got {type(ir).__name__}")

    return apply


def _as_transform_fixture(cls: type, transform: Any) -> Any:
    from ..ir.transform import Pass

    if _is_fixture(transform):
        cls._transform_orig = transform
        return pytest.fixture(
            lambda self, _transform_orig: _on_module(_transform_orig), name="transform"
        )
    if isinstance(transform, Pass):
        return pytest.fixture(lambda self: _on_module(transform), name="transform")
    if _takes_self(transform):
        return pytest.fixture(lambda self: _on_module(transform(self)), name="transform")
    raise TypeError(
        f"{cls.__name__}.transform: expected a tvm.transform.Pass, a method returning one, or a "
        f"fixture, got {type(transform).__name__}"
    )


# --- expression and gradient checks ---------------------------------------------------------


def assert_prim_expr_equal(lhs: Any, rhs: Any) -> None:
    """Assert that the analyzer proves `lhs == rhs` for all values of the free variables."""
    from ..arith import Analyzer

    if not Analyzer().can_prove_equal(lhs, rhs):
        raise ValueError(f"{lhs} and {rhs} are not equal")


def check_numerical_grads(
    function: Callable,
    input_values: Any,
    grad_values: Any,
    function_value: float | None = None,
    delta: float = 1e-3,
    atol: float = 1e-2,
    rtol: float = 0.1,
) -> None:
    """Compare `grad_values` with finite differences of the scalar `function` at `input_values`
    (a list of arrays for positional arguments, or a dict for keyword arguments)."""
    import numpy as np

    if not isinstance(input_values, dict):  # positional arguments, named "0", "1", ...
        count = len(input_values)
        input_values = {str(i): v for i, v in enumerate(input_values)}
        grad_values = {str(i): g for i, g in enumerate(grad_values)}

        def call(values: dict) -> float:
            return function(*(values[str(i)] for i in range(count)))
    else:

        def call(values: dict) -> float:
            return function(**values)

    base = call(input_values) if function_value is None else function_value

    def partial(name: str, j: int, step: float) -> float:
        moved = dict(input_values)
        moved[name] = input_values[name].copy()
        moved[name].reshape(-1)[j] += step
        return (call(moved) - base) / step

    for name, grad in grad_values.items():
        grad = np.asarray(grad)
        if grad.shape != input_values[name].shape:
            raise AssertionError(
                f"gradient for {name!r} has shape {grad.shape}, expected {input_values[name].shape}"
            )
        numeric = np.zeros(grad.shape, dtype=np.float64)
        for j in range(grad.size):
            want = grad.reshape(-1)[j]
            d = partial(name, j, delta)
            if not _close(d, want, atol, rtol):  # central difference, then a five-point estimate
                d = (partial(name, j, -delta) + d) / 2
                if not _close(d, want, atol, rtol):
                    half = (partial(name, j, delta / 2) + partial(name, j, -delta / 2)) / 2
                    d = (4 * half - d) / 3
            numeric.reshape(-1)[j] = d
        dist = float(np.sqrt(np.sum((numeric - grad) ** 2)))
        norm = float(np.sqrt(np.sum(numeric**2)))
        if not (np.isfinite(dist) and np.isfinite(norm)):
            raise ValueError(f"NaN or infinity in the gradient check for {name!r}")
        if dist > atol * np.sqrt(grad.size) + rtol * norm:
            raise AssertionError(
                f"analytical and numerical gradients for {name!r} differ: distance {dist} > "
                f"{atol}*sqrt({grad.size}) + {rtol}*{norm}\nanalytical:\n{grad}\n"
                f"numerical:\n{numeric}"
            )


def _close(numeric: float, analytic: float, atol: float, rtol: float) -> bool:
    return abs(numeric - analytic) < atol + rtol * abs(numeric)
