#!/usr/bin/env python3
"""The loops of a kernel's SASS and what each issues besides FFMAs, read offline.

usage: sass_loops.py FILE.sass [FILE.sass ...]   (cuobjdump -sass output)

For the function with the most FFMAs (sass_banks.main_function), every backward branch that
spans more than 100 FFMAs: its span, its instructions, its FFMAs and the commonest other
opcodes. A tiled kernel's k-loop appears twice (the interior path and the edge path), and the
longest span is the loop over a block's tiles with the epilogue in it, so read the k-loops off
the spans that hold exactly one tile's FFMAs (w_s · m_t · n_t) and no FMUL."""
import collections
import re
import sys

from sass_banks import BRANCH, address, main_function

OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def loops(lines):
    """(target line, branch line) of every backward branch."""
    at = {address(l): i for i, l in enumerate(lines) if address(l) is not None}
    out = []
    for i, line in enumerate(lines):
        branch, source = BRANCH.search(line), address(line)
        if branch and source is not None:
            target = int(branch.group(1), 16)
            if target < source and target in at:
                out.append((at[target], i))
    return out


def main():
    for path in sys.argv[1:]:
        lines = main_function(open(path).read())
        print(path)
        for start, end in loops(lines):
            ops = [m.group(1) for m in map(OPCODE.search, lines[start : end + 1]) if m]
            ffma = sum(op.startswith("FFMA") for op in ops)
            if ffma <= 100:
                continue
            others = collections.Counter(op.split(".")[0] for op in ops if not op.startswith("FFMA"))
            common = ", ".join(f"{op} {n}" for op, n in others.most_common(8))
            print(f"  loop {address(lines[start]):#x}..{address(lines[end]):#x}: {len(ops)} "
                  f"instructions, {ffma} FFMA, {len(ops) - ffma} others ({common})")


if __name__ == "__main__":
    main()
