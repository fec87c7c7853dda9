//! Unit tests of the command language: parser (every command, every error with its message and
//! token), expressions, constructors' values, files, suggestions. Tests that need the device
//! state (arrays, launches, completion, inspect) are in `tests_device.rs`.

use super::eval::{self, Env, Value};
use super::files::{self, HostArray};
use super::host::{self, Fill};
use super::lex::Span;
use super::parse::*;
use super::registry::parse_line;
use super::rng;
use super::{check_cell_header, check_line, registry};
use crate::display::array_text;
use crate::display::stats;
use crate::display::values;
use crate::gpu::Dtype;
use crate::suggest;
use std::collections::BTreeMap;

fn parse(s: &str) -> Command {
    match parse_line(s) {
        Ok(c) => c,
        Err(e) => panic!("{s}: {e:?}"),
    }
}

/// The error message and the text of the token it points at.
fn perr(s: &str) -> (String, String) {
    let e = parse_line(s).expect_err(s);
    let tok = e
        .span
        .map(|sp| s[sp.start..sp.end].to_string())
        .unwrap_or_default();
    (e.message, tok)
}

/// Debug text without the `Span { … }` parts.
fn no_spans(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("Span {") {
        out.push_str(&rest[..i]);
        rest = rest[i..].split_once('}').map_or("", |(_, r)| r);
    }
    out.push_str(rest);
    out
}

fn name(c: &Name) -> &str {
    &c.text
}

