"""The public surface: the type stubs (.pyi) name exactly what the modules define, with
the same parameters, and every public name has a docstring."""

import ast
import inspect
import pathlib

import pytest

import vmstore
import vmstore.dbm

PACKAGE = pathlib.Path(vmstore.__file__).parent
MODULES = {"__init__": vmstore, "dbm": vmstore.dbm}


def stub_tree(name):
    return ast.parse((PACKAGE / f"{name}.pyi").read_text())


def public(name):
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def stub_classes(tree):
    """{class name: {member name: ast node}} of a stub."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = {
                n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
    return out


def stub_functions(tree):
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def parameters(node):
    """(name, kind) of a stub function's parameters, as inspect reports them."""
    a = node.args
    out = [(p.arg, "POSITIONAL_ONLY") for p in a.posonlyargs]
    out += [(p.arg, "POSITIONAL_OR_KEYWORD") for p in a.args]
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL"))
    out += [(p.arg, "KEYWORD_ONLY") for p in a.kwonlyargs]
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD"))
    return out


def runtime_parameters(func):
    return [(p.name, p.kind.name) for p in inspect.signature(func).parameters.values()]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_stub_names_match_the_module(name):
    module = MODULES[name]
    tree = stub_tree(name)
    classes, functions = stub_classes(tree), stub_functions(tree)
    for cls_name, members in classes.items():
        runtime_cls = getattr(module, cls_name)
        assert inspect.isclass(runtime_cls), cls_name
        # Members of the class and of its private helper bases (which the stub folds in).
        sources = [
            c
            for c in runtime_cls.__mro__
            if c is runtime_cls or (c.__name__.startswith("_") and c.__module__ == module.__name__)
        ]
        own = {
            n
            for c in sources
            for n, v in vars(c).items()
            if public(n) and (callable(v) or isinstance(v, property))
        }
        own -= {"__init_subclass__", "__subclasshook__", "__class_getitem__", "__hash__", "__repr__"}
        stubbed = {n for n in members if public(n)}
        assert stubbed == own, (cls_name, stubbed ^ own)
        for member, node in members.items():
            attr = next(vars(c)[member] for c in sources if member in vars(c))
            if isinstance(attr, property):
                continue
            assert parameters(node) == runtime_parameters(attr), (cls_name, member)
    for func_name, node in functions.items():
        assert parameters(node) == runtime_parameters(getattr(module, func_name)), func_name
    exported = set(module.__all__)
    defined = set(classes) | set(functions)
    for node in tree.body:
        if isinstance(node, (ast.AnnAssign, ast.Assign)):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            defined |= {t.id for t in targets if isinstance(t, ast.Name)}
    assert exported <= defined, exported - defined


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_public_name_has_a_docstring(name):
    module = MODULES[name]
    assert module.__doc__
    for export in module.__all__:
        obj = getattr(module, export)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, export
        if inspect.isclass(obj) and obj.__module__ == module.__name__:
            for member, value in vars(obj).items():
                if public(member) and (inspect.isfunction(value) or isinstance(value, property)):
                    assert value.__doc__, f"{export}.{member}"


def test_typed_marker():
    assert (PACKAGE / "py.typed").exists()


def test_core_stub_names_match_the_extension():
    """_core.pyi names exactly the classes, methods and functions of the C++ core (the
    parameters of nanobind functions are not introspectable, so names only)."""
    import vmstore._core as core

    tree = stub_tree("_core")
    classes, functions = stub_classes(tree), stub_functions(tree)
    runtime_classes = {n for n, v in vars(core).items() if inspect.isclass(v)}
    assert set(classes) == runtime_classes
    for cls_name, members in classes.items():
        runtime = set(vars(getattr(core, cls_name))) - {"__doc__", "__module__", "__init__", "__new__"}
        assert set(members) == runtime, (cls_name, set(members) ^ runtime)
    runtime_functions = {n for n, v in vars(core).items() if callable(v) and not inspect.isclass(v)}
    assert set(functions) == runtime_functions
