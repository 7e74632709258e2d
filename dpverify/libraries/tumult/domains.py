"""What kind of Tumult Core domain a value is, asked by class name so that no module needs
Tumult Core imported to ask (`pairs.py` builds inputs by it, `inputs.py` converts them)."""
from __future__ import annotations


def is_a(obj, class_name: str) -> bool:
    """Whether obj's class or one of its bases is called class_name (no import of Tumult Core
    needed to ask)."""
    return any(klass.__name__ == class_name for klass in type(obj).__mro__)


def element_kind(domain):
    """int, float or str for a NumPy element domain, else None."""
    for name, kind in (("NumpyIntegerDomain", int), ("NumpyFloatDomain", float),
                       ("NumpyStringDomain", str)):
        if is_a(domain, name):
            return kind
    return None
