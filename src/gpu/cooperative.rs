//! Cooperative launches, the words and arithmetic both backends share: whether a launch is
//! cooperative (asked with `--cooperative`, or made so because the CUDA kernel uses a grid-wide
//! sync), the note that says it was made so, and the residency rule CUDA applies to it
//! (`cuLaunchCooperativeKernel` refuses a grid whose blocks cannot all be resident at once:
//! blocks per SM from the occupancy API × SMs). Pure: the device state
//! (`state/cooperative.rs`) asks the backend for the figures.

/// How a launch runs with respect to `--cooperative`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cooperative {
    /// A plain launch.
    No,
    /// `--cooperative` asked for it.
    Asked,
    /// The kernel uses a grid-wide sync, so the launch was made cooperative.
    Made,
}

impl Cooperative {
    /// `asked`: `--cooperative`; `grid_sync`: the kernel's PTX reads the grid workspace.
    pub fn of(asked: bool, grid_sync: bool) -> Cooperative {
        match (asked, grid_sync) {
            (true, _) => Cooperative::Asked,
            (false, true) => Cooperative::Made,
            (false, false) => Cooperative::No,
        }
    }

    pub fn is_cooperative(self) -> bool {
        self != Cooperative::No
    }

    /// The note a launch made cooperative prints (None for the others).
    pub fn note(self, kernel: &str) -> Option<String> {
        (self == Cooperative::Made).then(|| {
            format!(
                "note: `{kernel}` uses a grid-wide sync (cooperative_groups::this_grid().sync()), \
                 so this launch was made cooperative: every block resident at once, as \
                 %launch --cooperative asks"
            )
        })
    }
}

/// `n` with thousands separators: 1056 → "1,056".
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Why a cooperative launch of `blocks` blocks of `block_threads` threads cannot run on `gpu`,
/// which holds `per_sm` such blocks on each of its `sms` SMs; None when every block fits.
pub fn residency_error(
    blocks: u64,
    block_threads: u64,
    gpu: &str,
    per_sm: u32,
    sms: u32,
) -> Option<String> {
    let most = u64::from(per_sm) * u64::from(sms);
    if blocks <= most {
        return None;
    }
    let s = |n: u64, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{} {many}", grouped(n))
        }
    };
    Some(format!(
        "a cooperative launch needs every block resident at once: {} of {}, but {gpu} holds at \
         most {} ({per_sm} per SM × {} SMs)",
        s(blocks, "block", "blocks"),
        s(block_threads, "thread", "threads"),
        grouped(most),
        grouped(u64::from(sms)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        let cases = [
            (0, "0"),
            (7, "7"),
            (999, "999"),
            (1000, "1,000"),
            (1056, "1,056"),
            (4_224_000, "4,224,000"),
        ];
        for (n, want) in cases {
            assert_eq!(grouped(n), want);
        }
    }

    #[test]
    fn a_grid_too_large_to_be_resident_is_named_with_the_limit() {
        assert_eq!(
            residency_error(2000, 256, "H100", 8, 132).as_deref(),
            Some(
                "a cooperative launch needs every block resident at once: 2,000 blocks of 256 \
                 threads, but H100 holds at most 1,056 (8 per SM × 132 SMs)"
            )
        );
        // Exactly full fits; one more does not.
        assert_eq!(residency_error(1056, 256, "H100", 8, 132), None);
        let one_more = residency_error(1057, 1, "T4", 8, 132).unwrap_or_default();
        assert!(one_more.contains("1,057 blocks of 1 thread,"), "{one_more}");
        // A block that cannot be resident at all (0 per SM) refuses every grid.
        let none = residency_error(1, 1024, "T4", 0, 40).unwrap_or_default();
        assert!(
            none.contains("1 block of 1,024 threads")
                && none.contains("at most 0 (0 per SM × 40 SMs)"),
            "{none}"
        );
    }

    #[test]
    fn a_kernel_with_a_grid_sync_is_made_cooperative_with_a_note() {
        assert_eq!(Cooperative::of(false, false), Cooperative::No);
        assert_eq!(Cooperative::of(true, false), Cooperative::Asked);
        assert_eq!(Cooperative::of(true, true), Cooperative::Asked);
        assert_eq!(Cooperative::of(false, true), Cooperative::Made);
        assert!(!Cooperative::No.is_cooperative() && Cooperative::Made.is_cooperative());
        assert_eq!(Cooperative::Asked.note("k"), None);
        let note = Cooperative::Made.note("two_phase").unwrap_or_default();
        assert!(note.contains("`two_phase` uses a grid-wide sync"), "{note}");
        assert!(note.contains("made cooperative"), "{note}");
    }
}
