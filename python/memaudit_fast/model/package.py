"""The package model: validation of the single-file layout ``memaudit.package/1``.

A package freezes one memory-writing decision (see ``package-format.md``). The model keeps
the user's dict untouched in ``Package.data`` (so unknown keys survive a round trip) and
adds a validated, typed view of what the solver needs. Validation is complete before any
solving: every defect (up to ``MAX_ERRORS``) is reported as a :class:`PackageError` naming
the package, the record, the field, what was found and what was expected; the exception
raised is the first, and its ``errors`` holds them all. Nothing is repaired silently.

Two validators give the same answers. The fast one (:mod:`.fastpath`) lets msgspec
check every type in one C pass, then checks the cross-references with set operations, and
answers only "valid" or "look closer"; the careful one (:mod:`.validate`) runs whenever
the fast one is in doubt and finds and words every error.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from .. import _core
from . import validate as _validate
from .fastpath import _encodable, _fast_package, scanned_package
from .jsonio import decode_utf8, find_defects, loads_fast, parse_careful
from .limits import Limits, current_limits
from .spec import (
    FORMAT,
    MAX_ERRORS,
    OWN_GROUP,
    SATURATIONS,
    Locator,
    SaturationSpec,
    _default_locator,
    locate_sources,
)

__all__ = [
    "FORMAT", "MAX_ERRORS", "OWN_GROUP", "SATURATIONS", "Locator", "Package", "SaturationSpec",
    "locate_sources", "package_from_json",
]


@dataclass
class Package:
    """A validated package.

    Attributes
    ----------
    data : dict
        The package as given (single-file layout); never modified by validation. From
        :meth:`from_dict`, numpy numbers and arrays in it are Python numbers and lists, and
        tuples are lists (a copy holds them; the caller's dict is left as it is).
    source : str or None
        Where it was read from, for messages.
    """

    data: dict[str, Any]
    source: str | None = None
    weights_rule: str = "explicit"
    unit_weights: list[float] = field(default_factory=list)
    unit_saturations: list[SaturationSpec] = field(default_factory=list)
    default_saturation: SaturationSpec = SaturationSpec("cap1")  # noqa: RUF009 - frozen, shared safely
    candidate_groups: list[str] = field(default_factory=list)
    candidate_times: list[float] = field(default_factory=list)
    # (costs, indptr, indices, values) built by the fast validator, for compile_package.
    arrays: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(
        cls,
        data: Any,
        *,
        source: str | None = None,
        locator: Locator | None = None,
        limits: Limits | None = None,
        max_errors: int = MAX_ERRORS,
    ) -> Package:
        """Validate a single-file package dict and return the package.

        ``limits`` caps sizes (default: :func:`memaudit_fast.model.limits.current_limits`).
        A malformed package raises the first :class:`PackageError`; its ``errors`` lists
        every defect found (at most ``max_errors``).
        """
        limits = limits or current_limits()
        locator = locator or _default_locator
        plain = _is_plain_json(data)
        if not plain:  # what is kept must be written back unchanged: only JSON data is kept
            found: list[tuple[list[Any], str]] = []
            data = _json_data(data, found, limits.max_depth)
            if found:
                _Validator(data, source, locator, limits, max_errors=max_errors).refuse_defects(found)
        # msgspec cannot even word its complaint about a lone surrogate: such data (which is
        # never valid) goes straight to the careful validator, which names the string's path.
        if isinstance(data, dict) and (plain or _encodable(data)):
            fields = _fast_package(data, source, limits)
            if fields is not None:
                return cls(**fields)
        defects = find_defects(data, limit=max_errors)
        return _Validator(data, source, locator, limits, defects=defects, max_errors=max_errors).run()

    @classmethod
    def from_arrays(cls, cost: Any, group: Any, coverage: Any, weight: Any, **options: Any) -> Package:
        """A validated package from numpy / scipy.sparse arrays (costs, groups, a candidates x
        units coverage matrix, unit weights); options and rules: :mod:`memaudit_fast.model.arrays`."""
        from .arrays import SOURCE, arrays_to_data

        data, locator = arrays_to_data(cost, group, coverage, weight, **options)
        return cls.from_dict(data, source=SOURCE, locator=locator)

    def __repr__(self) -> str:
        data = self.data if isinstance(self.data, dict) else {}
        return (f"Package({data.get('package_id')!r}, candidates={len(data.get('candidates') or [])}, "
                f"units={len(data.get('units') or [])}, budgets={data.get('budgets', data.get('budget'))}, "
                f"saturation={self.saturation_name!r})")

    # Plain accessors over the user's data -------------------------------------------------
    @property
    def package_id(self) -> str:
        return str(self.data["package_id"])

    @property
    def units(self) -> list[dict[str, Any]]:
        return self.data["units"]

    @property
    def candidates(self) -> list[dict[str, Any]]:
        return self.data["candidates"]

    @property
    def experiences(self) -> list[dict[str, Any]]:
        return self.data.get("experiences") or []

    @property
    def queries(self) -> list[dict[str, Any]]:
        return self.data.get("queries") or []

    @property
    def budgets(self) -> list[float]:
        """The package's own budgets (empty when it has none)."""
        if "budgets" in self.data:
            return [float(b) for b in self.data["budgets"]]
        if "budget" in self.data:
            return [float(self.data["budget"])]
        return []

    @property
    def meta(self) -> Any:
        """The package's ``meta`` object (None when it has none)."""
        return self.data.get("meta")

    @property
    def saturation_name(self) -> str:
        names = {s.name for s in self.unit_saturations} or {self.default_saturation.name}
        return names.pop() if len(names) == 1 else "mixed"

    def total_cost(self) -> float:
        return float(sum(c["cost"] for c in self.candidates))

    def iter_candidates(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return enumerate(self.candidates)


# orjson writes a subclass, a dataclass or a datetime only when asked to: here it raises instead.
_PLAIN = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
# Python cannot write integers of more digits than about this as text.
_MAX_INT_BITS = 13_000
_JSON_DATA = "JSON data (an object with string keys, a list, a string, a finite number, true, false or null)"


def _is_plain_json(data: Any) -> bool:
    """Whether ``data`` is plain JSON data, decided in C: it comes back equal from its JSON
    text (NaN and infinities come back as null, a tuple as a list, a numpy number not at all)."""
    try:
        return bool(orjson.loads(orjson.dumps(data, option=_PLAIN)) == data)
    except (TypeError, ValueError, RecursionError):
        return False


def _json_data(data: Any, found: list[tuple[list[Any], str]], max_depth: int) -> Any:
    """A copy of ``data`` as plain JSON data: numpy numbers and numeric arrays as Python numbers
    and lists (exactly), tuples as lists. What is not JSON data is added to ``found`` as (JSON
    path, problem). Iterative, so depth (or data that holds itself) never hits the recursion limit."""
    holder = [data]
    stack: list[tuple[Any, Any, Any, list[Any], int]] = [(data, holder, 0, [], 0)]
    while stack:
        value, parent, slot, path, depth = stack.pop()
        value = parent[slot] = _json_value(value, path, found)
        if not isinstance(value, (dict, list, tuple)):
            continue
        if depth >= max_depth:
            found.append((path[:4], (f"arrays and objects in it nest more than {max_depth} levels deep (or "
                                    "hold themselves); a package needs a few (raise MEMAUDIT_MAX_DEPTH if genuine)")))
            continue
        children: list[tuple[Any, Any, Any, list[Any], int]] = []
        if isinstance(value, dict):
            out: Any = {}
            parent[slot] = out
            for key, child in value.items():
                if type(key) is not str:
                    if not isinstance(key, str):
                        fix = f"write it as {str(key)!r}" if isinstance(key, (int, float)) else "use a string key"
                        found.append((path + [repr(key)], (f"found the key {key!r} (a Python {type(key).__name__}); "
                                                          f"keys of a JSON object are strings: {fix}")))
                        continue
                    key = str(key)
                out[key] = None
                children.append((child, out, key, path + [key], depth + 1))
        else:
            out = [None] * len(value)
            parent[slot] = out
            children = [(child, out, i, path + [i], depth + 1) for i, child in enumerate(value)]
        stack.extend(reversed(children))
    return holder[0]


def _json_value(value: Any, path: list[Any], found: list[tuple[list[Any], str]]) -> Any:
    """One value as plain JSON (containers are copied by :func:`_json_data`)."""
    kind = type(value)
    if kind is str or kind is bool or value is None or kind is dict or kind is list:
        return value
    if kind is int:
        if value.bit_length() > _MAX_INT_BITS:
            found.append((path, (f"found an integer of {value.bit_length()} bits, far beyond what a double holds; "
                                "write a smaller number")))
        return value
    if kind is float:
        if not math.isfinite(value):
            found.append((path, f"found {value!r}; NaN and infinities are not JSON numbers: write a finite number"))
        return value
    numpy = sys.modules.get("numpy")  # a numpy value can only come from numpy once imported
    if numpy is not None and isinstance(value, (numpy.generic, numpy.ndarray)):
        return _json_value(_from_numpy(numpy, value, path, found), path, found)
    if isinstance(value, (dict, list, tuple)):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):  # an IntEnum is written as its number
        return _json_value(int(value), path, found)
    if isinstance(value, float):
        return _json_value(float(value), path, found)
    what = "a set; JSON has no sets: give a list" if isinstance(value, (set, frozenset)) else \
        f"a Python {kind.__name__}, expected {_JSON_DATA}"
    found.append((path, f"found {what}"))
    return value


def _from_numpy(numpy: Any, value: Any, path: list[Any], found: list[tuple[list[Any], str]]) -> Any:
    """A numpy number as the Python number of the same value, a numeric array as a list."""
    dtype = value.dtype
    if dtype.kind not in "biuf":
        found.append((path, (f"found a numpy {type(value).__name__} of dtype {dtype}, expected numbers; give "
                            "Python values (e.g. with .tolist())")))
        return None
    if isinstance(value, numpy.ndarray):
        if value.ndim == 0:
            return _from_numpy(numpy, value[()], path, found)
        # tolist is exact for these; wider floats are judged one by one as numpy numbers
        return value.tolist() if dtype.kind != "f" or dtype.itemsize <= 8 else list(value)
    if dtype.kind == "b":
        return bool(value)
    if dtype.kind in "iu":
        return int(value)
    number = float(value)
    if dtype.itemsize > 8 and math.isfinite(number) and numpy.longdouble(number) != value:
        found.append((path, (f"found the numpy {dtype} {value}, which a double does not hold exactly; "
                            "round it to a float64 first")))
    return number


class _ScannedPackage(Package):
    """A package read by the core's scanner (:func:`.fastpath.scanned_package`).

    Its dict is decoded from the text the first time ``data`` is asked for: scoring needs
    only the arrays, ids, budgets and ``meta``, which the scan gives. The text is the user's,
    so the dict decoded from it is exactly the package as given.
    """

    def __init__(self, *args: Any, text: bytes | None = None, scan: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        self.__dict__["_text"] = text
        self.__dict__["_scan"] = scan
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def data(self) -> dict[str, Any]:
        own = self.__dict__
        if own.get("_data") is None and own.get("_text") is not None:
            with _DECODING:  # threads asking at once all get the one dict
                if own.get("_data") is None:
                    own["_data"] = orjson.loads(own["_text"])  # proved strict JSON without repeated keys
                    own["_text"] = None
        return own["_data"]

    @data.setter
    def data(self, value: dict[str, Any] | None) -> None:
        self.__dict__["_data"] = value

    def _decoded(self) -> bool:
        return self.__dict__.get("_data") is not None or self.__dict__.get("_scan") is None

    @property
    def package_id(self) -> str:
        return super().package_id if self._decoded() else self.__dict__["_scan"]["package_id"]

    @property
    def budgets(self) -> list[float]:
        return super().budgets if self._decoded() else list(self.__dict__["_scan"]["budgets"])

    @property
    def meta(self) -> Any:
        text = self.__dict__.get("_text")
        if text is None or self._decoded():
            return super().meta
        span = self.__dict__["_scan"]["meta_span"]
        return None if span is None else orjson.loads(text[span[0]:span[1]])

    def __eq__(self, other: object) -> bool:  # equal to a Package of the same fields
        if not isinstance(other, Package):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(Package) if f.compare)

    __hash__ = None  # type: ignore[assignment]  # like Package's


_DECODING = threading.Lock()


def scan_text(raw: bytes, source: str | None, limits: Limits) -> Package | None:
    """The package of JSON text read by the core's scanner; None when it is in doubt."""
    found = scanned_package(raw, source, limits)
    return None if found is None else _ScannedPackage(text=raw, scan=found["arrays"], **found)


class _Validator(_validate._Validator):
    """The careful validator, returning a :class:`Package`."""

    def run(self) -> Package:  # type: ignore[override]
        return Package(**super().run())


def package_from_json(
    raw: bytes | str, *, source: str | None = None, record: str | None = None,
    locator: Locator | None = None, limits: Limits | None = None,
) -> Package:
    """Decode and validate one package from its JSON text (the reader every path uses).

    The core's scanner answers for valid packages, then the fast path (msgspec) for those it
    doubts (an escape in an id, a PWL saturation, ...); anything else is decoded again by the
    careful decoder and validator, which report every defect (up to ``MAX_ERRORS``) with its
    record, field, line and column.
    """
    limits = limits or current_limits()
    label = source or "<package>"
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    package = scan_text(raw, source, limits)
    if package is not None:
        return package
    counts = _core.count_package(raw, limits.max_depth)
    if counts is not None:  # a package above the limits is refused before it is decoded whole
        _Validator(None, source, locator or _default_locator, limits).refuse_counts(**counts)
    data = loads_fast(raw, limits.max_depth)
    if data is not None:
        fields = _fast_package(data, source, limits)
        if fields is not None:
            return Package(**fields)
    text = decode_utf8(raw, source=label, record=record)
    data = parse_careful(text, source=label, record=record, max_depth=limits.max_depth)
    defects = find_defects(data, limit=MAX_ERRORS)
    return _Validator(data, source, locator or _default_locator, limits, defects=defects).run()
