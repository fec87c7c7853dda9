//! Device-function calls and returns: argument and result copies through local memory,
//! per-lane call stacks (saving the callee's registers and locals for recursive functions),
//! calls through function pointers, and the built-in callees.
//!
//! Part of the interpreter; built-ins themselves are in `builtins`.

use super::{alu, Fault, Frame, Stop, Warp, Worker};
use crate::ir::Callee;
use crate::CheckKind;

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
                let lb = prog.local_bytes as usize;
                alu::each(m, |l| {
                    let f = &prog.funcs[target[l] as usize];
                    let saved = if f.recursive {
                        let regs: Vec<u64> = (f.regs.0..f.regs.1)
                            .map(|s| w.regs[s as usize][l])
                            .collect();
                        let loc = w.local[l * lb + f.local.0 as usize..l * lb + f.local.1 as usize]
                            .to_vec();
                        Some(Box::new((regs, loc)))
                    } else {
                        None
                    };
                    for (k, &(off, size)) in site.args.iter().enumerate() {
                        let Some(&(doff, dsize)) = f.params.get(k) else {
                            continue;
                        };
                        let n = size.min(dsize) as usize;
                        let src = l * lb + off as usize;
                        let dst = l * lb + doff as usize;
                        w.local.copy_within(src..src + n, dst);
                    }
                    w.frames[l].push(Frame {
                        ret_pc: pc + 1,
                        site: site_idx as u32,
                        callee: target[l],
                        saved,
                    });
                    w.depth[l] += 1;
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
                    if n <= 64 && fr.saved.is_none() {
                        tmp[..n].copy_from_slice(&w.local[src..src + n]);
                        let dst = l * lb + off as usize;
                        w.local[dst..dst + n].copy_from_slice(&tmp[..n]);
                    } else {
                        vals.push((l * lb + off as usize, w.local[src..src + n].to_vec()));
                    }
                }
                if let Some(saved) = fr.saved {
                    let (regs, loc) = *saved;
                    for (k, s) in (f.regs.0..f.regs.1).enumerate() {
                        w.regs[s as usize][l] = regs[k];
                    }
                    let a = l * lb + f.local.0 as usize;
                    w.local[a..a + loc.len()].copy_from_slice(&loc);
                }
                for (dst, v) in vals {
                    w.local[dst..dst + v.len()].copy_from_slice(&v);
                }
            }
            w.lane_pc[l] = fr.ret_pc;
            w.depth[l] -= 1;
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
}
