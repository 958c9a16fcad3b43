"""No import cycles among pdx_lightning's modules: the grimp graph of every import statement (module level,
inside functions, and under ``if TYPE_CHECKING:``) has no strongly connected component of two or more
modules, nor a module importing itself. lint-imports checks the layers; this checks within them. The graph is
the package as installed (``tools.installed_layout``: ``callbacks/`` is ``pdx_lightning.callbacks``)."""

from __future__ import annotations

import itertools

import grimp

from tools.installed_layout import build_graph

# cycles known and being removed, each as the frozenset of its modules (keep empty: a new cycle fails the test)
EXPECTED_CYCLES: set[frozenset[str]] = set()


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, or one importing itself
    (iterative: no recursion limit), each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    succ = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in succ[v]:
                    found.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return sorted(found)


def _chain(graph: grimp.ImportGraph, comp: list[str]) -> str:
    """One cycle through the component's first module, as ``a -> b -> ... -> a`` with the import lines."""
    first = comp[0]
    if first in graph.find_modules_directly_imported_by(first):
        chain = (first, first)
    else:
        back = min(m for m in comp if first in graph.find_modules_directly_imported_by(m))
        chain = (*graph.find_shortest_chain(importer=first, imported=back), first)
    steps = []
    for a, b in itertools.pairwise(chain):
        lines = sorted(
            {f"{d['line_number']}: {d['line_contents']}" for d in graph.get_import_details(importer=a, imported=b)}
        )
        steps.append(f"  {a} -> {b}  ({'; '.join(lines)})")
    return "\n".join(steps)


def test_the_tarjan_helper_finds_cycles():
    g = grimp.ImportGraph()
    for m in "abcde":
        g.add_module(m)
    for a, b in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("e", "e")]:
        g.add_import(importer=a, imported=b)
    assert strongly_connected(g) == [["a", "b", "c"], ["e"]]


def test_no_import_cycles():
    graph = build_graph(exclude_type_checking_imports=False)
    assert len(graph.modules) > 100 and {"pdx_lightning.rl.selfplay", "pdx_lightning.callbacks.ema"} <= graph.modules
    cycles = [c for c in strongly_connected(graph) if frozenset(c) not in EXPECTED_CYCLES]
    assert not cycles, "import cycles (break each, e.g. move the shared part down a module):\n" + "\n\n".join(
        f"{', '.join(c)}:\n{_chain(graph, c)}" for c in cycles
    )
