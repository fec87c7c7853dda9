//! Built-in device functions that NVRTC leaves as calls: `vprintf` and `__assertfail`.
//!
//! They read their arguments from the call site's parameter slots in the lane's local memory
//! and the memory those point to; formatting itself is `crate::printf`.

use super::{Fault, Warp, Worker};
use crate::printf::{self, Arg, Val};
use crate::CheckKind;

/// Longest string read from device memory for `%s` or a format.
const MAX_STR: u64 = 1 << 16;

impl Worker<'_> {
    fn param_u64(&self, w: &Warp, l: usize, site: usize, k: usize, size: usize) -> u64 {
        let lb = self.ctx.prog.local_bytes as usize;
        let Some(&(off, _)) = self.ctx.prog.calls[site].args.get(k) else {
            return 0;
        };
        let at = l * lb + off as usize;
        let mut b = [0u8; 8];
        if let Some(s) = w.local.get(at..at + size) {
            b[..size].copy_from_slice(s);
        }
        u64::from_le_bytes(b)
    }

    fn read_cstr(&mut self, w: &Warp, l: usize, pc: u32, a: u64) -> Result<Vec<u8>, Fault> {
        let mut out = Vec::new();
        for k in 0..MAX_STR {
            let c = self.read_generic(w, l, pc, a + k, 1)? as u8;
            if c == 0 {
                break;
            }
            out.push(c);
        }
        Ok(out)
    }

    pub(super) fn vprintf(
        &mut self,
        w: &mut Warp,
        m: u32,
        pc: u32,
        site: usize,
    ) -> Result<(), Fault> {
        let mut mm = m;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let fmt_ptr = self.param_u64(w, l, site, 0, 8);
            let args_ptr = self.param_u64(w, l, site, 1, 8);
            let fmt = self.read_cstr(w, l, pc, fmt_ptr)?;
            let mut off = 0u64;
            let mut fault: Option<Fault> = None;
            let (text, nargs) = {
                let this = &mut *self;
                let w = &*w;
                let mut next = |a: Arg| -> Val {
                    if fault.is_some() {
                        return Val::Int(0);
                    }
                    let size = match a {
                        Arg::Int(s) => s as u64,
                        _ => 8,
                    };
                    off = off.div_ceil(size) * size;
                    let r = this.read_generic(w, l, pc, args_ptr + off, size);
                    off += size;
                    let v = match r {
                        Ok(v) => v,
                        Err(f) => {
                            fault = Some(f);
                            return Val::Int(0);
                        }
                    };
                    match a {
                        Arg::Int(_) => Val::Int(v),
                        Arg::Double => Val::Double(f64::from_bits(v)),
                        Arg::Str if v == 0 => Val::Str(None),
                        Arg::Str => match this.read_cstr(w, l, pc, v) {
                            Ok(s) => Val::Str(Some(s)),
                            Err(f) => {
                                fault = Some(f);
                                Val::Str(None)
                            }
                        },
                    }
                };
                printf::format(&fmt, &mut next)
            };
            if let Some(f) = fault {
                return Err(f);
            }
            self.out.printf.push_str(&text);
            let lb = self.ctx.prog.local_bytes as usize;
            if let Some(&(off, size)) = self.ctx.prog.calls[site].rets.first() {
                let at = l * lb + off as usize;
                let n = (size as usize).min(4);
                if let Some(s) = w.local.get_mut(at..at + n) {
                    s.copy_from_slice(&(nargs as u32).to_le_bytes()[..n]);
                }
            }
        }
        Ok(())
    }

    pub(super) fn assert_fail(&mut self, w: &mut Warp, m: u32, pc: u32, site: usize) -> Fault {
        let l = m.trailing_zeros() as usize & 31;
        let msg_ptr = self.param_u64(w, l, site, 0, 8);
        let file_ptr = self.param_u64(w, l, site, 1, 8);
        let line = self.param_u64(w, l, site, 2, 4) as u32;
        let func_ptr = self.param_u64(w, l, site, 3, 8);
        let mut text = |p: u64| -> String {
            self.read_cstr(w, l, pc, p)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_else(|_| "?".into())
        };
        let (msg, file, func) = (text(msg_ptr), text(file_ptr), text(func_ptr));
        let (x, y, z) = self.thread_of(w.idx, l);
        let (bx, by, bz) = self.block;
        Box::new(self.report(
            CheckKind::Trap,
            w.idx,
            l,
            pc,
            0,
            0,
            "",
            None,
            format!(
                "{file}:{line}: {func}: block: [{bx},{by},{bz}], thread: [{x},{y},{z}] Assertion `{msg}` failed."
            ),
        ))
    }
}
