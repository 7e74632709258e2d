"""Sending an OpenDP measurement to worker processes. Measurements are ctypes pointers, which do
not pickle, so a measurement travels in a portable form and is rebuilt on arrival: OpenDP's own
JSON serialization (`dp.serialize`), or, for what that encoder does not handle, the constructor
calls OpenDP recorded (`__opendp_dict__`), called again in the worker.
"""
from __future__ import annotations

import importlib
import pickle

from .. import require_opendp


class _Call(tuple):
    """A picklable record of one OpenDP constructor call: (module, function, kwargs)."""


def _recipe(value):
    """The constructor calls that rebuild `value` (from OpenDP's `__opendp_dict__` records),
    with plain values and type descriptors kept as they are."""
    record = getattr(value, "__opendp_dict__", None)
    if isinstance(record, dict) and "__function__" in record:
        kwargs = {k: _recipe(v) for k, v in record.get("__kwargs__", {}).items()}
        return _Call((record["__module__"], record["__function__"], kwargs))
    if isinstance(value, (list, tuple)) and not isinstance(value, _Call):
        return type(value)(_recipe(v) for v in value)
    return value


def _rebuild(recipe):
    """Call the constructors a `_recipe` recorded."""
    if isinstance(recipe, _Call):
        module, function, kwargs = recipe
        call = getattr(importlib.import_module(f"opendp.{module}"), function)
        return call(**{k: _rebuild(v) for k, v in kwargs.items()})
    if isinstance(recipe, (list, tuple)):
        return type(recipe)(_rebuild(v) for v in recipe)
    return recipe


def portable_form(measurement):
    """("json", text) from OpenDP's serializer, else ("recipe", calls) when every piece was
    built by a recorded constructor; raises PicklingError when neither works (e.g. a
    measurement with Python callbacks)."""
    dp = require_opendp()
    try:
        return "json", dp.serialize(measurement)
    except Exception as exc:
        reason = str(exc).strip()
    try:
        recipe = _recipe(measurement)
        pickle.dumps(recipe)
        if isinstance(recipe, _Call):
            return "recipe", recipe
    except Exception:  # a piece without a constructor record: nothing to rebuild it from
        pass
    raise pickle.PicklingError(
        f"this OpenDP measurement cannot be serialized ({reason}), so it cannot be sent to "
        "worker processes; audit it with backend='threading'")


def enabled_features() -> list:
    """The OpenDP features enabled in this process (sorted), to enable again where a
    measurement is rebuilt."""
    return sorted(require_opendp().GLOBAL_FEATURES)


def rebuild(form, features):
    """The measurement a `portable_form` describes, rebuilt with `features` enabled."""
    dp = require_opendp()
    dp.enable_features(*features)
    kind, payload = form
    return dp.deserialize(payload) if kind == "json" else _rebuild(payload)
