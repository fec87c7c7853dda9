//! Fuzz target of the command language: every line of the input goes through
//! `magics::parse::parse_line` and `magics::check_line`, and every expression of what parses is
//! evaluated (`eval`, `eval_int`, `eval_f64`, `eval_dims`) against a small fake `Env`; a first
//! line that starts with `%%` also goes through `parse_cuda_header` and `check_cell_header`.
//! None of it may panic, overflow a 2 MiB stack (a Jupyter request thread's) or hang.
//!
//! Inputs: the corpus `fuzz/corpus/magic/` (lines of the notebooks and of `src/magics/tests.rs`),
//! stress lines (5,000 parentheses, 5,000 `ceil(`, a 1 MB `1+1+…+1`, …), mutations of both, and
//! lines from a small generator of the grammar. `cargo test --release --test fuzz_magic` runs a
//! few thousand from a fixed seed; `benches/fuzz.sh 60 magic` runs the ignored `magic_long`.

use fuzzing::{Rng, Target};
use nbcuda::magics::eval::{eval, eval_dims, eval_f64, eval_int, Env, Value};
use nbcuda::magics::parse::{parse_cuda_header, Command, Ctor, Expr, LaunchConfig};
use nbcuda::magics::registry::parse_line;

/// Two scalars and two arrays; `on_gpu` alternates with the input's length.
struct FakeEnv(bool);

impl Env for FakeEnv {
    fn scalar(&self, name: &str) -> Option<Value> {
        match name {
            "N" => Some(Value::Int(1000)),
            "BIG" => Some(Value::Int(i64::MAX)),
            "A" => Some(Value::Float(0.25)),
            _ => None,
        }
    }
    fn shape(&self, array: &str) -> Option<Vec<usize>> {
        match array {
            "x" => Some(vec![1000]),
            "img" => Some(vec![64, 48, 3]),
            _ => None,
        }
    }
    fn on_gpu(&self) -> bool {
        self.0
    }
}

/// Every expression a parsed command holds.
fn exprs(cmd: &Command) -> Vec<&Expr> {
    let mut out: Vec<&Expr> = Vec::new();
    fn push_launch<'a>(l: &'a nbcuda::magics::parse::Launch, out: &mut Vec<&'a Expr>) {
        if let LaunchConfig::Explicit {
            grid,
            block,
            shared,
            stream,
        } = &l.config
        {
            out.extend([grid, block]);
            out.extend(shared.iter().chain(stream));
        }
        out.extend(&l.args);
    }
    match cmd {
        Command::Array { ctor, .. } => match ctor {
            Ctor::Zeros(e) | Ctor::Ones(e) | Ctor::Empty(e) => out.push(e),
            Ctor::Full(a, b) => out.extend([a, b]),
            Ctor::Arange(v) => out.extend(v),
            Ctor::Linspace(a, b, c) => out.extend([a, b, c]),
            Ctor::Rand(a, s) | Ctor::Randn(a, s) => {
                out.push(a);
                out.extend(s);
            }
            Ctor::Copy(_) => {}
        },
        Command::Set(Some((_, e))) | Command::Limit(Some((_, e))) | Command::Device(Some(e)) => {
            out.push(e)
        }
        Command::Print { head, .. } => out.extend(head),
        Command::Launch(l) => push_launch(l, &mut out),
        Command::Graph(nbcuda::magics::parse::GraphCmd::Launch { times, .. }) => out.extend(times),
        Command::Show(s) => out.extend(s.vmin.iter().chain(&s.vmax).chain(&s.scale)),
        Command::Time(t) => {
            out.extend(
                t.runs
                    .iter()
                    .chain(&t.warmup)
                    .chain(&t.bytes)
                    .chain(&t.flops),
            );
            if let nbcuda::magics::parse::time_args::TimeTarget::Launch(l) = &t.target {
                push_launch(l, &mut out);
            }
        }
        _ => {}
    }
    out
}

fn run(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let env = FakeEnv(input.len() % 2 == 1);
    for (i, line) in text.split('\n').enumerate() {
        if i == 0 && line.trim_start().starts_with("%%") {
            let _ = parse_cuda_header(line);
            let _ = nbcuda::magics::check_cell_header(line);
            continue;
        }
        let _ = nbcuda::magics::check_line(line, i + 1);
        if let Ok(cmd) = parse_line(line) {
            for e in exprs(&cmd) {
                let _ = eval(e, &env);
                let _ = eval_int(e, &env, "the value");
                let _ = eval_f64(e, &env);
                let _ = eval_dims(e, &env, "the shape", 3);
            }
            let _ = format!("{cmd:?}");
        }
    }
}

