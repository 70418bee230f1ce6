#!/usr/bin/env python3
"""The "wide" twin of a rendered element-wise decode source (stdin → stdout): a lane's D words
of one row, VEC = NT / 4 of them, loaded as one uint2 when VEC = 2 (the lane's 8 bytes of D
are contiguous; aligned when n is a multiple of 8, as in every problem of dpanel.cu) instead
of two 4-byte loads. Used by make-winners.sh."""
import sys

src = sys.stdin.read()
old = """                if constexpr (DENSE) {
                    rows_in.pos[j][v] = 0u;
                } else {
                    // n and col are multiples of 4: the word is aligned.
                    rows_in.pos[j][v] =
                        ok ? __ldcs(reinterpret_cast<const unsigned*>(D + at)) : 0u;
                }
            }
"""
new = """            }
            {
                const size_t at0 = static_cast<size_t>(u) * n + col;
                if constexpr (DENSE) {
#pragma unroll
                    for (int v = 0; v < VEC; ++v) rows_in.pos[j][v] = 0u;
                } else if constexpr (VEC == 2) {
                    const uint2 p = ok ? __ldcs(reinterpret_cast<const uint2*>(D + at0))
                                       : make_uint2(0u, 0u);
                    rows_in.pos[j][0] = p.x;
                    rows_in.pos[j][1] = p.y;
                } else {
                    rows_in.pos[j][0] = ok ? __ldcs(reinterpret_cast<const unsigned*>(D + at0)) : 0u;
                }
            }
"""
assert src.count(old) == 1, "the D load of the template changed"
sys.stdout.write(src.replace(old, new))
