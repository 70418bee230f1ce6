//! The N:M format (pruning, compression, col_info) and the CPU reference, on random data.

use nmtune::format::{
    build_col_info, compress_pruned, decompress, decompress_nk, padded_shape, prune_and_compress,
    prune_and_compress_nk, try_decompress, ColInfo, CompressedWeight, FormatError,
};
use nmtune::problem::{NmPattern, ProblemError};
use nmtune::reference::{dense_matmul, relative_error, spmm};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const PATTERNS: [(u32, u32); 8] = [
    (1, 4),
    (2, 4),
    (4, 8),
    (4, 32),
    (8, 32),
    (12, 32),
    (16, 32),
    (32, 32),
];
const VECTOR_LENGTHS: [usize; 5] = [4, 8, 16, 32, 64];

fn nm(n: u32, m: u32) -> NmPattern {
    NmPattern::new(n, m).unwrap()
}

fn random_matrix(rng: &mut SmallRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// Σ |B[r][c]| over the columns of group j, in f64.
fn group_magnitude(dense: &[f32], n: usize, l: usize, r: usize, j: usize) -> f64 {
    (j * l..((j + 1) * l).min(n))
        .map(|c| dense[r * n + c].abs() as f64)
        .sum()
}

/// Positions kept for window `win`, group j (from D).
fn kept_positions(w: &CompressedWeight, win: usize, j: usize) -> Vec<usize> {
    let n_keep = w.nm.n as usize;
    (0..n_keep)
        .map(|i| w.indices[(win * n_keep + i) * w.q() + j] as usize)
        .collect()
}

#[test]
fn every_window_and_group_keeps_n_sorted_distinct_rows() {
    let mut rng = SmallRng::seed_from_u64(1);
    for &(n_keep, m_window) in &PATTERNS {
        for &l in &VECTOR_LENGTHS {
            let (k, n) = (2 * m_window as usize, 2 * l);
            let dense = random_matrix(&mut rng, k * n);
            let (w, padding) = prune_and_compress(&dense, k, n, nm(n_keep, m_window), l).unwrap();
            assert!(!padding.is_padded());
            assert_eq!(
                (w.w(), w.q()),
                (k / m_window as usize * n_keep as usize, n / l)
            );
            for win in 0..k / m_window as usize {
                for j in 0..w.q() {
                    let kept = kept_positions(&w, win, j);
                    assert_eq!(kept.len(), n_keep as usize);
                    assert!(
                        kept.windows(2).all(|p| p[0] < p[1]),
                        "{kept:?} not strictly increasing"
                    );
                    assert!(kept.iter().all(|&p| p < m_window as usize));
                }
            }
        }
    }
}

#[test]
fn pruning_keeps_the_largest_magnitude_rows() {
    let mut rng = SmallRng::seed_from_u64(2);
    for &(n_keep, m_window) in &PATTERNS {
        for &l in &VECTOR_LENGTHS {
            let (k, n) = (3 * m_window as usize, 3 * l);
            let dense = random_matrix(&mut rng, k * n);
            let (w, _) = prune_and_compress(&dense, k, n, nm(n_keep, m_window), l).unwrap();
            for win in 0..k / m_window as usize {
                for j in 0..w.q() {
                    let kept = kept_positions(&w, win, j);
                    let score =
                        |p: usize| group_magnitude(&dense, n, l, win * m_window as usize + p, j);
                    let weakest_kept = kept.iter().map(|&p| score(p)).fold(f64::INFINITY, f64::min);
                    let strongest_pruned = (0..m_window as usize)
                        .filter(|p| !kept.contains(p))
                        .map(score)
                        .fold(f64::NEG_INFINITY, f64::max);
                    assert!(
                        weakest_kept >= strongest_pruned - 1e-5,
                        "{n_keep}:{m_window} L={l} window {win} group {j}: kept {weakest_kept} < pruned {strongest_pruned}"
                    );
                }
            }
        }
    }
}

#[test]
fn ties_keep_the_lower_rows() {
    // Every row has the same magnitude, with varying signs: the first N positions win.
    let (k, n, l) = (8, 8, 4);
    let dense: Vec<f32> = (0..k * n)
        .map(|i| if i % 3 == 0 { -0.5 } else { 0.5 })
        .collect();
    let (w, _) = prune_and_compress(&dense, k, n, nm(3, 8), l).unwrap();
    for j in 0..w.q() {
        assert_eq!(kept_positions(&w, 0, j), vec![0, 1, 2]);
    }
}

#[test]
fn decompress_round_trip_equals_the_pruned_dense_weight() {
    let mut rng = SmallRng::seed_from_u64(3);
    for &(n_keep, m_window) in &PATTERNS {
        for &l in &VECTOR_LENGTHS {
            let (k, n) = (2 * m_window as usize, 2 * l);
            let dense = random_matrix(&mut rng, k * n);
            let (w, _) = prune_and_compress(&dense, k, n, nm(n_keep, m_window), l).unwrap();
            let back = decompress(&w);
            assert_eq!(back.len(), k * n);
            for win in 0..k / m_window as usize {
                for j in 0..w.q() {
                    let kept = kept_positions(&w, win, j);
                    for p in 0..m_window as usize {
                        let r = win * m_window as usize + p;
                        for c in j * l..(j + 1) * l {
                            let want = if kept.contains(&p) {
                                dense[r * n + c]
                            } else {
                                0.0
                            };
                            assert_eq!(back[r * n + c], want, "row {r} col {c}");
                        }
                    }
                }
            }
            // Compressing the pruned dense weight again gives the same B' and D.
            let again = compress_pruned(&back, k, n, w.nm, l).unwrap();
            assert_eq!(again, w);
        }
    }
}

#[test]
fn padding_is_reported_and_filled_with_zeros() {
    let mut rng = SmallRng::seed_from_u64(4);
    let (k, n, l) = (37, 50, 16);
    let dense = random_matrix(&mut rng, k * n);
    let (w, padding) = prune_and_compress(&dense, k, n, nm(4, 8), l).unwrap();
    assert!(padding.is_padded());
    assert_eq!((padding.k_original, padding.k_padded), (37, 40));
    assert_eq!((padding.n_original, padding.n_padded), (50, 64));
    assert_eq!((w.k, w.n), (40, 64));
    let back = decompress(&w);
    for r in 0..40 {
        for c in 0..64 {
            let value = back[r * 64 + c];
            if r >= k || c >= n {
                assert_eq!(value, 0.0, "padding at ({r}, {c}) must be zero");
            } else {
                assert!(
                    value == 0.0 || value == dense[r * n + c],
                    "({r}, {c}) changed"
                );
            }
        }
    }
    // Unpadded shapes report no padding.
    let (_, none) =
        prune_and_compress(&random_matrix(&mut rng, 16 * 32), 16, 32, nm(4, 8), 16).unwrap();
    assert!(!none.is_padded());
}

#[test]
fn nk_layout_matches_transposing_first() {
    let mut rng = SmallRng::seed_from_u64(5);
    for &(k, n, l) in &[(64usize, 96usize, 32usize), (37, 50, 16), (8, 5, 4)] {
        let dense_kn = random_matrix(&mut rng, k * n);
        let mut dense_nk = vec![0.0; k * n];
        for r in 0..k {
            for c in 0..n {
                dense_nk[c * k + r] = dense_kn[r * n + c];
            }
        }
        let from_kn = prune_and_compress(&dense_kn, k, n, nm(2, 8), l).unwrap();
        let from_nk = prune_and_compress_nk(&dense_nk, n, k, nm(2, 8), l).unwrap();
        assert_eq!(from_kn, from_nk);
    }
}

#[test]
fn decompress_nk_gives_back_the_pruned_weight_in_pytorch_layout() {
    let mut rng = SmallRng::seed_from_u64(6);
    for &(n, k, l) in &[(96usize, 64usize, 32usize), (50, 37, 16), (5, 8, 4)] {
        let dense_nk = random_matrix(&mut rng, n * k);
        let (w, padding) = prune_and_compress_nk(&dense_nk, n, k, nm(2, 8), l).unwrap();
        let restored = decompress_nk(&w, &padding).unwrap();
        assert_eq!(restored.len(), n * k);
        let padded_kn = decompress(&w);
        for i in 0..n {
            for r in 0..k {
                let v = restored[i * k + r];
                assert_eq!(v, padded_kn[r * w.n + i]);
                // Every value is the original or a pruned zero.
                assert!(v == dense_nk[i * k + r] || v == 0.0);
            }
        }
        // Already N:M: pruning again changes nothing.
        let (again, _) = prune_and_compress_nk(&restored, n, k, nm(2, 8), l).unwrap();
        assert_eq!(again, w);
        let wrong = nmtune::format::Padding {
            k_padded: w.k + 8,
            ..padding
        };
        assert!(decompress_nk(&w, &wrong).is_err());
    }
}

#[test]
fn padded_shape_is_the_padding_pruning_applies() {
    for &(k, n, l) in &[(64usize, 96usize, 32usize), (37, 50, 16), (8, 5, 4)] {
        let (_, padding) = prune_and_compress(&vec![1.0; k * n], k, n, nm(2, 8), l).unwrap();
        assert_eq!(padded_shape(k, n, nm(2, 8), l).unwrap(), padding);
    }
    assert!(padded_shape(0, 8, nm(2, 8), 4).is_err());
    assert!(padded_shape(8, 8, nm(2, 8), 129).is_err());
}

#[test]
fn invalid_patterns_sizes_and_vector_lengths_are_errors() {
    let dense = vec![0.5f32; 8 * 8];
    let zero_n = NmPattern { n: 0, m: 4 };
    assert!(matches!(
        prune_and_compress(&dense, 8, 8, zero_n, 4),
        Err(FormatError::Problem(ProblemError::ZeroN { .. }))
    ));
    let n_above_m = NmPattern { n: 5, m: 4 };
    assert!(matches!(
        prune_and_compress(&dense, 8, 8, n_above_m, 4),
        Err(FormatError::Problem(ProblemError::NGreaterThanM { .. }))
    ));
    for l in [0, 129] {
        assert!(matches!(
            prune_and_compress(&dense, 8, 8, nm(2, 4), l),
            Err(FormatError::Problem(ProblemError::LOutOfRange { .. }))
        ));
    }
    assert!(matches!(
        prune_and_compress(&dense, 8, 9, nm(2, 4), 4),
        Err(FormatError::SizeMismatch {
            got: 64,
            expected: 72,
            ..
        })
    ));
    assert!(matches!(
        prune_and_compress_nk(&dense, 9, 8, nm(2, 4), 4),
        Err(FormatError::SizeMismatch {
            got: 64,
            expected: 72,
            ..
        })
    ));
    assert!(prune_and_compress(&[], 0, 8, nm(2, 4), 4).is_err());
}

#[test]
fn overflowing_shapes_are_errors_not_panics() {
    let big = usize::MAX / 2;
    assert!(matches!(
        prune_and_compress(&[1.0], big, 4, nm(2, 4), 4),
        Err(FormatError::Invalid { .. })
    ));
    // A shape whose element count is representable but far beyond the data given.
    assert!(prune_and_compress(&[1.0], 1, usize::MAX, nm(1, 1), 128).is_err());
}

#[test]
fn from_parts_validates_sizes_range_and_order() {
    let mut rng = SmallRng::seed_from_u64(6);
    let (k, n, l) = (16, 16, 8);
    let (w, _) = prune_and_compress(&random_matrix(&mut rng, k * n), k, n, nm(2, 8), l).unwrap();
    let rebuilt =
        CompressedWeight::from_parts(k, n, w.nm, l, w.values.clone(), w.indices.clone()).unwrap();
    assert_eq!(rebuilt, w);
    assert_eq!(
        rebuilt.indices_i32(),
        w.indices.iter().map(|&d| d as i32).collect::<Vec<_>>()
    );

    let short_values = w.values[1..].to_vec();
    assert!(matches!(
        CompressedWeight::from_parts(k, n, w.nm, l, short_values, w.indices.clone()),
        Err(FormatError::SizeMismatch { .. })
    ));
    let mut out_of_range = w.indices.clone();
    out_of_range[0] = 8;
    assert!(CompressedWeight::from_parts(k, n, w.nm, l, w.values.clone(), out_of_range).is_err());
    // Rows u=0 and u=1 are window 0: make them equal, then decreasing.
    let q = w.q();
    for (first, second) in [(3u8, 3u8), (5, 2)] {
        let mut unordered = w.indices.clone();
        unordered[0] = first;
        unordered[q] = second;
        let err =
            CompressedWeight::from_parts(k, n, w.nm, l, w.values.clone(), unordered).unwrap_err();
        assert!(err.to_string().contains("strictly increasing"), "{err}");
    }
    assert!(
        CompressedWeight::from_parts(12, n, w.nm, l, vec![0.0; 3 * n], vec![0; 3 * 2]).is_err()
    );
    assert!(try_decompress(&CompressedWeight { l: 0, ..w.clone() }).is_err());
}

#[test]
fn compress_pruned_rejects_too_many_nonzero_rows() {
    let mut rng = SmallRng::seed_from_u64(7);
    let dense = random_matrix(&mut rng, 8 * 8);
    let err = compress_pruned(&dense, 8, 8, nm(2, 4), 4).unwrap_err();
    assert!(err.to_string().contains("non-zero rows"), "{err}");
}

/// Every property packing kernels rely on, for one weight and tiling.
fn check_col_info(w: &CompressedWeight, info: &ColInfo) {
    let (k_s, n_s) = (info.k_s, info.n_s);
    assert_eq!(info.k_tiles, w.k.div_ceil(k_s));
    assert_eq!(info.n_tiles, w.n.div_ceil(n_s));
    let w_s = k_s / w.nm.m as usize * w.nm.n as usize;
    let tile_list = |kt: usize, nt: usize| {
        let start = (kt * info.n_tiles + nt) * k_s;
        &info.columns[start..start + k_s]
    };
    for kt in 0..info.k_tiles {
        for nt in 0..info.n_tiles {
            let count = info.counts[kt * info.n_tiles + nt] as usize;
            let list = tile_list(kt, nt);
            assert!(count >= 1 && count <= k_s);
            assert!(
                list[..count].windows(2).all(|p| p[0] < p[1]),
                "sorted and distinct"
            );
            assert!(list[..count]
                .iter()
                .all(|&c| (kt * k_s..(kt + 1) * k_s).contains(&(c as usize))));
            assert!(
                list[count..].iter().all(|&c| c == list[count - 1]),
                "fillers repeat the last column"
            );
            // Completeness: the list is exactly the set of rows the tile's kept rows use.
            let first_group = nt * n_s / w.l;
            let last_group = (((nt + 1) * n_s).min(w.n) - 1) / w.l;
            let mut needed: Vec<i32> = Vec::new();
            for u in kt * w_s..((kt + 1) * w_s).min(w.w()) {
                for j in first_group..=last_group {
                    needed.push(w.absolute_row(u, j) as i32);
                }
            }
            needed.sort_unstable();
            needed.dedup();
            assert_eq!(&list[..count], &needed[..]);
        }
    }
    for u in 0..w.w() {
        for j in 0..w.q() {
            let kt = u / w_s;
            let slot = info.packed_indices[u * w.q() + j] as usize;
            // Every n-tile overlapping group j (several when L > n_s) resolves the same slot.
            let tiles = (j * w.l / n_s)..=(((j + 1) * w.l - 1) / n_s).min(info.n_tiles - 1);
            for nt in tiles {
                assert!(slot < info.counts[kt * info.n_tiles + nt] as usize);
                assert_eq!(
                    tile_list(kt, nt)[slot] as usize,
                    w.absolute_row(u, j),
                    "u={u} j={j} nt={nt}"
                );
            }
        }
    }
}

#[test]
fn col_info_points_every_kept_row_at_its_column() {
    let mut rng = SmallRng::seed_from_u64(8);
    for &(n_keep, m_window) in &PATTERNS {
        for &l in &[4usize, 16, 32, 64] {
            // k and n not multiples of the tiles, so partial tiles are covered.
            let (k, n) = (5 * m_window as usize, 3 * l);
            let dense = random_matrix(&mut rng, k * n);
            let (w, _) = prune_and_compress(&dense, k, n, nm(n_keep, m_window), l).unwrap();
            for k_s in [
                m_window as usize,
                2 * m_window as usize,
                4 * m_window as usize,
            ] {
                for n_s in [l / 4, l / 2, l, 2 * l, 4 * l] {
                    if n_s == 0 {
                        continue;
                    }
                    let info = build_col_info(&w, k_s, n_s).unwrap();
                    check_col_info(&w, &info);
                }
            }
        }
    }
}

#[test]
fn col_info_rejects_incompatible_tilings() {
    let mut rng = SmallRng::seed_from_u64(9);
    let (w, _) =
        prune_and_compress(&random_matrix(&mut rng, 64 * 64), 64, 64, nm(8, 32), 16).unwrap();
    for (k_s, n_s) in [(0, 16), (16, 16), (48, 16), (32, 0), (32, 24), (32, 12)] {
        assert!(
            build_col_info(&w, k_s, n_s).is_err(),
            "k_s={k_s} n_s={n_s} accepted"
        );
    }
    assert!(build_col_info(&w, 32, 8).is_ok());
    assert!(build_col_info(&w, 64, 48).is_ok());
}

#[test]
fn spmm_matches_dense_matmul_of_the_decompressed_weight() {
    let mut rng = SmallRng::seed_from_u64(10);
    let (m, k, n) = (37, 64, 128);
    for &(n_keep, m_window) in &PATTERNS {
        for &l in &VECTOR_LENGTHS {
            let (w, _) = prune_and_compress(
                &random_matrix(&mut rng, k * n),
                k,
                n,
                nm(n_keep, m_window),
                l,
            )
            .unwrap();
            let a = random_matrix(&mut rng, m * k);
            let c0 = random_matrix(&mut rng, m * n);
            let (alpha, beta) = (1.5f32, -0.75f32);
            let product = dense_matmul(&a, m, k, &decompress(&w), n);
            let want: Vec<f32> = product
                .iter()
                .zip(&c0)
                .map(|(p, c)| alpha * p + beta * c)
                .collect();
            let mut got = c0.clone();
            spmm(&a, m, &w, alpha, beta, &mut got).unwrap();
            let error = relative_error(&got, &want);
            assert!(
                error < 1e-5,
                "{n_keep}:{m_window} L={l}: relative error {error}"
            );
        }
    }
}

#[test]
fn spmm_with_zero_beta_ignores_nan_in_c() {
    let mut rng = SmallRng::seed_from_u64(11);
    let (m, k, n) = (13, 32, 64);
    let (w, _) = prune_and_compress(&random_matrix(&mut rng, k * n), k, n, nm(8, 32), 16).unwrap();
    let a = random_matrix(&mut rng, m * k);
    let mut c = vec![f32::NAN; m * n];
    spmm(&a, m, &w, 2.0, 0.0, &mut c).unwrap();
    let want: Vec<f32> = dense_matmul(&a, m, k, &decompress(&w), n)
        .iter()
        .map(|x| 2.0 * x)
        .collect();
    assert!(relative_error(&c, &want) < 1e-5);
}

#[test]
fn spmm_rejects_mismatched_operands() {
    let mut rng = SmallRng::seed_from_u64(12);
    let (w, _) =
        prune_and_compress(&random_matrix(&mut rng, 32 * 32), 32, 32, nm(8, 32), 32).unwrap();
    let a = random_matrix(&mut rng, 4 * 32);
    let mut c = vec![0.0; 4 * 32];
    assert!(spmm(&a[1..], 4, &w, 1.0, 0.0, &mut c).is_err());
    assert!(spmm(&a, 4, &w, 1.0, 0.0, &mut c[1..]).is_err());
    let broken = CompressedWeight {
        indices: vec![40; w.indices.len()],
        ..w.clone()
    };
    assert!(spmm(&a, 4, &broken, 1.0, 0.0, &mut c).is_err());
    assert!(spmm(&[], 0, &w, 1.0, 0.0, &mut []).is_ok());
}

#[test]
fn relative_error_flags_nan_and_measures_distance() {
    let want = [3.0f32, 4.0];
    assert_eq!(relative_error(&want, &want), 0.0);
    assert!((relative_error(&[3.0, 4.5], &want) - 0.1).abs() < 1e-12);
    assert_eq!(relative_error(&[f32::NAN, 4.0], &want), f64::INFINITY);
    assert_eq!(relative_error(&[3.0], &want), f64::INFINITY);
    assert_eq!(relative_error(&[0.0, 0.0], &[0.0, 0.0]), 0.0);
}

#[test]
fn nan_weights_do_not_panic() {
    let mut rng = SmallRng::seed_from_u64(13);
    let mut dense = random_matrix(&mut rng, 16 * 16);
    dense[5] = f32::NAN;
    dense[100] = f32::NAN;
    let (w, _) = prune_and_compress(&dense, 16, 16, nm(2, 8), 4).unwrap();
    assert!(w.validate().is_ok());
}