#[test]
fn parses_every_command() {
    assert_eq!(parse("%lsmagic"), Command::LsMagic);
    assert_eq!(parse("  %help"), Command::Help(None));
    match parse("%help %%cuda") {
        Command::Help(Some(n)) => assert_eq!(n.text, "cuda"),
        c => panic!("{c:?}"),
    }
    assert_eq!(
        parse("%clear_output --wait"),
        Command::ClearOutput { wait: true }
    );
    match parse("%array x = zeros((4, n), f32)") {
        Command::Array {
            name: n,
            ctor: Ctor::Zeros(s),
            dtype: Some(d),
            ..
        } => {
            assert_eq!(name(&n), "x");
            assert_eq!(d.dtype, Dtype::F32);
            assert!(matches!(s.kind, ExprKind::Tuple(ref v) if v.len() == 2));
        }
        c => panic!("{c:?}"),
    }
    match parse("%array r = rand(1000, f64, seed=42)") {
        Command::Array {
            ctor: Ctor::Rand(_, Some(seed)),
            ..
        } => assert_eq!(seed.kind, ExprKind::Int(42)),
        c => panic!("{c:?}"),
    }
    assert!(matches!(
        parse("%array a = arange(2, 10, 2, i32)"),
        Command::Array { ctor: Ctor::Arange(ref v), .. } if v.len() == 3
    ));
    assert!(matches!(
        parse("%array a = linspace(0, 1, 11, f64)"),
        Command::Array {
            ctor: Ctor::Linspace(..),
            ..
        }
    ));
    assert!(matches!(
        parse("%array b = copy(a)"),
        Command::Array { ctor: Ctor::Copy(ref n), dtype: None, .. } if n.text == "a"
    ));
    match parse("%load img = ~/pics/cat.png --gray --as f32") {
        Command::Load {
            name: n,
            path,
            gray,
            as_dtype,
        } => {
            assert_eq!(
                (n.text.as_str(), path.text.as_str(), gray),
                ("img", "~/pics/cat.png", true)
            );
            assert_eq!(as_dtype.map(|d| d.dtype), Some(Dtype::F32));
        }
        c => panic!("{c:?}"),
    }
    match parse("%load a = \"my dir/a.npy\"") {
        Command::Load { path, .. } => assert_eq!(path.text, "my dir/a.npy"),
        c => panic!("{c:?}"),
    }
    match parse("%save out /tmp/o.png") {
        Command::Save { name: n, path } => {
            assert_eq!((n.text.as_str(), path.text.as_str()), ("out", "/tmp/o.png"))
        }
        c => panic!("{c:?}"),
    }
    assert!(matches!(
        parse("%set n = 1 << 2".replace("<< 2", "* 4").as_str()),
        Command::Set(Some(_))
    ));
    assert_eq!(parse("%set"), Command::Set(None));
    assert_eq!(parse("%arrays"), Command::Arrays);
    match parse("%print x --head 3") {
        Command::Print {
            name: n,
            head: Some(h),
        } => {
            assert_eq!(n.text, "x");
            assert_eq!(h.kind, ExprKind::Int(3));
        }
        c => panic!("{c:?}"),
    }
    match parse("%free a b, c") {
        Command::Free(v) => assert_eq!(
            v.iter().map(|n| n.text.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        ),
        c => panic!("{c:?}"),
    }
    assert!(
        matches!(parse("%swap a b"), Command::Swap(ref a, ref b) if a.text == "a" && b.text == "b")
    );
    assert_eq!(parse("%sync"), Command::Sync(None));
    assert!(matches!(parse("%sync s1"), Command::Sync(Some(ref s)) if s.text == "s1"));
    assert_eq!(parse("%device"), Command::Device(None));
    assert!(matches!(parse("%device 1"), Command::Device(Some(_))));
    assert!(matches!(parse("%backend sim"), Command::Backend(ref n) if n.text == "sim"));
    assert!(matches!(parse("%ptx scale<float>"), Command::Ptx(ref n) if n.text == "scale<float>"));
    assert!(
        matches!(parse("%info add"), Command::Info { kernel: ref n, gpu: None } if n.text == "add")
    );
    assert_eq!(parse("%reset  # comment"), Command::Reset);
}

#[test]
fn parses_both_launch_syntaxes() {
    let l = |s: &str| match parse(s) {
        Command::Launch(l) => l,
        c => panic!("{c:?}"),
    };
    let a = l("%launch add[ceil(n / 256), 256](x, y, out, n)");
    let b = l("%launch add<<<ceil(n / 256), 256>>>(x, y, out, n)");
    assert_eq!(a.kernel.text, "add");
    assert_eq!(a.args.len(), 4);
    assert_eq!(
        no_spans(&format!("{:?}{:?}", a.config, a.args)),
        no_spans(&format!("{:?}{:?}", b.config, b.args))
    );
    let t = l("%launch --check scale< float >[(2, 2), (16, 16), 1024, s1](x, 2.5)");
    assert!(t.check);
    assert_eq!(t.kernel.text, "scale<float>");
    match &t.config {
        LaunchConfig::Explicit {
            grid,
            block,
            shared: Some(sh),
            stream: Some(st),
        } => {
            assert!(matches!(grid.kind, ExprKind::Tuple(_)));
            assert!(matches!(block.kind, ExprKind::Tuple(_)));
            assert_eq!(sh.kind, ExprKind::Int(1024));
            assert_eq!(st.kind, ExprKind::Name("s1".into()));
        }
        c => panic!("{c:?}"),
    }
    let s = l("%launch k<float, 4><<<1, 32, stream=s2>>>()");
    assert_eq!(s.kernel.text, "k<float, 4>");
    assert!(matches!(
        s.config,
        LaunchConfig::Explicit {
            stream: Some(_),
            shared: None,
            ..
        }
    ));
    assert!(s.args.is_empty());
    let auto = l("%launch add[auto](x, y, out, len(x))");
    assert!(matches!(auto.config, LaunchConfig::Auto(_)));
    assert_eq!(
        auto.args[3].kind,
        ExprKind::Call(
            "len".into(),
            vec![Expr {
                kind: ExprKind::Name("x".into()),
                span: Span::new(33, 34)
            }]
        )
    );
}

#[test]
fn syntax_errors_name_the_token() {
    let cases: &[(&str, &str, &str)] = &[
        ("%lauch add[1,1]()", "unknown magic", "%lauch"),
        ("%array x = zeros(10, float)", "unknown dtype 'float' (float is written f32 here); valid dtypes: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64", "float"),
        ("%array x = zeros(10, f31)", "unknown dtype 'f31' (did you mean f32?); valid dtypes: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64", "f31"),
        ("%array x = zeroes(10, f32)", "unknown array constructor 'zeroes'; did you mean zeros? (zeros, ones, empty, full, arange, linspace, rand, randn, copy)", "zeroes"),
        ("%array x = zeros(4, 4, f32)", "zeros() takes (SHAPE, DTYPE), got 3 arguments; write a multi-dimensional shape as a tuple: (H, W)", "zeros(4, 4, f32)"),
        ("%array x = full(4, f32)", "full() takes (SHAPE, VALUE, DTYPE), got 2 arguments", "full(4, f32)"),
        ("%array x = ones(4, 2 + 3)", "the last argument of ones() must be a dtype (f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64)", "2 + 3"),
        ("%array x = zeros(4, f32, seed=1)", "zeros() has no argument 'seed'", "seed"),
        ("%array x zeros(4, f32)", "expected '=' after the array name, found 'zeros'", "zeros"),
        ("%array = zeros(4, f32)", "expected an array name, found '='", "="),
        ("%array x = copy(a + 1)", "copy() takes an array name", "a + 1"),
        ("%launch add(x)", "expected '[GRID, BLOCK]' or '<<<GRID, BLOCK>>>' after the CUDA kernel name, found '('", "("),
        ("%launch add[1](x)", "a launch needs a grid and a block: KERNEL[GRID, BLOCK](ARGS) or KERNEL<<<GRID, BLOCK>>>(ARGS)", "[1]"),
        ("%launch add[1, 2, 3, s, 5](x)", "too many values in the launch configuration (GRID, BLOCK, SHMEM, STREAM)", "5"),
        ("%launch add<<<1, 2]](x)", "expected ',' or '>>>' in the launch configuration, found ']'", "]"),
        ("%launch add[1, 2](x, y", "expected ',' or ')' in the argument list, found the end of the line", ""),
        ("%launch add[1, 2](x) extra", "unexpected 'extra' after the %launch command", "extra"),
        ("%launch add[1, 2, foo=3](x)", "unknown launch option 'foo' (use stream= or shared=)", "foo"),
        ("%launch --fast add[1, 2](x)", "unknown option '--fast' for %launch (options: --check, --cooperative)", "--fast"),
        ("%launch scale<float[1, 2](x)", "unclosed template argument list '<'", "<float[1, 2](x)"),
        ("%launch add[1, 2](x, $)", "unexpected character '$'", "$"),
        ("%print x --tail 3", "unknown option '--tail' for %print (options: --head N)", "--tail"),
        ("%load x = a.png --grey --as float", "unknown dtype 'float' (float is written f32 here); valid dtypes: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64", "float"),
        ("%load x =", "expected a file path (.png, .jpg or .npy)", ""),
        ("%backend tpu", "unknown backend 'tpu'; use gpu or sim", "tpu"),
        ("%set n = (1, 2)", "a scalar cannot be a tuple", "(1, 2)"),
        ("%set n = 1 +", "expected a number, a name or '(', found the end of the line", ""),
        ("%set n = x.size", "unknown attribute 'size'; arrays have .shape[i]", "size"),
        ("%set n = 12abc", "bad number '12a'", "12a"),
        ("%%cuda", "%%cuda is a cell magic: it must be the first line of its cell", "%%cuda"),
        ("%", "expected a magic name after '%'", "%"),
        ("%swap a", "expected a second array name, found the end of the line", ""),
    ];
    for (line, msg, tok) in cases {
        let (m, t) = perr(line);
        assert_eq!((m.as_str(), t.as_str()), (*msg, *tok), "{line}");
    }
}

#[test]
fn errors_render_line_number_and_caret() {
    let e = check_line("%array x = zeros(10, float)", 3).unwrap_err();
    assert_eq!(e.ename, "SyntaxError");
    assert!(
        e.message.starts_with("line 3: unknown dtype 'float'"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .ends_with("\n    %array x = zeros(10, float)\n                         ^^^^^"),
        "{}",
        e.message
    );
    let e = check_line("%lauch add[1, 32](x)", 2).unwrap_err();
    assert_eq!(e.ename, "UnknownMagic");
    assert!(
        e.message
            .starts_with("line 2: unknown magic %lauch; did you mean %launch?"),
        "{}",
        e.message
    );
    let e = check_line("%cuda", 1).unwrap_err();
    assert!(
        e.message.contains("did you mean %%cuda? (a cell magic"),
        "{}",
        e.message
    );
    let e = check_line("%xyzzy_plugh", 1).unwrap_err();
    assert!(
        e.message
            .starts_with("line 1: unknown magic %xyzzy_plugh (%lsmagic lists them)"),
        "{}",
        e.message
    );
    let e = check_cell_header("%%cdua -DN=4").unwrap_err();
    assert_eq!(e.ename, "UnknownMagic");
    assert!(
        e.message
            .contains("unknown magic %%cdua; did you mean %%cuda?"),
        "{}",
        e.message
    );
    assert!(check_line("%launch add[1, 32](x, y, 3)", 1).is_ok());
}

#[test]
fn cuda_header_options() {
    let h = parse_cuda_header(
        "%%cuda --name k -DN=4 -DDEBUG -D M=2 --std=c++17 --fast-math -G --arch sm_80",
    )
    .unwrap();
    assert_eq!(h.name.as_deref(), Some("k"));
    assert_eq!(
        h.defines,
        vec![
            ("N".to_string(), Some("4".to_string())),
            ("DEBUG".to_string(), None),
            ("M".to_string(), Some("2".to_string()))
        ]
    );
    assert_eq!(h.std.as_deref(), Some("c++17"));
    assert!(h.fast_math && h.device_debug);
    assert_eq!(h.arch.as_deref(), Some("sm_80"));
    assert_eq!(parse_cuda_header("%%cuda").unwrap(), CudaHeader::default());
    let h = parse_cuda_header("%%cuda --name=m --arch=sm_90 -std=c++14").unwrap();
    assert_eq!(
        (h.name.as_deref(), h.arch.as_deref(), h.std.as_deref()),
        (Some("m"), Some("sm_90"), Some("c++14"))
    );
    let e = parse_cuda_header("%%cuda --name").unwrap_err();
    assert_eq!(e.message, "--name needs a value");
    let e = parse_cuda_header("%%cuda -O3").unwrap_err();
    assert!(
        e.message.starts_with("unknown %%cuda option '-O3'"),
        "{}",
        e.message
    );
    let e = parse_cuda_header("%%cuda -D1X=2").unwrap_err();
    assert_eq!(e.message, "bad macro name '1X' in -D1X=2");
}

#[test]
fn template_names_are_normalised() {
    assert_eq!(normalise_template("scale< float , 4 >"), "scale<float, 4>");
    assert_eq!(normalise_template("f<unsigned   int>"), "f<unsigned int>");
    assert_eq!(normalise_template("g<X<int>,float>"), "g<X<int>, float>");
}

struct TestEnv {
    scalars: BTreeMap<String, Value>,
    arrays: BTreeMap<String, Vec<usize>>,
    gpu: bool,
}

impl Env for TestEnv {
    fn scalar(&self, name: &str) -> Option<Value> {
        self.scalars.get(name).copied()
    }
    fn shape(&self, array: &str) -> Option<Vec<usize>> {
        self.arrays.get(array).cloned()
    }
    fn on_gpu(&self) -> bool {
        self.gpu
    }
}

#[test]
fn sizes_chosen_per_backend() {
    for gpu in [false, true] {
        let mut e = env();
        e.gpu = gpu;
        let line = "%set v = by_backend(1_000 + n, 50_000_000) * 2 + gpu";
        let Command::Set(Some((_, x))) = parse(line) else {
            panic!("{line}")
        };
        let want = if gpu { 100_000_001 } else { 4_000 };
        assert_eq!(eval::eval(&x, &e), Ok(Value::Int(want)), "gpu={gpu}");
    }
    // A user scalar named gpu wins over the built-in; both arguments are checked.
    assert!(ev("by_backend(1)").is_err());
    assert!(ev("by_backend(1, nothere)").is_err());
}

fn env() -> TestEnv {
    let mut scalars = BTreeMap::new();
    scalars.insert("n".to_string(), Value::Int(1000));
    scalars.insert("alpha".to_string(), Value::Float(0.5));
    let mut arrays = BTreeMap::new();
    arrays.insert("img".to_string(), vec![480, 640, 3]);
    arrays.insert("x".to_string(), vec![1000]);
    TestEnv {
        scalars,
        arrays,
        gpu: false,
    }
}

fn ev(s: &str) -> Result<Value, (String, String)> {
    let line = format!("%set v = {s}");
    let Command::Set(Some((_, e))) = parse(&line) else {
        panic!("{s}")
    };
    eval::eval(&e, &env()).map_err(|e| {
        let tok = e
            .span
            .map(|sp| line[sp.start..sp.end].to_string())
            .unwrap_or_default();
        (e.message, tok)
    })
}

#[test]
fn expressions_evaluate_with_precedence_and_checks() {
    let ok: &[(&str, Value)] = &[
        ("1 + 2 * 3", Value::Int(7)),
        ("(1 + 2) * 3", Value::Int(9)),
        ("-2 * -3", Value::Int(6)),
        ("7 / 2", Value::Int(3)),
        ("-7 / 2", Value::Int(-3)),
        ("7 % 3", Value::Int(1)),
        ("1_000 + 1e3", Value::Int(2000)),
        ("10 - 4 - 3", Value::Int(3)),
        ("ceil(n / 256)", Value::Int(4)),
        ("ceil(1024 / 256)", Value::Int(4)),
        ("ceil(-5 / 2)", Value::Int(-2)),
        ("floor(-5 / 2)", Value::Int(-3)),
        ("ceil(2.1)", Value::Int(3)),
        ("len(img)", Value::Int(480 * 640 * 3)),
        ("img.shape[1] * img.shape[-1]", Value::Int(640 * 3)),
        ("min(n, 7, 9)", Value::Int(7)),
        ("max(1, 2.5)", Value::Float(2.5)),
        ("alpha * 4", Value::Float(2.0)),
        ("7 / 2.0", Value::Float(3.5)),
        ("int(7.9)", Value::Int(7)),
        ("0x10 + 1", Value::Int(17)),
        ("2.0f", Value::Float(2.0)),
    ];
    for (s, v) in ok {
        assert_eq!(ev(s), Ok(*v), "{s}");
    }
    let bad: &[(&str, &str, &str)] = &[
        ("1 / 0", "division by zero", "0"),
        ("n % (n - 1000)", "division by zero", "(n - 1000)"),
        ("1.5 / 0", "division by zero", "0"),
        ("9223372036854775807 + 1", "integer overflow", "9223372036854775807 + 1"),
        ("-9223372036854775807 - 2", "integer overflow", "-9223372036854775807 - 2"),
        ("4611686018427387904 * 2", "integer overflow", "4611686018427387904 * 2"),
        ("m + 1", "unknown name 'm' (not a %set scalar or an array)", "m"),
        ("x + 1", "'x' is an array, not a number (use len(x) or x.shape[0])", "x"),
        ("len(y)", "unknown array 'y' in len()", "y"),
        ("len(1)", "len() takes an array name", "1"),
        ("img.shape[3]", "index 3 is out of range: 'img' has 3 dimensions", "3"),
        ("ceil(1, 2)", "ceil() takes 1 argument", "ceil(1, 2)"),
        ("lenn(x)", "unknown function 'lenn'; did you mean len()? (functions: len, ceil, floor, min, max, int, float, sqrt, by_backend)", "lenn(x)"),
    ];
    for (s, msg, tok) in bad {
        assert_eq!(ev(s), Err((msg.to_string(), tok.to_string())), "{s}");
    }
}

#[test]
fn integer_contexts_reject_floats_and_dims_are_checked() {
    let e = env();
    let Command::Array {
        ctor: Ctor::Zeros(s),
        ..
    } = parse("%array a = zeros((x.shape[0], 2 * n, 3), f32)")
    else {
        panic!()
    };
    assert_eq!(
        eval::eval_dims(&s, &e, "the shape", 3).unwrap(),
        vec![1000, 2000, 3]
    );
    let Command::Array {
        ctor: Ctor::Zeros(s),
        ..
    } = parse("%array a = zeros((4, 0.5), f32)")
    else {
        panic!()
    };
    let err = eval::eval_dims(&s, &e, "the shape", 3).unwrap_err();
    assert_eq!(
        err.message,
        "expected an integer for the shape, got 0.5 (use int(...) or ceil(...))"
    );
    let Command::Array {
        ctor: Ctor::Zeros(s),
        ..
    } = parse("%array a = zeros((4, n - 1000), f32)")
    else {
        panic!()
    };
    let err = eval::eval_dims(&s, &e, "the shape", 3).unwrap_err();
    assert_eq!(err.message, "the shape must be positive, got 0");
    let Command::Array {
        ctor: Ctor::Zeros(s),
        ..
    } = parse("%array a = zeros((1, 2, 3, 4), f32)")
    else {
        panic!()
    };
    let err = eval::eval_dims(&s, &e, "the shape", 3).unwrap_err();
    assert_eq!(
        err.message,
        "the shape has 4 dimensions; at most 3 are allowed"
    );
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}
fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn constructors_fill_exact_values() {
    let g = |f: Fill, d: Dtype, n: usize| host::generate(f, d, n).unwrap();
    assert_eq!(f32s(&g(Fill::Zeros, Dtype::F32, 5)), vec![0.0; 5]);
    assert_eq!(i32s(&g(Fill::Ones, Dtype::I32, 3)), vec![1; 3]);
    assert_eq!(g(Fill::Ones, Dtype::U8, 2), vec![1, 1]);
    assert_eq!(
        f64s(&g(Fill::Value(Value::Float(2.5)), Dtype::F64, 3)),
        vec![2.5; 3]
    );
    assert_eq!(
        g(Fill::Value(Value::Int(-3)), Dtype::I16, 2),
        [(-3i16).to_le_bytes(), (-3i16).to_le_bytes()].concat()
    );
    assert_eq!(
        host::generate(Fill::Value(Value::Int(300)), Dtype::U8, 2).unwrap_err(),
        (
            false,
            "the value 300 does not fit in u8 (0 to 255)".to_string()
        )
    );
    assert_eq!(
        host::generate(Fill::Value(Value::Float(2.5)), Dtype::I32, 2).unwrap_err(),
        (
            false,
            "the value 2.5 is not an integer, but the dtype is i32".to_string()
        )
    );
    // arange: numpy's lengths and values.
    let ar = |a: Value, b: Value, s: Value| super::exec::arange_len(a, b, s);
    assert_eq!(ar(Value::Int(0), Value::Int(10), Value::Int(3)), Ok(4));
    assert_eq!(ar(Value::Int(10), Value::Int(0), Value::Int(-3)), Ok(4));
    assert_eq!(
        ar(Value::Float(0.0), Value::Float(1.0), Value::Float(0.25)),
        Ok(4)
    );
    assert!(ar(Value::Int(5), Value::Int(0), Value::Int(1)).is_err());
    assert_eq!(
        ar(Value::Int(0), Value::Int(5), Value::Int(0)),
        Err("arange() step must not be zero".to_string())
    );
    let start = Value::Int(2);
    let step = Value::Int(3);
    assert_eq!(
        i32s(&g(Fill::Arange { start, step }, Dtype::I32, 4)),
        vec![2, 5, 8, 11]
    );
    assert_eq!(
        f32s(&g(
            Fill::Arange {
                start: Value::Float(0.5),
                step: Value::Float(0.25)
            },
            Dtype::F32,
            4
        )),
        vec![0.5, 0.75, 1.0, 1.25]
    );
    assert_eq!(
        host::generate(
            Fill::Arange {
                start: Value::Int(250),
                step: Value::Int(1)
            },
            Dtype::U8,
            10
        )
        .unwrap_err(),
        (false, "the last value 259 does not fit in u8".to_string())
    );
    // linspace: both ends exact.
    let l = f64s(&g(Fill::Linspace { a: 0.0, b: 1.0 }, Dtype::F64, 11));
    assert_eq!(l.len(), 11);
    for (i, v) in l.iter().enumerate() {
        assert!((v - i as f64 / 10.0).abs() < 1e-15, "{i} {v}");
    }
    assert_eq!(l[10], 1.0);
    assert_eq!(
        f32s(&g(Fill::Linspace { a: -1.0, b: 1.0 }, Dtype::F32, 5)),
        vec![-1.0, -0.5, 0.0, 0.5, 1.0]
    );
    assert_eq!(
        i32s(&g(Fill::Linspace { a: 0.0, b: 10.0 }, Dtype::I32, 4)),
        vec![0, 3, 6, 10]
    );
    assert_eq!(
        f64s(&g(Fill::Linspace { a: 3.0, b: 7.0 }, Dtype::F64, 1)),
        vec![3.0]
    );
}

#[test]
fn rand_is_in_range_and_reproducible() {
    let a = host::generate(Fill::Rand(42), Dtype::F32, 100_000).unwrap();
    let b = host::generate(Fill::Rand(42), Dtype::F32, 100_000).unwrap();
    let c = host::generate(Fill::Rand(43), Dtype::F32, 100_000).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let v = f32s(&a);
    assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    assert!((mean - 0.5).abs() < 0.01, "{mean}");
    // Each tenth of [0, 1) gets about a tenth of the values.
    let mut bins = [0usize; 10];
    for &x in &v {
        bins[(x * 10.0) as usize] += 1;
    }
    assert!(
        bins.iter().all(|&b| (9_000..11_000).contains(&b)),
        "{bins:?}"
    );
    let ints = host::generate(Fill::Rand(7), Dtype::I32, 10_000).unwrap();
    let iv = i32s(&ints);
    assert!(iv.iter().all(|&x| (0..100).contains(&x)));
    assert!(iv.contains(&0) && iv.contains(&99));
    let bytes = host::generate(Fill::Rand(7), Dtype::U8, 1000).unwrap();
    assert!(bytes.iter().all(|&x| x < 100));
    let d = f64s(&host::generate(Fill::Rand(1), Dtype::F64, 1000).unwrap());
    assert!(d.iter().all(|&x| (0.0..1.0).contains(&x)));
    assert_ne!(rng::fresh_seed(), rng::fresh_seed());
}

#[test]
fn randn_has_standard_normal_moments() {
    let v = f64s(&host::generate(Fill::Randn(5), Dtype::F64, 200_000).unwrap());
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    assert!(mean.abs() < 0.01, "{mean}");
    assert!((var.sqrt() - 1.0).abs() < 0.01, "{var}");
    let within1 = v.iter().filter(|x| x.abs() < 1.0).count() as f64 / n;
    assert!((within1 - 0.6827).abs() < 0.01, "{within1}");
    assert_eq!(
        host::generate(Fill::Randn(5), Dtype::I32, 4).unwrap_err(),
        (
            false,
            "randn() needs a float dtype (f32, f64, f16 or bf16), not i32".to_string()
        )
    );
    assert_eq!(
        host::generate(Fill::Randn(9), Dtype::F32, 10).unwrap(),
        host::generate(Fill::Randn(9), Dtype::F32, 10).unwrap()
    );
}

#[test]
fn huge_arrays_are_memory_errors_not_aborts() {
    let (mem, msg) = host::generate(Fill::Zeros, Dtype::F64, usize::MAX / 4).unwrap_err();
    assert!(mem, "{msg}");
}

#[test]
fn print_format_is_numpy_like() {
    let b: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    assert_eq!(
        array_text::format_values(Dtype::F32, &[2, 3], &b, None),
        "[[0.0 1.0 2.0]\n [3.0 4.0 5.0]]"
    );
    let b: Vec<u8> = (0..2000i32).flat_map(|i| i.to_le_bytes()).collect();
    assert_eq!(
        array_text::format_values(Dtype::I32, &[2000], &b, None),
        "[   0    1    2 ... 1997 1998 1999]"
    );
    assert_eq!(
        array_text::format_values(Dtype::I32, &[2000], &b, Some(4)),
        "[0 1 2 3 ...]"
    );
    assert_eq!(
        array_text::format_values(Dtype::I32, &[2, 1000], &b, None),
        "[[   0    1    2 ...  997  998  999]\n [1000 1001 1002 ... 1997 1998 1999]]"
    );
    let b: Vec<u8> = (0..8).flat_map(|i| (i as u8).to_le_bytes()).collect();
    assert_eq!(
        array_text::format_values(Dtype::U8, &[2, 2, 2], &b, None),
        "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"
    );
    let b: Vec<u8> = [1.0f64, f64::NAN, 3.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let s = stats::stats(Dtype::F64, &b);
    assert_eq!(
        stats::fmt_stats(Dtype::F64, &s),
        "min 1.0  max 3.0  mean 2.0  NaN 1"
    );
    assert_eq!(values::fmt_shape(&[5]), "(5,)");
    assert_eq!(values::human_bytes(4096), "4.0 KiB");
    assert_eq!(values::fmt_f64(1e-7), "1e-7");
    assert_eq!(values::fmt_f64(0.1), "0.1");
}

/// A folder of one test's own, removed when dropped.
struct TestDir(tempfile::TempDir);

impl TestDir {
    fn new() -> TestDir {
        TestDir(tempfile::tempdir().expect("a temporary folder"))
    }

    fn file(&self, name: &str) -> String {
        self.0.path().join(name).to_string_lossy().to_string()
    }
}

#[test]
fn npy_round_trips_every_dtype() {
    let dir = TestDir::new();
    for (k, d) in Dtype::ALL.into_iter().enumerate() {
        let shape = [vec![7], vec![3, 5], vec![2, 3, 4]][k % 3].clone();
        let n: usize = shape.iter().product();
        let data = host::generate(Fill::Rand(k as u64), d, n).unwrap();
        let a = HostArray {
            dtype: d,
            shape: shape.clone(),
            data,
        };
        let p = dir.file(&format!("rt_{}.npy", d.name()));
        files::save(&p, &a).unwrap();
        let b = files::load(&p, false, None).unwrap();
        assert_eq!(a, b, "{d}");
    }
    // --as converts.
    let a = HostArray {
        dtype: Dtype::I32,
        shape: vec![3],
        data: [1i32, -2, 300]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    };
    let p = dir.file("conv.npy");
    files::save(&p, &a).unwrap();
    let b = files::load(&p, false, Some(Dtype::F64)).unwrap();
    assert_eq!(f64s(&b.data), vec![1.0, -2.0, 300.0]);
    assert_eq!(files::load(&p, true, None).unwrap_err().0, "ArgumentError");
}

#[test]
fn npy_written_by_numpy_layout_is_read() {
    let dir = TestDir::new();
    // A hand-built v1.0 header, as numpy writes it, in Fortran order.
    let header = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    // Column-major storage of [[0, 1, 2], [3, 4, 5]].
    for v in [0.0f32, 3.0, 1.0, 4.0, 2.0, 5.0] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let p = dir.file("fortran.npy");
    std::fs::write(&p, bytes).unwrap();
    let a = files::load(&p, false, None).unwrap();
    assert_eq!(a.shape, vec![2, 3]);
    assert_eq!(f32s(&a.data), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn png_round_trips_and_converts() {
    let dir = TestDir::new();
    // RGB u8.
    let (h, w) = (5usize, 7usize);
    let rgb = host::generate(Fill::Rand(3), Dtype::U8, h * w * 3).unwrap();
    let rgb: Vec<u8> = rgb.iter().map(|v| v.wrapping_mul(2)).collect();
    let a = HostArray {
        dtype: Dtype::U8,
        shape: vec![h, w, 3],
        data: rgb.clone(),
    };
    let p = dir.file("rgb.png");
    files::save(&p, &a).unwrap();
    assert_eq!(files::load(&p, false, None).unwrap(), a);
    // --gray: luma of each pixel; --as f32 scales to [0, 1].
    let g = files::load(&p, true, None).unwrap();
    assert_eq!(g.shape, vec![h, w]);
    let gf = files::load(&p, true, Some(Dtype::F32)).unwrap();
    assert_eq!(gf.dtype, Dtype::F32);
    for (x, y) in g.data.iter().zip(f32s(&gf.data)) {
        assert!((*x as f32 / 255.0 - y).abs() < 1e-6);
    }
    for (i, px) in rgb.chunks_exact(3).enumerate() {
        let luma = 0.2126 * px[0] as f64 + 0.7152 * px[1] as f64 + 0.0722 * px[2] as f64;
        assert!(
            (g.data[i] as f64 - luma).abs() <= 1.0,
            "{i}: {} vs {luma}",
            g.data[i]
        );
    }
    // RGBA keeps alpha.
    let rgba = HostArray {
        dtype: Dtype::U8,
        shape: vec![2, 2, 4],
        data: (0..16).map(|i| i * 16).collect(),
    };
    let p4 = dir.file("rgba.png");
    files::save(&p4, &rgba).unwrap();
    assert_eq!(files::load(&p4, false, None).unwrap(), rgba);
    // Float 2-D → min-max gray.
    let f = HostArray {
        dtype: Dtype::F32,
        shape: vec![1, 3],
        data: [-1.0f32, 0.0, 1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    };
    let pf = dir.file("float.png");
    files::save(&pf, &f).unwrap();
    assert_eq!(
        files::load(&pf, true, None).unwrap().data,
        vec![0, 128, 255]
    );
    // Errors.
    let v = HostArray {
        dtype: Dtype::U8,
        shape: vec![10],
        data: vec![0; 10],
    };
    let (ename, msg) = files::save(&dir.file("bad.png"), &v).unwrap_err();
    assert_eq!(ename, "ArgumentError");
    assert!(msg.contains("images are (H, W) or (H, W, 3|4)"), "{msg}");
    assert_eq!(
        files::save(&dir.file("x.bmp"), &v).unwrap_err().0,
        "IOError"
    );
    let (ename, msg) = files::load(&dir.file("missing.png"), false, None).unwrap_err();
    assert_eq!(ename, "IOError");
    assert!(msg.starts_with("no such file"), "{msg}");
    std::fs::write(dir.file("garbage.png"), b"not a png").unwrap();
    assert_eq!(
        files::load(&dir.file("garbage.png"), false, None)
            .unwrap_err()
            .0,
        "IOError"
    );
    std::fs::write(dir.file("garbage.npy"), b"\x93NUMPY garbage").unwrap();
    assert_eq!(
        files::load(&dir.file("garbage.npy"), false, None)
            .unwrap_err()
            .0,
        "IOError"
    );
}

#[test]
fn unknown_magic_suggestions() {
    let s = |w: &str| suggest::nearest(w, registry::names());
    assert_eq!(s("%lauch"), Some("%launch"));
    assert_eq!(s("%arary"), Some("%array"));
    // Never the word itself: "did you mean %array?" for `%array` leads nowhere.
    assert_eq!(s("%array"), Some("%arrays"));
    assert_eq!(s("%arrray"), Some("%array"));
    assert_eq!(s("%prnt"), Some("%print"));
    assert_eq!(s("%cuda"), Some("%%cuda"));
    assert_eq!(s("%lsmagics"), Some("%lsmagic"));
    assert_eq!(s("%qqqqqq"), None);
    assert!(registry::help(Some("launch"))
        .unwrap()
        .starts_with("%launch [--check]"));
    assert_eq!(
        registry::help(Some("%lanch")).unwrap_err(),
        "unknown magic %lanch; did you mean %launch?"
    );
    let all = registry::help(None).unwrap();
    for n in registry::names() {
        assert!(all.contains(n), "{n}");
    }
    let ls = registry::lsmagic();
    assert!(ls.contains("%launch") && ls.contains("%%cuda"));
    assert!(ls.contains("%show") && ls.contains("%time"));
}

/// Runs `f` on a thread with 1 MiB of stack (the Jupyter kernel's cell threads have
/// `protocol::INTERPRETER_STACK_BYTES`, 8 MiB), so that a parser or evaluator that recursed on
/// user text without bound would overflow here and fail the test (by aborting it).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(1024 << 10)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic")
}

#[test]
fn deep_nesting_is_a_syntax_error_that_names_the_limit() {
    on_small_stack(|| {
        let deep = |open: &str, close: &str, n: usize| {
            format!("%set z = {}1{}", open.repeat(n), close.repeat(n))
        };
        for line in [
            deep("(", ")", 5000),
            deep("(", "", 5000),
            deep("ceil(", ")", 5000),
            deep("min(1, ", ")", 5000),
            format!("%array a = zeros({}4, f32)", "(".repeat(5000)),
            format!("%launch k[{}1, 1](x)", "(".repeat(5000)),
            format!("%set z = {}", "x.shape[".repeat(5000)),
            format!("%time -n {}1 k[1, 1](x)", "(".repeat(5000)),
        ] {
            let (msg, _) = perr(&line);
            assert!(
                msg.contains(&format!("nested too deep: more than {MAX_NESTING} levels")),
                "{}: {msg}",
                &line[..40]
            );
        }
        // The limit itself still parses and evaluates.
        let (open, close) = ("(".repeat(MAX_NESTING - 1), ")".repeat(MAX_NESTING - 1));
        assert_eq!(ev(&format!("{open}41 + 1{close}")), Ok(Value::Int(42)));
        let calls = format!(
            "{}7{}",
            "ceil(".repeat(MAX_NESTING - 1),
            ")".repeat(MAX_NESTING - 1)
        );
        assert_eq!(ev(&calls), Ok(Value::Int(7)));
    });
}

#[test]
fn long_flat_expressions_evaluate_without_deep_recursion() {
    on_small_stack(|| {
        // A 1 MB sum gives its value.
        let terms = 500_000;
        let sum = vec!["1"; terms].join("+");
        assert_eq!(ev(&sum), Ok(Value::Int(terms as i64)));
        let mixed = vec!["2*3-1"; 100_000].join("+");
        assert_eq!(ev(&mixed), Ok(Value::Int(500_000)));
        // Runs of signs are counted, not nested.
        let signs = format!("{}5", "- ".repeat(100_001));
        assert_eq!(ev(&signs), Ok(Value::Int(-5)));
        assert_eq!(ev(&format!("{}5", "- +".repeat(10_000))), Ok(Value::Int(5)));
        // ceil of a run that ends in a division still divides exactly.
        assert_eq!(ev("ceil(n * 3 / 256)"), Ok(Value::Int(12)));
        assert_eq!(ev("ceil(n / 7 * 2)"), Ok(Value::Int(284)));
        assert_eq!(ev("floor(1 + 2 - 10 / 4)"), Ok(Value::Int(1)));
        // A line over the limit is refused before it is read, with the limit named.
        let huge = format!("%set z = {}", vec!["1"; MAX_LINE_BYTES / 2 + 1].join("+"));
        let e = parse_line(&huge).expect_err("too long");
        assert!(e.message.starts_with("line too long"), "{}", e.message);
        assert!(
            e.message.contains(&MAX_LINE_BYTES.to_string()),
            "{}",
            e.message
        );
    });
}

#[test]
fn errors_in_long_lines_quote_a_window_around_the_token() {
    let line = format!(
        "%set z = {} + ) + {}",
        vec!["1"; 5000].join(" + "),
        "2 + ".repeat(500)
    );
    let e = check_line(&line, 3).expect_err("')' where a number belongs");
    let lines: Vec<&str> = e.message.lines().collect();
    assert_eq!(lines.len(), 3, "{}", e.message);
    assert!(
        lines[0].starts_with("line 3: expected a number"),
        "{}",
        lines[0]
    );
    assert!(lines[1].chars().count() < 140, "{}", lines[1]);
    assert!(
        lines[1].starts_with("    …") && lines[1].ends_with('…'),
        "{}",
        lines[1]
    );
    let caret = lines[2].find('^').expect("a caret");
    assert_eq!(
        lines[1].chars().nth(caret),
        Some(')'),
        "{}\n{}",
        lines[1],
        lines[2]
    );
    // A short line is quoted whole.
    let e = check_line("%set z = 1 + )", 1).expect_err("')'");
    assert!(
        e.message
            .ends_with("\n    %set z = 1 + )\n                 ^"),
        "{}",
        e.message
    );
}

/// A `.npy` file of version 1 with `header` (padded as numpy pads it) and `data`.
fn npy_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn npy_headers_are_checked_before_parsing() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).expect("write");
            p.to_string_lossy().into_owned()
        };
        let ok = write(
            "ok.npy",
            &npy_bytes(
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
                &[7, 0, 0, 0, 9, 0, 0, 0],
            ),
        );
        let a = files::load(&ok, false, None).expect("a valid file loads");
        assert_eq!((a.dtype, a.shape.clone()), (Dtype::I32, vec![2]));
        assert_eq!(a.data, [7, 0, 0, 0, 9, 0, 0, 0]);
        // A shape nested thousands deep is refused without parsing it (it would overflow the
        // parser's stack).
        let nested = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {}2{}, }}",
            "(".repeat(5000),
            ")".repeat(5000)
        );
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend_from_slice(&(nested.len() as u32).to_le_bytes());
        v2.extend_from_slice(nested.as_bytes());
        let p = write("deep.npy", &v2);
        let (ename, msg) = files::load(&p, false, None).expect_err("too long");
        assert_eq!(ename, "IOError");
        assert!(msg.contains("over numpy's limit of 10000"), "{msg}");
        assert!(msg.contains("deep.npy"), "{msg}");
        let short_nested = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {}2{}, }}",
            "(".repeat(100),
            ")".repeat(100)
        );
        let p = write("nested.npy", &npy_bytes(&short_nested, &[0; 4]));
        let (ename, msg) = files::load(&p, false, None).expect_err("nested");
        assert_eq!(ename, "IOError");
        assert!(
            msg.contains("nested.npy") && msg.contains("nests brackets more than 4 deep"),
            "{msg}"
        );
        // Brackets inside strings do not count.
        let quoted = "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'x': '(((((((', }";
        let p = write("quoted.npy", &npy_bytes(quoted, &[1, 0, 0, 0]));
        assert!(files::load(&p, false, None).is_ok());
        // A shape larger than the data is refused before anything is allocated for it.
        let big = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1024), }";
        let p = write("big.npy", &npy_bytes(big, &[0; 16]));
        let (ename, msg) = files::load(&p, false, None).expect_err("big");
        assert_eq!(ename, "IOError");
        assert!(msg.contains("needs") && msg.contains("holds 16"), "{msg}");
        let p = write("bad.npy", b"\x93NUMPY\x09\x00\x00\x00");
        assert!(files::load(&p, false, None)
            .expect_err("v9")
            .1
            .contains("unknown format version 9"));
        let p = write("cut.npy", b"\x93NUMPY\x01\x00\xff\x00{'descr'");
        assert!(files::load(&p, false, None)
            .expect_err("cut")
            .1
            .contains("cut off"));
    });
}

