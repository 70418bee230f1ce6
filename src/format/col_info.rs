//! Offline preprocessing for packing kernels (paper III-C): per (k-tile, n-tile), the sorted
//! distinct A columns the tile reads, and D rewritten to slots in that packed list.

use super::{ColInfo, CompressedWeight, FormatError};
use rayon::prelude::*;

/// Build [`ColInfo`] for a k_s × n_s tiling of `w`.
///
/// k_s must be a positive multiple of M; n_s must be a multiple of L or divide L. When
/// n_s < L several n-tiles lie inside one column group; they use the same rows and so get
/// identical column lists, which is why one packed index per (u, j) serves all of them.
pub fn build_col_info(
    w: &CompressedWeight,
    k_s: usize,
    n_s: usize,
) -> Result<ColInfo, FormatError> {
    w.validate()?;
    check_tiling(w, k_s, n_s)?;
    let tiling = Tiling::new(w, k_s, n_s);
    let (k_tiles, n_tiles) = (tiling.k_tiles, tiling.n_tiles);
    let mut columns = vec![0i32; k_tiles * n_tiles * k_s];
    let mut counts = vec![0i32; k_tiles * n_tiles];
    let mut packed_indices = vec![0i32; w.w() * w.q()];
    columns
        .par_chunks_mut(n_tiles * k_s)
        .zip(counts.par_chunks_mut(n_tiles))
        .zip(packed_indices.par_chunks_mut(tiling.w_s * w.q()))
        .enumerate()
        .for_each(|(kt, ((cols, cnts), packed))| {
            for nt in 0..n_tiles {
                let tile_cols = &mut cols[nt * k_s..(nt + 1) * k_s];
                cnts[nt] = tiling.fill_tile(w, kt, nt, tile_cols, packed);
            }
        });
    Ok(ColInfo {
        k_s,
        n_s,
        k_tiles,
        n_tiles,
        columns,
        counts,
        packed_indices,
    })
}

fn check_tiling(w: &CompressedWeight, k_s: usize, n_s: usize) -> Result<(), FormatError> {
    let m_window = w.nm.m as usize;
    if k_s == 0 || k_s % m_window != 0 {
        return Err(FormatError::Invalid {
            what: "col_info tiling",
            detail: format!("k_s={k_s} must be a positive multiple of M={m_window}"),
        });
    }
    if n_s == 0 || (n_s % w.l != 0 && w.l % n_s != 0) {
        return Err(FormatError::Invalid {
            what: "col_info tiling",
            detail: format!("n_s={n_s} must be a multiple of L={} or divide it", w.l),
        });
    }
    if w.k > i32::MAX as usize {
        return Err(FormatError::Invalid {
            what: "col_info tiling",
            detail: format!("k={} does not fit the kernels' 32-bit column indices", w.k),
        });
    }
    Ok(())
}

/// The tile grid over B' (rows u) and C (columns).
struct Tiling {
    k_s: usize,
    n_s: usize,
    w_s: usize,
    k_tiles: usize,
    n_tiles: usize,
}

impl Tiling {
    fn new(w: &CompressedWeight, k_s: usize, n_s: usize) -> Self {
        Self {
            k_s,
            n_s,
            w_s: k_s / w.nm.m as usize * w.nm.n as usize,
            k_tiles: w.k.div_ceil(k_s),
            n_tiles: w.n.div_ceil(n_s),
        }
    }

    /// Write tile (kt, nt)'s column list into `cols` (k_s slots) and the slots of its kept
    /// rows into `packed` (this k-tile's rows of packed_indices); return the count.
    fn fill_tile(
        &self,
        w: &CompressedWeight,
        kt: usize,
        nt: usize,
        cols: &mut [i32],
        packed: &mut [i32],
    ) -> i32 {
        let q = w.q();
        let rows = kt * self.w_s..((kt + 1) * self.w_s).min(w.w());
        let first_col = nt * self.n_s;
        let last_col = ((nt + 1) * self.n_s).min(w.n) - 1;
        let groups = first_col / w.l..last_col / w.l + 1;
        // Offsets inside the tile's k_s rows of B that some kept row of the tile uses.
        let base = kt * self.k_s;
        let mut used = vec![false; self.k_s];
        for u in rows.clone() {
            for j in groups.clone() {
                used[w.absolute_row(u, j) - base] = true;
            }
        }
        let mut slot_of = vec![0i32; self.k_s];
        let mut count = 0usize;
        for (offset, _) in used.iter().enumerate().filter(|(_, &u)| u) {
            slot_of[offset] = count as i32;
            cols[count] = (base + offset) as i32;
            count += 1;
        }
        let filler = if count == 0 {
            base as i32
        } else {
            cols[count - 1]
        };
        cols[count..].fill(filler);
        for u in rows.clone() {
            for j in groups.clone() {
                packed[(u - rows.start) * q + j] = slot_of[w.absolute_row(u, j) - base];
            }
        }
        count as i32
    }
}
