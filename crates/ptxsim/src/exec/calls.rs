//! Device-function calls and returns: argument and result copies through local memory,
//! per-lane call stacks (saving the callee's registers and locals for recursive functions),
//! each lane's stack size checked against the launch's limit (`LaunchConfig::stack_bytes`),
//! calls through function pointers, and the built-in callees.
//!
//! Part of the interpreter; built-ins themselves are in `builtins`.

use super::{alu, Fault, Frame, Stop, Warp, Worker};
use crate::ir::{Callee, FuncInfo};
use crate::{CheckKind, FRAME_LINK_BYTES, MAX_CALL_DEPTH};

/// What a call of `f` charges the calling thread's stack (the model of
/// `LaunchConfig::stack_bytes`): the frame link and `f`'s local window.
fn frame_bytes(f: &FuncInfo) -> u32 {
    FRAME_LINK_BYTES.saturating_add(f.local.1.saturating_sub(f.local.0))
}

impl Worker<'_> {
    /// `call` by lanes `m` at `pc`.
    pub(super) fn call(
        &mut self,
        w: &mut Warp,
        m: u32,
        pc: u32,
        site_idx: usize,
    ) -> Result<Option<Stop>, Fault> {
        let prog = self.ctx.prog;
        let site = &prog.calls[site_idx];
        match site.callee {
            Callee::Vprintf => {
                self.vprintf(w, m, pc, site_idx)?;
                w.pc = pc + 1;
                Ok(None)
            }
            Callee::AssertFail => {
                if m == 0 {
                    w.pc = pc + 1;
                    Ok(None)
                } else {
                    Err(self.assert_fail(w, m, pc, site_idx))
                }
            }
            Callee::Func(_) | Callee::Indirect(_) => {
                if m == 0 {
                    w.pc = pc + 1;
                    return Ok(None);
                }
                // The callee of each lane (a function pointer may differ between lanes).
                let mut target = [0u32; 32];
                match site.callee {
                    Callee::Func(fi) => target = [fi as u32; 32],
                    Callee::Indirect(slot) => {
                        let ptrs = w.regs[slot as usize];
                        let mut mm = m;
                        while mm != 0 {
                            let l = mm.trailing_zeros() as usize;
                            mm &= mm - 1;
                            let v = ptrs[l];
                            let idx = v.wrapping_sub(crate::mem::FUNC_WIN);
                            let fi = if idx.is_multiple_of(16) {
                                prog.by_module_fn
                                    .get((idx / 16) as usize)
                                    .copied()
                                    .flatten()
                            } else {
                                None
                            };
                            match fi {
                                Some(fi) => target[l] = fi,
                                None => {
                                    return Err(Box::new(self.report(
                                        CheckKind::Trap,
                                        w.idx,
                                        l,
                                        pc,
                                        v,
                                        0,
                                        "",
                                        None,
                                        format!("call through an invalid function pointer 0x{v:x}"),
                                    )))
                                }
                            }
                        }
                    }
                    _ => {}
                }
                // Every calling lane needs room for its callee's frame, or the launch stops.
                let mut mm = m;
                while mm != 0 {
                    let l = mm.trailing_zeros() as usize;
                    mm &= mm - 1;
                    let f = &prog.funcs[target[l] as usize];
                    let need = u64::from(w.stack[l]) + u64::from(frame_bytes(f));
                    if need > u64::from(self.ctx.stack_bytes) || w.depth[l] == MAX_CALL_DEPTH {
                        return Err(self.stack_overflow(w, l, pc, f));
                    }
                }
                let lb = prog.local_bytes as usize;
                w.called = true;
                alu::each(m, |l| {
                    let f = &prog.funcs[target[l] as usize];
                    if f.recursive {
                        let regs = &w.regs[f.regs.0 as usize..f.regs.1 as usize];
                        w.saved_regs[l].extend(regs.iter().map(|r| r[l]));
                        let loc = l * lb + f.local.0 as usize..l * lb + f.local.1 as usize;
                        w.saved_local[l].extend_from_slice(&w.local[loc]);
                    }
                    for (k, &(off, size)) in site.args.iter().enumerate() {
                        let Some(&(doff, dsize)) = f.params.get(k) else {
                            continue;
                        };
                        let n = size.min(dsize) as usize;
                        let src = l * lb + off as usize;
                        let dst = l * lb + doff as usize;
                        w.local.copy_within(src..src + n, dst);
                    }
                    let bytes = frame_bytes(f);
                    w.frames[l].push(Frame {
                        ret_pc: pc + 1,
                        site: site_idx as u32,
                        callee: target[l],
                        saved: f.recursive,
                        bytes,
                    });
                    w.depth[l] += 1;
                    w.stack[l] += bytes;
                });
                let group = w.mask;
                w.spill_group();
                alu::each(group & !m, |l| w.lane_pc[l] = pc + 1);
                alu::each(m, |l| {
                    w.lane_pc[l] = prog.funcs[target[l] as usize].entry_pc
                });
                w.pick();
                Ok(None)
            }
        }
    }

    /// `ret` by lanes `m` at `pc` (inside a device function).
    pub(super) fn ret(&mut self, w: &mut Warp, m: u32, pc: u32) -> Result<Option<Stop>, Fault> {
        let prog = self.ctx.prog;
        let lb = prog.local_bytes as usize;
        let group = w.mask;
        w.spill_group();
        alu::each(group & !m, |l| w.lane_pc[l] = pc + 1);
        let mut exited = 0u32;
        alu::each(m, |l| {
            let Some(fr) = w.frames[l].pop() else {
                exited |= 1 << l;
                return;
            };
            let site = &prog.calls[fr.site as usize];
            {
                let f = &prog.funcs[fr.callee as usize];
                let mut tmp = [0u8; 64];
                let mut vals: Vec<(usize, Vec<u8>)> = Vec::new();
                for (k, &(off, size)) in site.rets.iter().enumerate() {
                    let Some(&(soff, ssize)) = f.rets.get(k) else {
                        continue;
                    };
                    let n = size.min(ssize) as usize;
                    let src = l * lb + soff as usize;
                    if n <= 64 && !fr.saved {
                        tmp[..n].copy_from_slice(&w.local[src..src + n]);
                        let dst = l * lb + off as usize;
                        w.local[dst..dst + n].copy_from_slice(&tmp[..n]);
                    } else {
                        vals.push((l * lb + off as usize, w.local[src..src + n].to_vec()));
                    }
                }
                if fr.saved {
                    let nregs = (f.regs.1 - f.regs.0) as usize;
                    let base = w.saved_regs[l].len() - nregs;
                    for (k, s) in (f.regs.0..f.regs.1).enumerate() {
                        w.regs[s as usize][l] = w.saved_regs[l][base + k];
                    }
                    w.saved_regs[l].truncate(base);
                    let nloc = (f.local.1 - f.local.0) as usize;
                    let from = w.saved_local[l].len() - nloc;
                    let a = l * lb + f.local.0 as usize;
                    w.local[a..a + nloc].copy_from_slice(&w.saved_local[l][from..]);
                    w.saved_local[l].truncate(from);
                }
                for (dst, v) in vals {
                    w.local[dst..dst + v.len()].copy_from_slice(&v);
                }
            }
            w.lane_pc[l] = fr.ret_pc;
            w.depth[l] -= 1;
            w.stack[l] -= fr.bytes;
        });
        if exited != 0 && self.ctx.check && w.at_bar != 0 {
            let l = exited.trailing_zeros() as usize;
            return Err(self.divergent_barrier(w, l, "exited"));
        }
        w.waiting &= !exited;
        w.exited |= exited;
        Ok(if w.pick() {
            None
        } else if w.at_bar != 0 {
            Some(Stop::Blocked)
        } else {
            Some(Stop::Done)
        })
    }

    /// The fault of lane `l`'s call of `f` at `pc`, which its stack has no room for.
    fn stack_overflow(&self, w: &Warp, l: usize, pc: u32, f: &FuncInfo) -> Fault {
        let (x, y, z) = self.thread_of(w.idx, l);
        let limit = self.ctx.stack_bytes;
        let depth = u32::from(w.depth[l]) + 1;
        let why = if w.depth[l] == MAX_CALL_DEPTH {
            format!("more than {MAX_CALL_DEPTH} nested calls")
        } else {
            format!(
                "{} bytes in use, the call to `{}` needs {} more",
                w.stack[l],
                f.name,
                frame_bytes(f)
            )
        };
        Box::new(self.report(
            CheckKind::StackOverflow,
            w.idx,
            l,
            pc,
            0,
            0,
            "",
            None,
            format!(
                "call stack overflow: the {limit}-byte stack of thread ({x},{y},{z}) exceeded at \
                 call depth {depth} ({why})"
            ),
        ))
    }
}
