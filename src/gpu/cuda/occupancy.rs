//! Occupancy arithmetic on the driver's answers: the fraction of an SM's warp slots that blocks
//! of a given size fill, the block sizes `%info` lists, and the `[auto]` launch shape from the
//! occupancy API's suggested block size. Pure; no driver calls.

/// Resident warps / maximum warps of one SM, from `blocks_per_sm` resident blocks of
/// `block_threads` threads (partial warps count as whole warps).
pub fn fraction(blocks_per_sm: u32, block_threads: u32, warp: u32, max_threads_per_sm: u32) -> f64 {
    let warp = warp.max(1);
    let max_warps = max_threads_per_sm / warp;
    if max_warps == 0 {
        return 0.0;
    }
    let warps = u64::from(blocks_per_sm) * u64::from(block_threads.div_ceil(warp));
    (warps as f64 / f64::from(max_warps)).min(1.0)
}

/// Block sizes `%info` reports: warp multiples from one warp up to the CUDA kernel's maximum
/// (32, 64, 128, 256, 512, 1024, and the maximum itself when it is not a power of two).
pub fn block_sizes(warp: u32, max_threads: u32) -> Vec<u32> {
    let warp = warp.max(1);
    let mut out = Vec::new();
    let mut b = warp;
    while b <= max_threads {
        out.push(b);
        b *= 2;
    }
    let top = max_threads / warp * warp;
    if top >= warp && !out.contains(&top) {
        out.push(top);
    }
    out
}

/// `[auto]`: (grid, block) over `elements` with the suggested block size, never more threads
/// per block than the elements need (rounded up to a warp), at least one block.
pub fn auto_shape(elements: usize, suggested_block: u32, warp: u32) -> Option<(u32, u32)> {
    let warp = warp.max(1);
    let need = u32::try_from(elements.div_ceil(warp as usize) * warp as usize).unwrap_or(u32::MAX);
    let block = suggested_block.max(warp).min(need.max(warp));
    let grid = u32::try_from(elements.div_ceil(block as usize).max(1)).ok()?;
    Some((grid, block))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fraction_counts_whole_warps() {
        // sm_90: 2048 threads = 64 warps per SM. 8 blocks of 256 threads fill it.
        assert_eq!(fraction(8, 256, 32, 2048), 1.0);
        // 3 blocks of 1024 cannot all be resident; the driver says 2 → 64 of 64 warps.
        assert_eq!(fraction(2, 1024, 32, 2048), 1.0);
        // 16 blocks of 48 threads: 2 warps each → 32 of 64 warps.
        assert_eq!(fraction(16, 48, 32, 2048), 0.5);
        // Register-limited: 1 block of 1024 on sm_90 → half.
        assert_eq!(fraction(1, 1024, 32, 2048), 0.5);
        assert_eq!(fraction(0, 256, 32, 2048), 0.0);
        assert_eq!(fraction(4, 256, 32, 0), 0.0);
    }

    #[test]
    fn block_sizes_stop_at_the_kernel_maximum() {
        assert_eq!(block_sizes(32, 1024), [32, 64, 128, 256, 512, 1024]);
        // __launch_bounds__(384): powers of two below it, then 384 itself.
        assert_eq!(block_sizes(32, 384), [32, 64, 128, 256, 384]);
        assert_eq!(block_sizes(32, 16), Vec::<u32>::new());
    }

    #[test]
    fn auto_shape_covers_every_element() {
        for (n, suggested) in [
            (1usize, 768u32),
            (31, 1024),
            (1000, 768),
            (1 << 20, 640),
            (5, 0),
        ] {
            let (grid, block) = auto_shape(n, suggested, 32).unwrap_or((0, 0));
            assert!(grid as usize * block as usize >= n, "{n} {suggested}");
            assert_eq!(block % 32, 0);
            assert!(grid >= 1 && block >= 32);
            // No more than one block's worth of idle threads.
            assert!(
                (grid as usize - 1) * (block as usize) < n,
                "{n}: {grid}×{block}"
            );
        }
        assert_eq!(auto_shape(1000, 768, 32), Some((2, 768)));
        assert_eq!(auto_shape(10, 768, 32), Some((1, 32)));
    }
}
