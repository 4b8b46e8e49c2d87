"""Data types: parsed once from strings like "float32" or "int32x8" into DataType values."""

from __future__ import annotations

import enum
import re
from functools import lru_cache

import numpy as np

from ..error import DTypeError


class TypeCode(enum.Enum):
    INT = "int"
    UINT = "uint"
    FLOAT = "float"
    BOOL = "bool"
    HANDLE = "handle"
    BFLOAT = "bfloat"
    FLOAT8_E4M3FN = "float8_e4m3fn"
    FLOAT8_E5M2 = "float8_e5m2"
    FLOAT8_E4M3FNUZ = "float8_e4m3fnuz"
    FLOAT8_E5M2FNUZ = "float8_e5m2fnuz"
    FLOAT8_E8M0FNU = "float8_e8m0fnu"
    FLOAT4_E2M1FN = "float4_e2m1fn"


_DTYPE_RE = re.compile(
    r"^(int|uint|float|bool|handle|bfloat|float8_e4m3fn|float8_e5m2|float8_e4m3fnuz"
    r"|float8_e5m2fnuz|float8_e8m0fnu|float4_e2m1fn)(\d*)(?:x(vscalex)?(\d+))?$"
)
_DEFAULT_BITS = {"int": 32, "uint": 32, "float": 32, "bool": 1, "handle": 64, "bfloat": 16}
# float8 kinds: the name is the whole type (TVM's and ml_dtypes' spelling), always 8 bits
_FLOAT8 = frozenset(
    (
        TypeCode.FLOAT8_E4M3FN,
        TypeCode.FLOAT8_E5M2,
        TypeCode.FLOAT8_E4M3FNUZ,
        TypeCode.FLOAT8_E5M2FNUZ,
        TypeCode.FLOAT8_E8M0FNU,
    )
)
# kinds whose name is the whole type, with their fixed widths
_NAMED_BITS = {**{code: 8 for code in _FLOAT8}, TypeCode.FLOAT4_E2M1FN: 4}
# the floating-point codes: arithmetic in codegen goes through float32 for all but FLOAT
_FLOATS = frozenset((TypeCode.FLOAT, TypeCode.BFLOAT, *_NAMED_BITS))
# dtypes numpy lacks, held by ml_dtypes arrays (one element per byte for the 2- and 4-bit
# types)
ML_DTYPES = _ML_DTYPES = frozenset(
    (
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn",
        "int2",
        "uint2",
        "int4",
        "uint4",
    )
)