/// A magic line from the grammar (DESIGN.md's command language), mostly well-formed.
fn generate(rng: &mut Rng) -> Vec<u8> {
    fn name(rng: &mut Rng) -> String {
        rng.pick(&["x", "y", "img", "N", "A", "BIG", "out", "k", "_a1", "s0"])
            .to_string()
    }
    /// An expression of at most `budget` nodes (a budget, not a depth: binary nodes would
    /// make a depth-limited tree exponentially large).
    fn expr(rng: &mut Rng, budget: &mut usize) -> String {
        if *budget == 0 || rng.chance(1, 3) {
            return match rng.below(6) {
                0 => name(rng),
                1 => rng
                    .pick(&["0", "1", "256", "1_000_000", "-1", "9223372036854775807"])
                    .to_string(),
                2 => rng
                    .pick(&["0.5", "1e9", "2.5e-3", "1e308", ".5"])
                    .to_string(),
                3 => format!("len({})", name(rng)),
                4 => format!("{}.shape[{}]", name(rng), rng.below(4)),
                _ => (rng.next_u64() % 100_000).to_string(),
            };
        }
        *budget -= 1;
        match rng.below(8) {
            0 => format!("-{}", expr(rng, budget)),
            1 => format!("({})", expr(rng, budget)),
            2 => format!("ceil({} / {})", expr(rng, budget), expr(rng, budget)),
            3 => {
                let f = rng.pick(&["min", "max", "by_backend"]);
                format!("{f}({}, {})", expr(rng, budget), expr(rng, budget))
            }
            4 => {
                let f = rng.pick(&["floor", "int", "float", "sqrt", "ceil"]);
                format!("{f}({})", expr(rng, budget))
            }
            5 => format!("({}, {})", expr(rng, budget), expr(rng, budget)),
            _ => {
                let op = rng.pick(&[" + ", " - ", " * ", " / ", " % "]);
                format!("{}{op}{}", expr(rng, budget), expr(rng, budget))
            }
        }
    }
    // Usually a small expression; one time in fifty one nested about `MAX_NESTING` deep
    // (the parser's limit, 256), around which off-by-one errors live.
    let e = |rng: &mut Rng| {
        let mut budget = rng.below(12);
        let inner = expr(rng, &mut budget);
        if !rng.chance(1, 50) {
            return inner;
        }
        let depth = 250 + rng.below(12);
        let (open, close) = rng.pick(&[("(", ")"), ("-", ""), ("ceil(", ")"), ("min(1, ", ")")]);
        format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
    };
    let dt = |rng: &mut Rng| {
        rng.pick(&[
            "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16",
        ])
        .to_string()
    };
    let line = match rng.below(14) {
        0 => format!("%set {} = {}", name(rng), e(rng)),
        1 => {
            let ctor = match rng.below(6) {
                0 => format!("zeros({}, {})", e(rng), dt(rng)),
                1 => format!("full({}, {}, {})", e(rng), e(rng), dt(rng)),
                2 => format!("arange({}, {}, {}, {})", e(rng), e(rng), e(rng), dt(rng)),
                3 => format!("linspace({}, {}, {}, {})", e(rng), e(rng), e(rng), dt(rng)),
                4 => format!("rand({}, {}, seed={})", e(rng), dt(rng), e(rng)),
                _ => format!("copy({})", name(rng)),
            };
            format!("%array {} = {ctor}", name(rng))
        }
        2 => format!(
            "%launch {}[{}, {}](x, {}, {})",
            name(rng),
            e(rng),
            e(rng),
            e(rng),
            e(rng)
        ),
        3 => format!(
            "%launch k<<<{}, {}, {}>>>({})",
            e(rng),
            e(rng),
            e(rng),
            e(rng)
        ),
        4 => format!("%launch --check k<float>[auto]({}, x)", e(rng)),
        5 => format!(
            "%time -n {} --warmup {} --bytes {} k[{}, 256](x)",
            e(rng),
            e(rng),
            e(rng),
            e(rng)
        ),
        6 => format!(
            "%show {} --cmap {} --vmin {} --vmax {} --scale {}",
            name(rng),
            rng.pick(&["viridis", "magma", "gray", "coolwarm", "nope"]),
            e(rng),
            e(rng),
            e(rng)
        ),
        7 => format!("%print {} --head {}", name(rng), e(rng)),
        8 => format!(
            "%load {} = {} {}",
            name(rng),
            rng.pick(&["a.png", "b.npy", "~/c.jpg", "\"d e.npy\""]),
            rng.pick(&["", "--gray", "--as f32", "--as"])
        ),
        9 => format!("%device {}", e(rng)),
        10 => format!("%limit stack {}", e(rng)),
        11 => rng
            .pick(&[
                "%%cuda --name m -DR=5 --std=c++17 --fast-math -G --arch sm_80",
                "%%animate --frames 10 --every 2 --show x --cmap magma",
                "%lsmagic",
                "%help launch",
                "%arrays",
                "%timings --clear",
                "%swap x y",
                "%free x y",
                "%sync s0",
                "%backend sim",
                "%reset",
            ])
            .to_string(),
        12 => format!("%{} {}", name(rng), e(rng)),
        _ => format!("%set {} = {}  # comment", name(rng), e(rng)),
    };
    line.into_bytes()
}

