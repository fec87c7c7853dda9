//! The engine settings the differential test compares: the interpreter on one worker with the
//! baseline build is the reference; every other setting must give its results. Each setting is
//! a `LaunchConfig`: its `Engines` (JIT mode, block tier, replays, gangs, host build), workers,
//! checker and counters, so every setting runs in this one process.
//!
//! What a setting must match is decided here (`Engine::exact_count`, `Engine::check`), not in
//! the comparison.

use ptxsim::{counters::CounterConfig, Engines, HostBuild, JitMode, LaunchConfig};

/// One way of running a launch.
#[derive(Debug, Clone, Copy)]
pub struct Engine {
    pub name: &'static str,
    pub engines: Engines,
    pub threads: usize,
    pub check: bool,
    pub counters: bool,
}

const fn engine(name: &'static str, jit: JitMode, host: HostBuild, threads: usize) -> Engine {
    Engine {
        name,
        engines: Engines {
            jit,
            block_tier: true,
            replay: true,
            gangs: true,
            host,
            jit_trace: ptxsim::JitTrace {
                regions: false,
                machine_code: false,
            },
        },
        threads,
        check: true,
        counters: false,
    }
}

/// `e` with the block tier, its replays or gangs switched as given.
const fn switched(e: Engine, block_tier: bool, replay: bool, gangs: bool) -> Engine {
    let mut e = e;
    e.engines.block_tier = block_tier;
    e.engines.replay = replay;
    e.engines.gangs = gangs;
    e
}

use HostBuild::{Avx2, Avx512, Baseline};
use JitMode::{Always, Auto, Off};

/// The reference: the interpreter, baseline build, one worker.
pub const REFERENCE: Engine = engine("interpreter", Off, Baseline, 1);

/// Every setting compared with the reference.
pub const OTHERS: &[Engine] = &[
    engine("interpreter avx2", Off, Avx2, 1),
    engine("interpreter avx512", Off, Avx512, 1),
    engine("interpreter 2 workers", Off, Baseline, 2),
    engine(
        "jit always (block tier, replays, gangs)",
        Always,
        Baseline,
        1,
    ),
    engine("jit always avx2", Always, Avx2, 1),
    engine("jit always 2 workers", Always, Avx512, 2),
    engine("jit auto", Auto, Avx512, 1),
    switched(
        engine("jit always, no replays", Always, Baseline, 1),
        true,
        false,
        true,
    ),
    switched(
        engine("jit always, no block tier", Always, Baseline, 1),
        false,
        false,
        true,
    ),
    switched(
        engine("jit always, no gangs", Always, Avx2, 1),
        true,
        true,
        false,
    ),
    Engine {
        check: false,
        ..engine("interpreter, checker off", Off, Baseline, 1)
    },
    Engine {
        check: false,
        ..engine("jit always, checker off", Always, Avx512, 1)
    },
    Engine {
        counters: true,
        ..engine("counted interpreter", Off, Baseline, 1)
    },
    Engine {
        counters: true,
        ..engine("counted, jit always", Always, Avx2, 1)
    },
    Engine {
        counters: true,
        ..engine("counted, jit always 2 workers", Always, Avx512, 2)
    },
];

impl Engine {
    /// Every setting, the reference first. A host build is a cap: a CPU without AVX-512 runs
    /// its best build under the `Avx512` cap.
    pub fn all() -> Vec<Engine> {
        std::iter::once(REFERENCE)
            .chain(OTHERS.iter().copied())
            .collect()
    }

    pub fn config(
        &self,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dyn_shared: u32,
    ) -> LaunchConfig {
        let mut cfg = LaunchConfig::new(grid, block);
        cfg.dynamic_shared_bytes = dyn_shared;
        cfg.engines = self.engines;
        cfg.threads = self.threads;
        cfg.check = self.check;
        // An L2 of 1 MiB: small enough that the fixtures' launches evict.
        cfg.counters = self.counters.then(|| CounterConfig::new(1 << 20));
        cfg
    }

    /// Whether `LaunchReport::warp_instructions` must be the interpreter's: exact when every
    /// block is interpreted (a counted launch is), not with compiled regions, which charge a
    /// warp the most any of its lanes ran.
    pub fn exact_count(&self) -> bool {
        self.engines.jit == JitMode::Off || self.counters
    }
}