class DataType:
    """An element type with a lane count: `DataType("float32x16")`. Interned; compare with `==`.

    A scalable vector (Arm SVE) `"float32xvscalex4"` has vscale * 4 lanes, a count known only
    at run time; as in TVM its `lanes` is stored negated (-4), so `is_vector` is False and
    `vscale_factor` gives the 4."""

    __slots__ = ("code", "bits", "lanes", "_str")

    def __new__(cls, spec: "str | DataType | np.dtype | type") -> "DataType":
        if isinstance(spec, DataType):
            return spec
        return _parse(_spec_string(spec))

    @classmethod
    def _make(cls, code: TypeCode, bits: int, lanes: int) -> "DataType":
        self = object.__new__(cls)
        self.code, self.bits, self.lanes = code, bits, lanes
        if code in _NAMED_BITS or (code is TypeCode.HANDLE and bits == 64):
            base = code.value  # as TVM: a pointer-sized handle prints as "handle"
        else:
            base = "bool" if code is TypeCode.BOOL else f"{code.value}{bits}"
        if lanes < 0:
            self._str = f"{base}xvscalex{-lanes}"
        else:
            self._str = base if lanes == 1 else f"{base}x{lanes}"
        return self

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return f'DataType("{self._str}")'

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = DataType(other)
            except DTypeError:
                return False
        return self is other

    def __hash__(self) -> int:
        return hash(self._str)

    def __reduce__(self):
        raise TypeError("DataType is not picklable by design; store str(dtype)")

    # --- queries -------------------------------------------------------
    @property
    def is_float(self) -> bool:
        """Any floating-point type: float16/32/64, bfloat16, the float8 kinds and float4."""
        return self.code in _FLOATS

    @property
    def is_bfloat16(self) -> bool:
        return self.code is TypeCode.BFLOAT

    @property
    def is_float8(self) -> bool:
        return self.code in _FLOAT8

    @property
    def is_float4(self) -> bool:
        return self.code is TypeCode.FLOAT4_E2M1FN

    @property
    def is_ieee_float(self) -> bool:
        """float16, float32 or float64: the float types LLVM computes with directly."""
        return self.code is TypeCode.FLOAT

    @property
    def is_int(self) -> bool:
        return self.code is TypeCode.INT

    @property
    def is_uint(self) -> bool:
        return self.code is TypeCode.UINT

    @property
    def is_bool(self) -> bool:
        return self.code is TypeCode.BOOL

    @property
    def is_handle(self) -> bool:
        return self.code is TypeCode.HANDLE

    @property
    def is_integer(self) -> bool:
        """int or uint (not bool)."""
        return self.code in (TypeCode.INT, TypeCode.UINT)

    @property
    def is_scalar(self) -> bool:
        return self.lanes == 1

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def is_scalable_vector(self) -> bool:
        """A vector of vscale * k lanes (`"int32xvscalex4"`), k = `vscale_factor`."""
        return self.lanes < 0

    @property
    def is_fixed_length_vector(self) -> bool:
        return self.lanes > 1

    @property
    def is_scalable_or_fixed_length_vector(self) -> bool:
        return self.lanes != 1

    @property
    def vscale_factor(self) -> int:
        """k of a scalable vector's vscale * k lanes."""
        if self.lanes >= 0:
            raise DTypeError(f"{self} is not a scalable vector; it has no vscale factor")
        return -self.lanes

    def _fixed_lanes(self) -> int:
        if self.lanes < 0:
            raise DTypeError(
                f"{self} is a scalable vector: its size is only known at run time (vscale)"
            )
        return self.lanes

    @property
    def bytes(self) -> int:
        """Storage size of one element in bytes (bool is stored as one byte)."""
        return max(self.bits, 8) // 8 * self._fixed_lanes()

    def itemsize(self) -> int:
        """Bytes one value of this type occupies, all lanes together (TVM's rounding up of bits:
        `float8x4` is 4, `bool` is 1). `DataType("float32x4").itemsize()` is 16."""
        return (self.bits * self._fixed_lanes() + 7) // 8

    def with_scalable_vscale_factor(self, factor: int) -> "DataType":
        """This element type with vscale * `factor` lanes."""
        if factor < 1:
            raise DTypeError(f"vscale factor of {self} must be positive, got {factor}")
        return _make(self.code, self.bits, -factor)

    def element_of(self) -> "DataType":
        return _make(self.code, self.bits, 1)

    def with_lanes(self, lanes: int) -> "DataType":
        return _make(self.code, self.bits, lanes)

    def with_bits(self, bits: int) -> "DataType":
        return _make(self.code, bits, self.lanes)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype, so that numpy accepts a DataType wherever it takes a dtype
        (`np.zeros(n).astype(buf.dtype)`, as TVM's str dtypes allow)."""
        try:
            return self.numpy_dtype()
        except DTypeError as err:
            raise AttributeError(str(err)) from err  # hasattr()/numpy see "no numpy dtype"

    def numpy_dtype(self) -> np.dtype:
        if self.lanes != 1:
            raise DTypeError(f"vector type {self} has no numpy dtype")
        if self.is_handle:
            raise DTypeError("handle has no numpy dtype")
        if self._str in _ML_DTYPES:
            return _ml_dtype(self._str)
        return np.dtype("bool" if self.is_bool else self._str)


def _ml_dtype(name: str) -> np.dtype:
    """The numpy dtype of a type numpy lacks, from the ml_dtypes package (imported on demand:
    it is not a dependency of minitvm, though onnx, jax and torch's exporters bring it)."""
    try:
        import ml_dtypes
    except ImportError as err:
        raise DTypeError(
            f"dtype {name!r} needs the ml_dtypes package for numpy arrays; pip install ml_dtypes"
        ) from err
    return np.dtype(getattr(ml_dtypes, name))


@lru_cache(maxsize=None)
def _make(code: TypeCode, bits: int, lanes: int) -> DataType:
    return DataType._make(code, bits, lanes)


# TVM v0.19's spellings of the float8 kinds (later TVM and ml_dtypes use the names above)
_OLD_FLOAT8_NAMES = {"e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2"}


@lru_cache(maxsize=None)
def _parse(spec: str) -> DataType:
    head, sep, lanes_text = spec.partition("x")
    if head in _OLD_FLOAT8_NAMES:
        return _parse(_OLD_FLOAT8_NAMES[head] + sep + lanes_text)
    m = _DTYPE_RE.match(spec)
    if m is None:
        raise DTypeError(
            f"unknown dtype {spec!r}; use e.g. 'float32', 'float64', 'int8'..'int64', "
            "'uint8', 'bool', 'bfloat16', 'float8_e4m3fn', 'float8_e5m2', 'float8_e8m0fnu', "
            "'float4_e2m1fn', 'int4', 'int2', "
            "optionally with lanes like 'float32x8'"
        )
    name, bits, scalable, lanes = m.group(1), m.group(2), m.group(3), m.group(4)
    nbits = int(bits) if bits else _DEFAULT_BITS.get(name, 8)
    if name == "bool":
        nbits = 1
    if name == "uint" and nbits == 1:  # TVM's bool is uint1: "uint1x2" is "boolx2"
        name = "bool"
    valid = {
        "int": (2, 4, 8, 16, 32, 64),
        "uint": (1, 2, 4, 8, 16, 32, 64),
        "float": (16, 32, 64),
        "bfloat": (16,),
    }
    if name in valid and nbits not in valid[name]:
        raise DTypeError(f"unsupported dtype {spec!r}: {name} with {nbits} bits")
    fixed = _NAMED_BITS.get(TypeCode(name))
    if fixed is not None:
        if bits:
            raise DTypeError(f"unknown dtype {spec!r}: write {name!r} (always {fixed} bits)")
        nbits = fixed
    nlanes = int(lanes) if lanes else 1
    if scalable:
        if nlanes < 1:
            raise DTypeError(f"unknown dtype {spec!r}: the vscale factor must be positive")
        nlanes = -nlanes
    return _make(TypeCode(name), nbits, nlanes)


def _spec_string(spec: object) -> str:
    if isinstance(spec, str):
        return spec
    try:
        npd = np.dtype(spec)  # type: ignore[call-overload]
    except TypeError as err:
        raise DTypeError(f"cannot interpret {spec!r} as a dtype") from err
    return "bool" if npd == np.bool_ else npd.name  # ml_dtypes' names are ours too


def dtype_of(value: object) -> DataType:
    """DataType of a Python scalar as TVM infers it: int → int32, float → float32, bool → bool."""
    if isinstance(value, bool | np.bool_):
        return DataType("bool")
    if isinstance(value, int | np.integer):
        if isinstance(value, np.integer):
            return DataType(value.dtype)
        return DataType("int32") if -(2**31) <= value < 2**31 else DataType("int64")
    if isinstance(value, float | np.floating):
        if isinstance(value, np.floating):
            return DataType(value.dtype)
        return DataType("float32")
    raise DTypeError(f"cannot infer a dtype for {value!r} of type {type(value).__name__}")


int32 = DataType("int32")
int64 = DataType("int64")
float32 = DataType("float32")
float64 = DataType("float64")
boolean = DataType("bool")
handle = DataType("handle")
