"""The installed package: its stubs cover the extension module, it is typed."""

import ast
import pathlib

import nixl_telemetry
from nixl_telemetry import _native


def stub_names():
    stub = pathlib.Path(nixl_telemetry.__file__).parent / "_native.pyi"
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
    return names, tree


def test_the_package_ships_stubs_and_py_typed():
    root = pathlib.Path(nixl_telemetry.__file__).parent
    assert (root / "py.typed").is_file()
    assert (root / "_native.pyi").is_file()


def test_stubs_cover_every_public_name_and_method():
    names, tree = stub_names()
    public = {n for n in dir(_native) if not n.startswith("_")}
    assert public - names == set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in public:
            declared = {m.name for m in node.body if isinstance(m, ast.FunctionDef)} | {
                m.target.id for m in node.body if isinstance(m, ast.AnnAssign)}
            actual = {m for m in vars(getattr(_native, node.name))
                      if not m.startswith("__") or m in ("__enter__", "__exit__", "__iter__")}
            assert actual - declared == set(), node.name


def test_abi3_extension():
    assert _native.__file__.endswith(".abi3.so")


def test_one_version_for_the_package_and_its_distribution():
    import importlib.metadata
    import re

    assert nixl_telemetry.__version__ == importlib.metadata.version("nixl-telemetry")
    assert re.fullmatch(r"(\S+) \(commit ([0-9a-f]{12}|unknown|unknown: debug build)\)", nixl_telemetry.__build__)
    assert nixl_telemetry.__build__.startswith(nixl_telemetry.__version__ + " ")
