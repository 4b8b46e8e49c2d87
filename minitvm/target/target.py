"""Compilation targets: `Target("llvm -mcpu=skylake-avx512")`, host CPU detection, TargetMachines."""

from __future__ import annotations

import difflib
import re
import shlex
import threading
from dataclasses import dataclass
from functools import lru_cache

import llvmlite.binding as llvm

from ..error import TargetError
from . import host
from .kinds import compilable_kinds, kind_spec
from .tags import cuda_tags

# The CPU kinds this build compiles (TVM-era constant; the kinds themselves live in kinds.py).
SUPPORTED_KINDS = tuple(k for k in compilable_kinds() if not kind_spec(k).gpu)
_INT_ATTRS = frozenset({"max_num_threads", "max_shared_memory_per_block", "thread_warp_size",
                        "max_threads_per_block", "registers_per_block"})  # fmt: skip
_DEFAULT_ARCH = "sm_52"  # PTX for it is JIT-compiled by every newer driver
_ARCH = re.compile(r"sm_\d{2,3}[a-z]?")
# TVM's target tags ("nvidia/tesla-p100") -> target string; tag.register_tag adds rows
_TAGS = cuda_tags()


def _did_you_mean(tag: str) -> str:
    """' (did you mean ...?)' naming the closest known tags, or ''."""
    close = difflib.get_close_matches(tag, _TAGS, n=3, cutoff=0.8)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


# option name -> (Target field, parser of its text value)
_OPTIONS = {
    "-mcpu": ("mcpu", str),
    "-mattr": ("mattr", lambda text: tuple(a for a in text.split(",") if a)),
    "-mtriple": ("mtriple", str),
    "-num-cores": ("num_cores", int),
    "-opt-level": ("opt_level", int),
}
# options kept as text in `attrs` (what TVM's dict form and strings also carry for a CPU)
_TEXT_OPTIONS = frozenset({"-device", "-keys", "-libs", "-model", "-tag"})

_init_lock = threading.Lock()
_initialized = False
_all_initialized = False
_MATTR_ENTRY = re.compile(r"[+-][A-Za-z0-9_.-]+")


def initialize_llvm() -> None:
    """Initialise LLVM's native target and asm printer (once per process)."""
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


def _initialize_all_targets() -> None:
    """Every LLVM back end (for cross-compiling with -mtriple), once per process."""
    global _all_initialized
    initialize_llvm()
    with _init_lock:
        if not _all_initialized:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _all_initialized = True


@lru_cache(maxsize=1)
def host_cpu_name() -> str:
    """LLVM's name for the host CPU (a hypervisor may hide the real model; override with -mcpu)."""
    initialize_llvm()
    return llvm.get_host_cpu_name()


@lru_cache(maxsize=1)
def host_cpu_features() -> str:
    """The host's feature string, e.g. "+avx2,+avx512f,-xop,..." (what the CPU really supports)."""
    initialize_llvm()
    return llvm.get_host_cpu_features().flatten()


def enabled_features(features: str) -> frozenset[str]:
    """The names switched on ("+name") in an LLVM feature string."""
    return frozenset(f[1:] for f in features.split(",") if f.startswith("+"))


@dataclass(frozen=True)
class TargetKind:
    name: str

    def __str__(self) -> str:  # TVM prints a kind as its name: str(target.kind) == "llvm"
        return self.name


