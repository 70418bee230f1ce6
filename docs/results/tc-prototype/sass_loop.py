#!/usr/bin/env python3
"""Instructions in the main loop of the tensor-core prototype's kernels, offline (session 42).

  cuobjdump -sass tc1.o > tc1.sass   (cuobjdump and nvdisasm: the nvidia-cuda-cuobjdump and
                                      nvidia-cuda-nvdisasm pip wheels run without a GPU)
  python3 sass_loop.py tc1.sass [REGEX]   one line per kernel whose mangled name matches

The main loop is the largest backward branch's range that holds HGMMA instructions; the
mbarrier wait loops inside it (backward branches over a SYNCS try-wait) are left out, since
they spin a number of times that depends on timing. Printed: the loop's instructions, its
HGMMA and LDGSTS, and the opcodes that weigh most. nm_wgmma_bf16's loop runs two stages an
iteration (unrolled by hand), the producer kernel's consumer loop one; a stage has
G·KW/16 HGMMA a warp. The count is static: code inside the loop that
only some warps run (thread 0's bulk copy of B') counts in full, and a persistent grid's C
stores, inside its loop but run once a tile, count as if they ran every stage, so compare
variants of the same grid kind only.
"""
import collections
import re
import sys

SPIN_MAX = 16  # instructions: a wait loop is a try-wait, a test and its branch
INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")


def kernels(path):
    name, body = None, []
    for line in open(path):
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
            continue
        m = INSTR.search(line)
        if m and name:
            body.append((int(m.group(1), 16), m.group(2).strip()))
    if name:
        yield name, body


def opcode(text):
    text = re.sub(r"^@!?U?P\w+\s+", "", text)
    return text.split()[0].split(".")[0]


def loops(body):
    """(start, end) index ranges of backward branches. Branches after the first EXIT are left
    out: they are the out-of-line slow paths of the wait loops, which jump back into the loop
    and would make the epilogue look like part of it."""
    index = {addr: i for i, (addr, _) in enumerate(body)}
    first_exit = next((i for i, (_, t) in enumerate(body) if opcode(t) == "EXIT"), len(body))
    out = []
    for i, (addr, text) in enumerate(body[:first_exit]):
        m = re.search(r"\bBRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", text) or re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if m:
            target = int(m.group(1), 16)
            if target < addr and target in index:
                out.append((index[target], i))
    return out


def main_loop(body):
    ranges = [r for r in loops(body) if any(opcode(t) == "HGMMA" for _, t in body[r[0]:r[1] + 1])]
    if not ranges:
        return None, []
    start, end = max(ranges, key=lambda r: r[1] - r[0])
    spins = [r for r in loops(body) if start <= r[0] and r[1] <= end and r[1] - r[0] <= SPIN_MAX
             and any(opcode(t) == "SYNCS" for _, t in body[r[0]:r[1] + 1])]
    skip = set()
    for a, b in spins:
        skip.update(range(a, b + 1))
    return (start, end), [body[i][1] for i in range(start, end + 1) if i not in skip]


def main():
    path = sys.argv[1]
    pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else ".")
    for name, body in kernels(path):
        if not pattern.search(name):
            continue
        span, loop = main_loop(body)
        if not span:
            print(f"{name}: no loop with HGMMA")
            continue
        ops = collections.Counter(opcode(t) for t in loop)
        top = ", ".join(f"{k} {v}" for k, v in ops.most_common(8))
        print(f"{name[:110]}\n  {len(loop)} in the loop (HGMMA {ops['HGMMA']}, LDGSTS {ops['LDGSTS']}); {top}")


if __name__ == "__main__":
    main()
