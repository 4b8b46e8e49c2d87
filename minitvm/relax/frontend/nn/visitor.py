"""TVM's `nn.Mutator`: rewrite a module tree in place (swap submodules, effects, parameters).

    class ToFloat32(nn.Mutator):
        def visit_param(self, name, node):
            return nn.Parameter(node.shape, "float32") if node.dtype == "float16" else node

    model = ToFloat32().visit("", model)

Each child is replaced by what its `visit_*` method returns; the default methods recurse, so a
subclass overrides only the kinds it cares about. Names are dotted paths from the root's name.
"""

from __future__ import annotations

from typing import Any

from .core import Effect, Module, ModuleDict, ModuleList, Parameter


class Mutator:
    """Walks an nn.Module tree; override `visit_module/visit_param/visit_effect/
    visit_moduledict/visit_modulelist` to replace what they are given."""

    def visit_module(self, name: str, node: Module) -> Any:
        """Replacement for submodule `node`; by default its children are visited."""
        return self.visit(name, node)

    def visit_effect(self, name: str, node: Effect) -> Any:
        """Replacement for effect `node`; by default itself."""
        return self.visit(name, node)

    def visit_param(self, name: str, node: Parameter) -> Any:
        """Replacement for parameter `node`; by default itself."""
        return self.visit(name, node)

    def visit_moduledict(self, name: str, node: ModuleDict) -> Any:
        """Replacement for a ModuleDict; by default its entries are visited."""
        return self.visit(name, node)

    def visit_modulelist(self, name: str, node: ModuleList) -> Any:
        """Replacement for a ModuleList; by default its items are visited."""
        return self.visit(name, node)

    def visit(self, name: str, node: Any) -> Any:
        """Visit the children of `node` (a module, list or dict of modules), storing each
        child's replacement back in place, and return `node`."""
        if isinstance(node, ModuleList):
            slots: Any = [(i, f"{name}.{i}", c) for i, c in enumerate(node.modules)]
        elif isinstance(node, ModuleDict):
            slots = [(k, _child_name(name, k), c) for k, c in node.modules.items()]
        elif isinstance(node, Module):
            slots = [(k, _child_name(name, k), c) for k, c in node.__dict__.items()]
        else:
            return node
        for key, child_name, child in slots:
            method = self._method_for(child)
            if method is None:
                continue
            if isinstance(node, ModuleList | ModuleDict):
                node.modules[key] = method(child_name, child)
            else:
                setattr(node, key, method(child_name, child))
        return node

    def _method_for(self, child: Any) -> Any:
        # Containers are checked before Module because they are Modules too.
        for kind, method in (
            (ModuleDict, self.visit_moduledict),
            (ModuleList, self.visit_modulelist),
            (Module, self.visit_module),
            (Effect, self.visit_effect),
            (Parameter, self.visit_param),
        ):
            if isinstance(child, kind):
                return method
        return None


def _child_name(parent: str, child: Any) -> str:
    return str(child) if parent == "" else f"{parent}.{child}"
