"""scikit-build-core dynamic-metadata provider (pyproject.toml): the wheel's
dependency on the torch release it is built against, read from the build
environment's torch: 2.15.0 gives dependencies = ["torch==2.15.*"].
libctorch's generated functions follow that torch's operator schemas, and its
SONAME names that major.minor (libctorch.so.0-torch2.15), so the wheel must
not be installed beside another torch. cmake/ctorch_wheel.cmake builds against
the same Python's torch (CTORCH_TORCH = the Python running the build).

requires-python is that torch's own (torch 2.15.0: >=3.11, the CPythons it has
wheels for), not ctorch's floor alone (3.9, the binding's own code): a wheel
that pip installs where its torch cannot be installed helps nobody."""
import re


def dynamic_metadata(settings, project):
    try:
        from importlib.metadata import version
        v = version("torch")
    except Exception as e:  # noqa: BLE001 (PackageNotFoundError, or no metadata)
        raise RuntimeError(
            "ctorch's wheel is built against the torch of the build environment, and this one has none "
            f"({e!r}): build it where torch is installed, without build isolation "
            "(pip wheel --no-build-isolation --no-deps ., or scripts/package wheel)") from None
    m = re.match(r"(\d+)\.(\d+)", v)
    if not m:
        raise RuntimeError(f"ctorch: cannot read torch's version {v!r}")
    return {"dependencies": [f"torch=={m.group(1)}.{m.group(2)}.*"], "requires-python": requires_python()}


OWN_FLOOR = (3, 9)  # what the binding's Python code itself needs


def requires_python():
    """The build environment torch's Requires-Python where it is at least
    ctorch's own floor, else ctorch's floor."""
    from importlib.metadata import metadata
    spec = (metadata("torch").get("Requires-Python") or "").strip()
    m = re.fullmatch(r">=\s*(\d+)\.(\d+)(?:\.\d+)*", spec)
    if m and (int(m.group(1)), int(m.group(2))) >= OWN_FLOOR:
        return f">={m.group(1)}.{m.group(2)}"
    return ">=%d.%d" % OWN_FLOOR