#[test]
fn only_regular_files_are_opened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pipe.npy");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let path = fifo.to_string_lossy().into_owned();
    let t = std::time::Instant::now();
    let (ename, msg) = files::load(&path, false, None).expect_err("a FIFO");
    assert_eq!(ename, "IOError");
    assert!(msg.contains("is a FIFO (named pipe)"), "{msg}");
    let a = HostArray {
        dtype: Dtype::U8,
        shape: vec![2],
        data: vec![1, 2],
    };
    let (_, msg) = files::save(&path, &a).expect_err("a FIFO");
    assert!(msg.contains("is a FIFO"), "{msg}");
    let png = dir.path().join("dir.png");
    std::fs::create_dir(&png).expect("mkdir");
    let (_, msg) = files::load(&png.to_string_lossy(), false, None).expect_err("a directory");
    assert!(msg.contains("is a directory"), "{msg}");
    let dev = dir.path().join("null.npy");
    std::os::unix::fs::symlink("/dev/null", &dev).expect("symlink");
    let (_, msg) = files::load(&dev.to_string_lossy(), false, None).expect_err("a device");
    assert!(msg.contains("is a device"), "{msg}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(2),
        "nothing blocked"
    );
}

#[test]
fn a_blocked_file_operation_returns_at_the_interrupt() {
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let raise = cancel.clone();
    let (_keep, never) = std::sync::mpsc::channel::<()>();
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        raise.store(true, std::sync::atomic::Ordering::SeqCst);
        std::time::Instant::now()
    });
    let r: files::FileResult<()> = files::interruptible(&cancel, move |_| {
        // Blocks as a read from a hung file system would.
        let _ = never.recv();
        Ok(())
    });
    let raised = raiser.join().expect("raiser");
    assert_eq!(r.expect_err("interrupted").0, "Interrupted");
    // A liveness bound (the operation never returns by itself), generous for a loaded machine.
    assert!(
        raised.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        raised.elapsed()
    );
    // Without an interrupt the operation's own result comes back.
    let quiet = std::sync::atomic::AtomicBool::new(false);
    assert_eq!(files::interruptible(&quiet, |_| Ok(7)), Ok(7));
}

#[test]
fn an_image_that_declares_huge_dimensions_is_refused_before_decoding() {
    // Found by fuzzing: 347 bytes of JPEG declaring 21573 × 20556 pixels took 20 s and 1.7 GB.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.jpg");
    std::fs::write(
        &path,
        include_bytes!("../../fuzz/corpus/image/declares-21573x20556.jpg"),
    )
    .expect("write");
    let t0 = std::time::Instant::now();
    let (ename, msg) = files::load(&path.to_string_lossy(), false, None).expect_err("refused");
    assert_eq!(ename, "IOError");
    assert!(msg.contains("the image is too large to load"), "{msg}");
    // Liveness, 10x the usual bound: decoding it took 20 s.
    assert!(t0.elapsed().as_secs_f64() < 10.0, "{:?}", t0.elapsed());
}
