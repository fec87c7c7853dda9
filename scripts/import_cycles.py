#!/usr/bin/env python3
"""Import cycles between sibling modules of a Rust crate, read from its `use` lines and paths.

    python3 scripts/import_cycles.py [CRATE_SRC ...]     (default: src crates/*/src)

Each file is a module (`src/magics/host.rs` is `magics::host`, a `mod.rs` is its folder). A path
`crate::a::b::…`, `super::…` or `self::…` in a module's code is a dependency on the deepest module
it names. A dependency of `a::x::…` on `a::y::…` is an edge between the siblings `a::x` and
`a::y` (their common parent is `a`); at the top, between `x` and `y`. Every strongly connected
group of two or more siblings is an import cycle. Test code is left out: files named `tests*.rs`
or `*_tests.rs`, files under a `tests/` folder, and whatever follows a `#[cfg(test)]` line.

Prints each cycle as `crate: parent: {a, b, …}` and ends with `import_cycles: N` (the number of
cycles over all the crates given); exits 0 either way.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_RE = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]*);", re.S)


def module_of(root: Path, file: Path) -> tuple[str, ...]:
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return tuple(parts)


def is_test_file(root: Path, file: Path) -> bool:
    rel = file.relative_to(root)
    name = file.stem
    return (
        "tests" in rel.parts[:-1]
        or name.startswith("tests")
        or name.endswith("_tests")
        or name == "test_code"
    )


def strip_tests_and_comments(text: str) -> str:
    out = []
    for line in text.splitlines():
        if line.strip().startswith("#[cfg(test)]"):
            break
        line = re.sub(r"//.*", "", line)
        out.append(line)
    return "\n".join(out)


def expand_use(tree: str) -> list[str]:
    """`crate::{a::b, c::{d, e}}` -> ["crate::a::b", "crate::c::d", "crate::c::e"]."""
    tree = re.sub(r"\s+", "", tree)

    def parse(s: str, i: int, prefix: str) -> tuple[list[str], int]:
        paths: list[str] = []
        cur = ""
        while i < len(s):
            c = s[i]
            if c == "{":
                sub, i = parse(s, i + 1, prefix + cur)
                paths.extend(sub)
                cur = ""
                continue
            if c == "}":
                if cur:
                    paths.append(prefix + cur)
                return paths, i + 1
            if c == ",":
                if cur:
                    paths.append(prefix + cur)
                cur = ""
                i += 1
                continue
            cur += c
            i += 1
        if cur:
            paths.append(prefix + cur)
        return paths, i

    return parse(tree, 0, "")[0]


def deps_of(module: tuple[str, ...], text: str, modules: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    paths: list[str] = []
    for m in USE_RE.finditer(text):
        paths.extend(expand_use(m.group(1)))
    for m in PATH_RE.finditer(text):
        paths.append(m.group(0))
    deps = set()
    for p in paths:
        segs = [s for s in p.split("::") if s]
        if not segs or segs[0] not in ("crate", "super", "self"):
            continue
        base: list[str]
        if segs[0] == "crate":
            base, rest = [], segs[1:]
        else:
            base = list(module)
            rest = segs
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super" and base:
                    base.pop()
                rest = rest[1:]
        full = base + rest
        # The deepest module the path names.
        best: tuple[str, ...] = ()
        for n in range(len(full), 0, -1):
            if tuple(full[:n]) in modules:
                best = tuple(full[:n])
                break
        if best:
            deps.add(best)
    return deps


def sccs(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def crate_cycles(root: Path) -> list[tuple[str, list[str]]]:
    files = [f for f in sorted(root.rglob("*.rs")) if not is_test_file(root, f)]
    modules = {module_of(root, f) for f in files}
    # Folders with a `foo.rs` beside `foo/` are modules too; their files are already there.
    sibling_edges: dict[tuple[str, ...], dict[str, set[str]]] = {}
    for f in files:
        m = module_of(root, f)
        text = strip_tests_and_comments(f.read_text(errors="replace"))
        for d in deps_of(m, text, modules):
            k = 0
            while k < min(len(m), len(d)) and m[k] == d[k]:
                k += 1
            if k == len(m) or k == len(d):
                continue  # an ancestor or a descendant, not a sibling
            parent = m[:k]
            sibling_edges.setdefault(parent, {}).setdefault(m[k], set()).add(d[k])
    cycles = []
    for parent, edges in sorted(sibling_edges.items()):
        nodes = sorted(set(edges) | {w for ws in edges.values() for w in ws})
        for group in sccs(nodes, edges):
            cycles.append(("::".join(parent) or "crate", group))
    return cycles


def main() -> int:
    roots = [Path(a) for a in sys.argv[1:]] or [Path("src")] + sorted(Path("crates").glob("*/src"))
    total = 0
    for root in roots:
        for parent, group in crate_cycles(root):
            total += 1
            print(f"{root}: {parent}: {{{', '.join(group)}}}")
    print(f"import_cycles: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
