"""YAML that expands past every bound: what the loader's tests and the commands' tests feed it."""

from __future__ import annotations

import itertools


def alias_bomb(levels: int = 9, width: int = 10) -> str:
    names = [f"l{i}" for i in range(levels)]
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['lol'] * width)}]"]
    for prev, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * width)}]")
    return "\n".join(lines) + "\n"