fn stress() -> Vec<Vec<u8>> {
    let mut v = vec![
        format!("%set z = {}1", "(".repeat(5000)),
        format!("%set z = {}1{}", "(".repeat(5000), ")".repeat(5000)),
        format!("%set z = {}1", "ceil(".repeat(5000)),
        format!("%set z = {}1", "-".repeat(100_000)),
        format!("%set z = 1{}", "+1".repeat(500_000)),
        format!("%set z = 1{}", "*1".repeat(500_000)),
        format!("%array a = zeros({}1, f32)", "(".repeat(5000)),
        format!("%launch k[{}1, 1](x)", "[".repeat(5000)),
        format!("%launch k<<<1, 1>>>({})", "x, ".repeat(200_000)),
        format!("%set z = x{}", ".shape[0]".repeat(50_000)),
        format!("%set z = {}1", "len(".repeat(5000)),
        format!("%set z = {}", "9".repeat(100_000)),
        format!("%show {}", "x ".repeat(100_000)),
        format!("%free {}", "x ".repeat(100_000)),
        format!("%set z = {}", "(".repeat(1 << 20)),
        format!("%set z = {}", "1".repeat((1 << 20) + 1)),
    ];
    v.push(format!("%%cuda {}", "-DX=1 ".repeat(100_000)));
    v.into_iter().map(String::into_bytes).collect()
}

fn target() -> Target {
    Target::new("magic", run)
        .corpus(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/magic"))
        .dict(&[
            "%set ",
            "%array ",
            "%launch ",
            "%time ",
            "%show ",
            "%print ",
            "%load ",
            "%save ",
            "%%cuda ",
            "%%animate ",
            " = ",
            "zeros(",
            "full(",
            "arange(",
            "linspace(",
            "rand(",
            "copy(",
            "seed=",
            "ceil(",
            "floor(",
            "min(",
            "max(",
            "len(",
            "int(",
            "float(",
            "sqrt(",
            "by_backend(",
            ".shape[",
            "]",
            "[",
            "<<<",
            ">>>",
            "[auto]",
            "--check ",
            "-n ",
            "--bytes ",
            "--flops ",
            "--cmap ",
            "--vmin ",
            "--vmax ",
            "--scale ",
            "--head ",
            "--gray",
            "--as ",
            "f32",
            "u8",
            "i64",
            "f16",
            "(",
            ")",
            ",",
            "+",
            "-",
            "*",
            "/",
            "%",
            "#",
            "\"",
            "'",
            "~/",
            "\t",
            "1_000",
            "0.5",
            "1e400",
            "é",
            "\u{200b}",
            "𝓍",
        ])
        .nests(&[
            ("(", ")"),
            ("ceil(", ")"),
            ("[", "]"),
            ("-", ""),
            ("len(", ")"),
            ("<<<", ">>>"),
        ])
        .chains(&[("1", "+"), ("x", "*"), ("1", ","), ("N", " - "), ("x", " ")])
        .generator(generate)
        .stress(stress())
        .max_len((1 << 20) + 4096)
        .test_inputs(4000)
}

#[test]
fn magic() {
    target().test();
}

/// `benches/fuzz.sh`: `FUZZ_SECONDS` of generated inputs.
#[test]
#[ignore]
fn magic_long() {
    target().long_run();
}
