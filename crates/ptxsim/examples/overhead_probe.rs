use ptxsim::{Device, LaunchConfig};
use std::time::Instant;
fn main() {
    let dev = Device::new();
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/vector_add.ptx"
    ))
    .unwrap();
    let m = dev.load_module(&src).unwrap();
    let k = &m.kernels()[0];
    println!("kernel {}", k.name);
    for &n in &std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().unwrap())
        .collect::<Vec<_>>()
    {
        let a = dev.alloc(n * 4).unwrap();
        let b = dev.alloc(n * 4).unwrap();
        let c = dev.alloc(n * 4).unwrap();
        let pa = a.to_le_bytes();
        let pb = b.to_le_bytes();
        let pc = c.to_le_bytes();
        let nn = (n as i32).to_le_bytes();
        for threads in [1usize] {
            for check in [true] {
                let mut cfg =
                    LaunchConfig::new(((n as u32).div_ceil(256), 1, 1), (256.min(n as u32), 1, 1));
                cfg.threads = threads;
                cfg.check = check;
                let mut best = f64::MAX;
                let mut wi = 0;
                for _ in 0..20000 {
                    let t = Instant::now();
                    wi = dev
                        .launch(&m, "vecAdd", &cfg, &[&pa, &pb, &pc, &nn])
                        .unwrap()
                        .warp_instructions;
                    best = best.min(t.elapsed().as_secs_f64());
                }
                println!(
                    "n={n} threads={threads} check={check}: best {:.1} us {wi} wi {:.1} ns/wi",
                    best * 1e6,
                    best * 1e9 / wi as f64
                );
            }
        }
    }
}
