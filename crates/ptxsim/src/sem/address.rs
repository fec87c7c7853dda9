//! Generic addresses of PTX: the window of each state space in the generic address space
//! (`cvta`) and the test of an address against a space (`isspacep`).
//!
//! Pure functions of values (see `sem`). No memory is read here.

use crate::ir::MemSpace;
use crate::mem::{LOCAL_WIN, PARAM_WIN, SHARED_WIN, WIN_SIZE};

pub use crate::mem::window;

/// Whether `a` lies in the window that starts at `w`.
pub fn in_win(a: u64, w: u64) -> bool {
    a.wrapping_sub(w) < WIN_SIZE
}

/// `isspacep`: does generic address `a` point into `space`?
pub fn in_space(a: u64, space: MemSpace) -> bool {
    match space {
        MemSpace::Shared | MemSpace::Local | MemSpace::Param => in_win(a, window(space)),
        MemSpace::Global => {
            !in_win(a, SHARED_WIN) && !in_win(a, LOCAL_WIN) && !in_win(a, PARAM_WIN)
        }
        MemSpace::Generic => true,
    }
}

/// `cvta` (`to`: generic to `space`, else `space` to generic).
#[inline(always)]
pub fn cvta(a: u64, space: MemSpace, to: bool) -> u64 {
    let win = window(space);
    if to {
        a.wrapping_sub(win)
    } else {
        a.wrapping_add(win)
    }
}

/// `isspacep` as a register value.
#[inline(always)]
pub fn isspacep(a: u64, space: MemSpace) -> u64 {
    in_space(a, space) as u64
}
