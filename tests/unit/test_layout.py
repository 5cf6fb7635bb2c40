# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The package's layout: no import circles.

Every ``import`` and ``from ... import`` of a package module, at any depth
of a module: a function's late import and an ``if TYPE_CHECKING:`` import
count too (they hide a circle, they do not remove it).
"""

import ast
import os

import testtools

import nova_snapshot_ext

PACKAGE = os.path.dirname(nova_snapshot_ext.__file__)


def _modules():
    """``{dotted name: path}`` of every module of the package."""
    found = {}
    top = os.path.dirname(PACKAGE)
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            dotted = os.path.relpath(path, top)[:-3].replace(os.sep, '.')
            if dotted.endswith('.__init__'):
                dotted = dotted[:-len('.__init__')]
            found[dotted] = path
    return found


def _imports(tree, package, modules):
    """The package modules ``tree`` imports, wherever the import is."""
    found = set()
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in modules:
                    name = name.rpartition('.')[0]
                if name:
                    found.add(name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = package.split('.')
                parts = parts[:len(parts) - node.level + 1]
                base = '.'.join(parts + ([base] if base else []))
            for alias in node.names:
                full = '%s.%s' % (base, alias.name)
                if full in modules:
                    found.add(full)
                elif base in modules:
                    found.add(base)
        todo.extend(ast.iter_child_nodes(node))
    return found


def import_graph():
    """``{module: set of package modules it imports}``."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        with open(path, encoding='utf-8') as source:
            tree = ast.parse(source.read(), path)
        package = name if path.endswith('__init__.py') else (
            name.rpartition('.')[0])
        graph[name] = _imports(tree, package, modules) - {name}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


class TestNoImportCircles(testtools.TestCase):

    def test_the_package_has_no_import_circle(self):
        self.assertEqual([], cycles(import_graph()))

    def test_a_circle_is_found(self):
        graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}
        self.assertEqual([['a', 'b', 'c']], cycles(graph))

    def test_late_and_type_checking_imports_count(self):
        modules = {'p', 'p.a', 'p.b', 'p.c', 'p.d'}
        tree = ast.parse(
            'import typing as ty\n'
            'if ty.TYPE_CHECKING:\n'
            '    from p import c\n'
            'def f():\n'
            '    from p import b\n'
            '    import p.d\n')
        self.assertEqual({'p.b', 'p.c', 'p.d'}, _imports(tree, 'p', modules))
        tree = ast.parse('from . import a\nfrom .b import x\n')
        self.assertEqual({'p.a', 'p.b'}, _imports(tree, 'p', modules))
