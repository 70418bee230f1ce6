#!/usr/bin/env python3
"""Register-bank pressure of a kernel's FFMAs, read offline from its SASS.

usage: sass_banks.py FILE.sass [FILE.sass ...]   (cuobjdump -sass output)

For every FFMA, the source registers it reads from the register file are grouped by register
number mod 2; an FFMA with two or more such registers of one parity reads one bank twice. An
operand marked .reuse is read from the file and kept in the operand reuse cache for the next
instruction: it is that next instruction which reads the register from the cache, when it
has the same register in the same operand slot (so the first FFMA of a chain that shares an
operand pays, and the last, unmarked one does not). Prints, per file,
the FFMA count and the share that does, over the kernel and over its main loop: the span of
the longest backward branch in the function with the most FFMAs, the interior k-loop. Why
it matters: the section "Register banks" that docs/results/v4.14/stash.patch adds to the
design document."""
import re
import sys

ADDRESS = re.compile(r"/\*([0-9a-f]{4,})\*/")
BRANCH = re.compile(r"\bBRA\s+(0x[0-9a-f]+)")
FFMA = re.compile(r"\bFFMA\S*\s+(R\d+|RZ)\s*,\s*(.*?)\s*;")
INSTRUCTION = re.compile(r"\*/\s+(?:@!?U?P\w+\s+)?[A-Z][A-Z0-9_.]*\s+(?:[^,;]+,)?\s*(.*?)\s*;")
OPERAND = re.compile(r"^-?\|?(R\d+)(\.reuse)?\|?$")


def main_function(text):
    """The lines of the function (cuobjdump's "Function :" sections) with the most FFMAs."""
    sections = re.split(r"\n\s*Function : ", text)
    return max(sections, key=lambda s: len(FFMA.findall(s))).splitlines()


def address(line):
    hit = ADDRESS.search(line)
    return int(hit.group(1), 16) if hit else None


def main_loop(lines):
    """The lines from the longest backward branch's target to the branch."""
    at_address = {address(l): i for i, l in enumerate(lines) if address(l) is not None}
    best = (0, 0, len(lines))
    for i, line in enumerate(lines):
        branch = BRANCH.search(line)
        source = address(line)
        if not branch or source is None:
            continue
        target = int(branch.group(1), 16)
        if target < source and source - target > best[0] and target in at_address:
            best = (source - target, at_address[target], i + 1)
    return lines[best[1]:best[2]]


def source_slots(operands):
    """(slot, register, marked .reuse) of each register source operand."""
    slots = []
    for slot, op in enumerate(operands.split(",")):
        hit = OPERAND.match(op.strip())
        if hit:
            slots.append((slot, int(hit.group(1)[1:]), bool(hit.group(2))))
    return slots


def same_bank_share(lines):
    total = same = 0
    cached = {}  # slot -> register the previous instruction kept in the reuse cache
    for line in lines:
        hit = FFMA.search(line) or INSTRUCTION.search(line)
        if not hit:
            continue
        slots = source_slots(hit.group(hit.lastindex))
        if FFMA.search(line):
            from_file = [reg for slot, reg, _ in slots if cached.get(slot) != reg]
            parities = [r % 2 for r in from_file]
            total += 1
            if len(parities) != len(set(parities)):
                same += 1
        cached = {slot: reg for slot, reg, reuse in slots if reuse}
    return total, same


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        with open(path) as f:
            lines = main_function(f.read())
        for where, part in (("kernel", lines), ("main loop", main_loop(lines))):
            total, same = same_bank_share(part)
            share = same / total if total else 0.0
            print(f"{path}: {where}: {total} FFMA, {same} read one bank twice ({share:.2f})")


if __name__ == "__main__":
    main()
