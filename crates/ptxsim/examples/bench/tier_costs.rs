//! `--tier-costs`: what one instruction costs in the block tier, by kind. A kernel whose loop
//! is six block-uniform instructions (two adds, a xor, a barrier, a compare, a branch) runs
//! 64 blocks of 256 threads on one worker, plain and with one instruction of each kind added
//! to its loop (two in the rows marked x2, so that no destination is its own source, which
//! the tier copies first, and each result is read: nothing computes an unread register); the
//! difference per iteration is that instruction's cost for a whole block. "uniform" and
//! "lanes" say how the tier holds the operands (`BlockSlot`); an unread result costs only the
//! dispatch.
//! Best of `rounds` alternated runs of 15 launches each, checker on and off. A measurement,
//! not a test (these machines are noisy: compare rows of one run).

use ptxsim::{Device, Engines, LaunchConfig};
use std::error::Error;

/// The loop kernel; `//BODY` is where the measured instruction goes.
const LOOP: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry tierloop(.param .u64 pout, .param .u32 pn) {
  .shared .align 4 .b8 s[1024];
  .reg .u32 %r<10>;
  .reg .u64 %rd<9>;
  .reg .pred %p<3>;
  .reg .f32 %f<5>;
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, 0;
  mov.u32 %r3, 7;
  mov.u32 %r6, %tid.x;
  mul.wide.u32 %rd5, %r6, 4;
  mov.u64 %rd6, s;
  add.s64 %rd7, %rd6, %rd5;
  mov.f32 %f1, 0f3F800000;
  st.shared.f32 [%rd7], %f1;
  shr.u32 %r9, %r6, 1;
  mov.b32 %f2, %r9;
L:
  //BODY
  add.u32 %r2, %r2, 1;
  add.u32 %r3, %r3, %r2;
  xor.b32 %r3, %r3, 5;
  bar.sync 0;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra L;
  mov.u32 %r4, %tid.x;
  setp.ne.u32 %p2, %r4, 0;
  @%p2 bra DONE;
  ld.param.u64 %rd1, [pout];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r5, %ctaid.x;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}
"#;

/// (name, instruction added to the loop).
const KINDS: [(&str, &str); 10] = [
    ("(the loop alone)", ""),
    ("add.u32, uniform", "add.u32 %r3, %r3, %r2;"),
    ("add.u32, result unread", "add.u32 %r7, %r6, %r2;"),
    ("add.f32, uniform", "add.f32 %f1, %f1, %f1;"),
    ("ld.shared, unit stride", "ld.shared.f32 %f2, [%rd7];"),
    ("st.shared, unit stride", "st.shared.f32 [%rd7], %f1;"),
    (
        "add.u32 x2, lanes",
        "add.u32 %r8, %r9, %r2; add.u32 %r9, %r8, %r2;",
    ),
    (
        "add.f32 x2, lanes",
        "add.f32 %f3, %f2, %f1; add.f32 %f2, %f3, %f1;",
    ),
    (
        "shr.u32 x2, lanes",
        "shr.u32 %r8, %r9, 1; shr.u32 %r9, %r8, 1;",
    ),
    (
        "shfl.down + add.u32, lanes",
        "shfl.sync.down.b32 %r8, %r9, 1, 31, -1; add.u32 %r9, %r8, %r2;",
    ),
];

const BLOCKS: u32 = 64;
const ITERATIONS: u32 = 2000;

/// Best time of 15 launches of `body`'s loop, in ns per iteration of one block.
fn per_iteration(dev: &Device, body: &str, check: bool) -> Result<f64, Box<dyn Error>> {
    let m = dev.load_module(&LOOP.replace("//BODY", body))?;
    let out = dev.alloc(BLOCKS as usize * 4)?;
    let mut cfg = LaunchConfig::new((BLOCKS, 1, 1), (256, 1, 1));
    cfg.threads = 1;
    cfg.check = check;
    cfg.engines = Engines {
        replay: false,
        ..Engines::from_vars(|k| std::env::var(k).ok())
    };
    let mut best = f64::INFINITY;
    for _ in 0..15 {
        let t = std::time::Instant::now();
        let r = dev.launch(
            &m,
            "tierloop",
            &cfg,
            &[&out.to_le_bytes(), &ITERATIONS.to_le_bytes()],
        )?;
        best = best.min(t.elapsed().as_secs_f64());
        if r.block_tier_blocks != BLOCKS as u64 {
            return Err(
                format!("{body}: the block tier ran {} blocks", r.block_tier_blocks).into(),
            );
        }
    }
    dev.free(out)?;
    Ok(best * 1e9 / (BLOCKS as f64 * ITERATIONS as f64))
}

pub fn tier_costs(rounds: usize) -> Result<(), Box<dyn Error>> {
    let dev = Device::new();
    let mut best = [[f64::INFINITY; 2]; KINDS.len()];
    // The tier's own costs: replays would skip the loop's block-uniform instructions, which
    // are the same in every block (`Engines::replay` is off in `per_iteration`).
    for _ in 0..rounds {
        for (k, (_, body)) in KINDS.iter().enumerate() {
            for (c, check) in [true, false].into_iter().enumerate() {
                best[k][c] = best[k][c].min(per_iteration(&dev, body, check)?);
            }
        }
    }
    println!(
        "block tier without replays, 64 blocks of 256 threads, one worker, best of {rounds} \
         rounds: ns per block"
    );
    println!(
        "{:<26} {:>10} {:>10} {:>10}",
        "instruction", "checked", "added", "unchecked"
    );
    for (k, (name, _)) in KINDS.iter().enumerate() {
        let added = if k == 0 {
            best[0][0] / 6.0
        } else {
            best[k][0] - best[0][0]
        };
        println!(
            "{name:<26} {:>10.1} {added:>10.1} {:>10.1}",
            best[k][0], best[k][1]
        );
    }
    println!("checked, unchecked: ns per loop iteration; added: what the instruction adds to the loop (the first row: per instruction of the loop alone)");
    Ok(())
}