class Target:
    """A compilation target parsed from a string; `Target("llvm")` is the host CPU with all its features.

    >>> str(Target("llvm -mcpu=skylake-avx512 -mattr=+avx512f"))
    'llvm -mcpu=skylake-avx512 -mattr=+avx512f'
    """

    __slots__ = (
        "_host", "_str", "attrs", "kind", "mattr", "mcpu", "mtriple", "num_cores", "opt_level",
    )  # fmt: skip

    def __init__(
        self, target: str | dict | Target, host: str | dict | Target | None = None
    ) -> None:
        if isinstance(target, dict):  # TVM's config form {"kind": "llvm", "mcpu": .., "host": ..}
            from .config import config_to_string

            target, dict_host = config_to_string(target)
            host = host if host is not None else dict_host
        if isinstance(target, Target):
            host = host if host is not None else target._host
            target = str(target)
        if not isinstance(target, str):
            raise TargetError(
                f"Target expects a string like 'llvm -mcpu=...' or a dict like {{'kind': 'llvm', "
                f"'mcpu': ...}}, got {type(target).__name__}"
            )
        tag = target.strip().split()[0] if target.strip() else ""
        if tag in _TAGS:
            target = target.replace(tag, _TAGS[tag], 1)
        elif "/" in tag:  # no target kind has a slash: this is meant as a tag
            raise TargetError(
                f"unknown target tag '{tag}'{_did_you_mean(tag)}; {len(_TAGS)} tags are known "
                "(minitvm.target.tag.list_tags(); register_tag adds one), or write "
                "'cuda -arch=sm_XX'"
            )
        self._host = None if host is None else Target(host)
        words = shlex.split(target)
        if not words:
            raise TargetError("empty target string; use 'llvm'")
        kind = _check_kind(words[0], target)
        self.kind = TargetKind(kind)
        self.mcpu: str | None = None
        self.mattr: tuple[str, ...] = ()
        self.mtriple: str | None = None
        self.num_cores: int | None = None
        self.opt_level: int = 3
        self.attrs: dict[str, str] = {}
        set_option = self._set_gpu_option if kind_spec(kind).gpu else self._set_option
        for word in words[1:]:
            set_option(word, target)
        self._str = " ".join([kind, *_option_words(self)])
        if self.mtriple or self.mattr or self.mcpu not in (None, "native"):
            _check_llvm_names(self._str)

    def _set_option(self, word: str, target: str) -> None:
        name, eq, value = word.partition("=")
        if name.startswith("--"):  # TVM reads "--num-cores=1" (the MLC course's spelling) too
            name = name[1:]
        if name in _TEXT_OPTIONS and value:
            self.attrs[name[1:]] = value
            return
        if name not in _OPTIONS or not eq:
            raise TargetError(
                f"target '{target}': unknown option '{word}'; "
                f"supported: {', '.join(o + '=...' for o in (*_OPTIONS, *sorted(_TEXT_OPTIONS)))}"
            )
        field, parse = _OPTIONS[name]
        try:
            setattr(self, field, parse(value))
        except ValueError as err:
            raise TargetError(f"target '{target}': bad value in '{word}'") from err

    def _set_gpu_option(self, word: str, target: str) -> None:
        # A GPU target only describes the device (-arch=sm_80, -max_num_threads=1024): it is
        # kept as text, since nothing here compiles for it.
        name, eq, value = word.partition("=")
        if not name.startswith("-") or not eq:
            raise TargetError(f"target '{target}': option '{word}' is not of the form -name=value")
        key = name.lstrip("-")
        if key in _INT_ATTRS and not (value.isdigit() and int(value) > 0):
            raise TargetError(f"target '{target}': {key} must be a positive integer, got '{value}'")
        if key == "arch" and not _ARCH.fullmatch(value):
            raise TargetError(
                f"target '{target}': -arch={value} is not an NVIDIA architecture; write sm_XX "
                "(e.g. -arch=sm_80 for A100, sm_90 for H100)"
            )
        self.attrs[key] = value

    # --- GPU device attributes (lowering checks kernels against them) ---------------------
    def _gpu_attr(self, name: str) -> int:
        defaults = kind_spec(self.kind.name).defaults or None
        if defaults is None:
            raise TargetError(f"target '{self._str}' is not a GPU target; it has no {name}")
        return int(self.attrs.get(name, defaults[name]))

    @property
    def max_num_threads(self) -> int:
        """Threads per block the kernels may use (-max_num_threads=, default by kind)."""
        return self._gpu_attr("max_num_threads")

    @property
    def max_shared_memory_per_block(self) -> int:
        """Bytes of shared memory per block (-max_shared_memory_per_block=)."""
        return self._gpu_attr("max_shared_memory_per_block")

    @property
    def thread_warp_size(self) -> int:
        return self._gpu_attr("thread_warp_size")

    @property
    def arch(self) -> str:
        """The NVIDIA architecture PTX is generated for (-arch=sm_XX; default sm_52)."""
        if self.kind.name not in ("cuda", "nvptx"):
            raise TargetError(f"target '{self._str}' is not a CUDA target; it has no arch")
        return self.attrs.get("arch", _DEFAULT_ARCH)

    @property
    def host(self) -> Target:
        """The target of host code (`Target(gpu, host=...)`); the CPU ('llvm') by default."""
        return self._host if self._host is not None else Target("llvm")

    def get_target_device_type(self) -> int:
        """The DLPack device code of the target's device (1 CPU, 2 CUDA, 4 OpenCL)."""
        return kind_spec(self.kind.name).device_type

    @staticmethod
    def from_device(device: object) -> Target:
        """The target that compiles for `device` (TVM 0.20+): `Target.from_device(tvm.cpu())`
        is the host's "llvm", a CUDA device "cuda", an OpenCL one "opencl"; a name ("cpu",
        "cuda:0") works too."""
        from .kinds import compilable_kinds, list_kinds

        order = [*compilable_kinds(), *list_kinds()]  # kinds this build compiles first
        if isinstance(device, str):
            name = device.partition(":")[0]
            match = [k for k in order if name in (k, kind_spec(k).device)]
        else:  # a Device (read by its DLPack code: target sits below the runtime)
            code = getattr(device, "device_type", None)
            match = [k for k in order if isinstance(code, int) and kind_spec(k).device_type == code]
        if not match:
            raise TargetError(
                f"Target.from_device: no target kind runs on {device!r}; pass a Device such as "
                "tvm.cpu() or tvm.cuda(0), or a name such as 'cpu' or 'cuda'"
            )
        return Target(match[0])

    # --- `with Target(...):` scopes (TVM's Target.current) ----------------
    def __enter__(self) -> Target:
        _scopes().append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _scopes().pop()

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The target of the innermost `with Target(...):` block in this thread."""
        stack = _scopes()
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError("Target.current(allow_none=False): no `with Target(...):` is active")
        return None

    def _require_cpu(self, what: str) -> None:
        spec = kind_spec(self.kind.name)
        if spec.gpu or not spec.compiles:
            raise TargetError(
                f"cannot build for target '{self._str}' ({what}): there is no "
                f"{self.kind.name.upper()} runtime in this build; build for 'llvm' (the host CPU)"
            )

    # --- what the code generator uses ------------------------------------
    @property
    def is_host_arch(self) -> bool:
        """Whether the target's architecture is this machine's (no foreign -mtriple)."""
        self._require_cpu("is_host_arch")
        return self.mtriple is None or host.triple_arch(self.mtriple) == host.host_arch()

    @property
    def cpu(self) -> str:
        """The CPU to generate code for: -mcpu, or the host CPU (also for -mcpu=native);
        LLVM's "generic" CPU of a foreign -mtriple's architecture."""
        self._require_cpu("cpu")
        if self.mcpu not in (None, "native"):
            return self.mcpu
        return host_cpu_name() if self.is_host_arch else "generic"

    @property
    def features(self) -> str:
        """LLVM feature string: -mattr, plus every host feature when -mcpu is absent or "native"
        (and the architecture is the host's)."""
        self._require_cpu("features")
        host_cpu = self.mcpu in (None, "native") and self.is_host_arch
        parts = [host_cpu_features()] if host_cpu else []
        parts.extend(self.mattr)
        return ",".join(p for p in parts if p)

    @property
    def triple(self) -> str:
        self._require_cpu("triple")
        initialize_llvm()
        return self.mtriple or llvm.get_process_triple()

    @property
    def required_features(self) -> frozenset[str] | None:
        """ISA features code for this target may use; None when the CPU's are unknown."""
        if not self.is_host_arch:
            return None
        if self.mcpu in (None, "native"):
            implied = enabled_features(host_cpu_features())
        elif self.mcpu == host_cpu_name():
            implied = enabled_features(host_cpu_features()) & _ALL_ISA_FEATURES
        elif self.mcpu in host.CPU_FEATURES:
            implied = host.CPU_FEATURES[self.mcpu]
        else:
            return None
        added = {a[1:] for a in self.mattr if a.startswith("+")}
        removed = {a[1:] for a in self.mattr if a.startswith("-")}
        return frozenset((implied | added) - removed)

    def create_target_machine(self) -> llvm.TargetMachine:
        """An llvmlite TargetMachine for this target (opt=3; on x86-64 the large code model, for
        MCJIT), shared per target string.

        For an execution engine use `new_target_machine()`: an engine takes ownership of its
        TargetMachine and frees it with itself. (A shared one handed to an engine anyway is
        dropped from the cache, so later callers never get a machine an engine may free.)"""
        self._require_cpu("create_target_machine")
        tm = _target_machine(self._str)
        if getattr(tm, "_owned", False):  # llvmlite marks a machine an engine took over
            _target_machine.cache_clear()
            tm = _target_machine(self._str)
        return tm

    def new_target_machine(self) -> llvm.TargetMachine:
        """A fresh TargetMachine, e.g. for `llvm.create_mcjit_compiler`, which takes ownership."""
        self._require_cpu("new_target_machine")
        return _new_target_machine(self._str)

    @property
    def keys(self) -> tuple[str, ...]:
        """The target's keys (-keys=... first, then the kind's), as TVM orders them."""
        extra = tuple(k for k in self.attrs.get("keys", "").split(",") if k)
        device = (self.attrs["device"],) if self.attrs.get("device") else ()
        return tuple(dict.fromkeys((*extra, *device, *kind_spec(self.kind.name).keys)))

    @property
    def libs(self) -> tuple[str, ...]:
        """External libraries named by -libs= (e.g. ("cblas",))."""
        return tuple(k for k in self.attrs.get("libs", "").split(",") if k)

    @property
    def tag(self) -> str:
        return self.attrs.get("tag", "")

    @property
    def model(self) -> str:
        return self.attrs.get("model", "unknown")

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return f'Target("{self._str}")'

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and other._str == self._str and other._host == self._host

    def __hash__(self) -> int:
        return hash(self._str)


_ALL_ISA_FEATURES = frozenset().union(*host.CPU_FEATURES.values())


@lru_cache(maxsize=64)
def _check_llvm_names(target_str: str) -> None:
    """-mtriple, -mcpu and -mattr name things LLVM knows (LLVM itself only warns, then dies)."""
    t = Target.__new__(Target)  # fields only: the full constructor would call us again
    t.mcpu, t.mattr, t.mtriple = None, (), None
    for word in shlex.split(target_str)[1:]:
        name, _, value = word.partition("=")
        if name in ("-mcpu", "-mattr", "-mtriple"):
            setattr(t, _OPTIONS[name][0], _OPTIONS[name][1](value))
    initialize_llvm()
    if t.mtriple:
        _initialize_all_targets()
    triple = t.mtriple or llvm.get_process_triple()
    for entry in t.mattr:
        if not _MATTR_ENTRY.fullmatch(entry):
            raise TargetError(_bad_feature(target_str, entry))
    cpu = t.mcpu if t.mcpu not in (None, "native") else "generic"
    try:
        complaints = host.llvm_complaints(triple, cpu, ",".join(t.mattr))
    except RuntimeError as err:
        raise TargetError(f"target '{target_str}': LLVM does not know triple '{triple}'") from err
    if f"'{cpu}' is not a recognized processor" in complaints:
        raise TargetError(
            f"target '{target_str}': unknown CPU '{t.mcpu}' for {host.triple_arch(triple)}; "
            f"see the valid names with minitvm.target.list_cpus() (e.g. x86-64-v3, "
            f"skylake-avx512, znver4), or use 'llvm' for this machine's CPU"
        )
    for entry in t.mattr:
        if f"'{entry}' is not a recognized feature" in complaints:
            raise TargetError(_bad_feature(target_str, entry))


def _bad_feature(target_str: str, entry: str) -> str:
    return (
        f"target '{target_str}': unknown CPU feature '{entry}' in -mattr; write +name or -name "
        "(e.g. -mattr=+avx2,-avx512f) with names from minitvm.target.list_features()"
    )


def unavailable_reason(target: Target) -> str | None:
    """Why code built for `target` cannot run on this machine; None when it can."""
    arch, here = host.triple_arch(target.triple), host.host_arch()
    if arch != here:
        return f"it was built for {arch}, this machine is {here} (-mtriple={target.mtriple})"
    needed = target.required_features
    if needed is None:
        return (
            f"minitvm does not know which instruction sets -mcpu={target.mcpu} implies, so it "
            f"cannot check that this {host_cpu_name()} CPU has them"
        )
    missing = needed - enabled_features(host_cpu_features())
    if missing:
        return (
            f"it needs CPU features this {host_cpu_name()} CPU lacks: {', '.join(sorted(missing))}"
        )
    return None


_local = threading.local()


def _scopes() -> list[Target]:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def cuda(model: str = "unknown", arch: str | None = None, options: list | str | None = None):
    """A CUDA Target (`tvm.target.cuda(arch="sm_80")`); building for it raises TargetError."""
    extra = options.split() if isinstance(options, str) else list(options or [])
    words = ["cuda", f"-model={model}", *([f"-arch={arch}"] if arch else []), *extra]
    return Target(" ".join(words))


def _check_kind(kind: str, target: str) -> str:
    # Every registered kind parses (a Target describes a device); building for a kind without
    # a code generator is refused where it is built.
    return kind_spec(kind, target).name


def _option_words(t: Target) -> list[str]:
    words = []
    if t.mcpu:
        words.append(f"-mcpu={t.mcpu}")
    if t.mattr:
        words.append(f"-mattr={','.join(t.mattr)}")
    if t.mtriple:
        words.append(f"-mtriple={t.mtriple}")
    if t.num_cores is not None:
        words.append(f"-num-cores={t.num_cores}")
    if t.opt_level != 3:
        words.append(f"-opt-level={t.opt_level}")
    words.extend(f"-{k}={v}" for k, v in t.attrs.items())
    return words


@lru_cache(maxsize=32)
def _target_machine(target_str: str) -> llvm.TargetMachine:
    return _new_target_machine(target_str)


def _new_target_machine(target_str: str) -> llvm.TargetMachine:
    initialize_llvm()
    t = Target(target_str)
    try:
        llvm_target = llvm.Target.from_triple(t.triple)
    except RuntimeError as err:
        raise TargetError(f"target '{target_str}': LLVM does not know triple '{t.triple}'") from err
    # x86-64 code runs through MCJIT, which maps code and constants separately: in a crowded
    # address space they can end up more than 2 GiB apart, and the small code model's 32-bit
    # PC-relative references between them make LLVM's runtime linker abort the process. The
    # large code model (LLVM's own choice for JIT on x86-64) addresses them with 64 bits.
    jit_x86 = t.triple.startswith("x86_64")
    return llvm_target.create_target_machine(
        cpu=t.cpu,
        features=t.features,
        opt=min(max(t.opt_level, 0), 3),
        reloc="static" if jit_x86 else "pic",
        codemodel="large" if jit_x86 else "default",
    )
