//! Fuzz targets of the `%load` file loaders (`magics::files::load`, what `%load NAME = PATH`
//! runs): `npy` (`.npy` files: the header check `files::npy_header`, then npyz and the
//! conversion to the kernel's dtypes, with and without `--as DT`) and `image` (PNG/JPEG, and
//! whatever else the `image` crate guesses from the bytes, with and without `--gray`/`--as`).
//! The loaders take a path, so each input is written to a file of the test's temporary folder
//! first. None of it may panic, overflow a 2 MiB stack or hang.
//!
//! Corpora: `fuzz/corpus/npy/` (numpy's files of every dtype, C and Fortran order, format
//! versions 1 to 3, and some %load refuses) and `fuzz/corpus/image/` (tiny PNGs of each colour
//! type, JPEGs, a GIF). `cargo test --release --test fuzz_loaders` runs both;
//! `benches/fuzz.sh 60 npy image` runs the ignored `npy_long` and `image_long`.

use fuzzing::Target;
use nbcuda::gpu::Dtype;
use nbcuda::magics::files;
use std::path::PathBuf;

/// This process's folder for a target's inputs (one per target: the two may run at once).
fn scratch(target: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nbcuda-fuzz-{target}-{}", std::process::id()))
}

/// Removes a target's scratch folder when its test ends, passed or failed.
struct Cleanup(&'static str);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(scratch(self.0));
    }
}

fn write_input(target: &str, file: &str, input: &[u8]) -> String {
    let dir = scratch(target);
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(file);
    std::fs::write(&path, input).expect("cannot write the fuzz input");
    path.to_string_lossy().into_owned()
}

/// A `--as` dtype chosen by the input's length (no `--as` one time in three).
fn as_dtype(input: &[u8]) -> Option<Dtype> {
    match input.len() % 3 {
        0 => None,
        _ => Some(Dtype::ALL[input.len() / 3 % Dtype::ALL.len()]),
    }
}

fn run_npy(input: &[u8]) {
    let _ = files::npy_header("fuzz.npy", &mut std::io::Cursor::new(input));
    let path = write_input("npy", "input.npy", input);
    if let Ok(a) = files::load(&path, false, None) {
        assert_eq!(
            a.data.len(),
            a.shape.iter().product::<usize>() * a.dtype.size()
        );
    }
    if let Some(d) = as_dtype(input) {
        let _ = files::load(&path, false, Some(d));
    }
}

fn run_image(input: &[u8]) {
    let ext = if input.len().is_multiple_of(2) {
        "png"
    } else {
        "jpg"
    };
    let path = write_input("image", &format!("input.{ext}"), input);
    let gray = input.len() % 4 < 2;
    if let Ok(a) = files::load(&path, gray, as_dtype(input)) {
        assert_eq!(
            a.data.len(),
            a.shape.iter().product::<usize>() * a.dtype.size()
        );
    }
}

fn npy_target() -> Target {
    Target::new("npy", run_npy)
        .corpus(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/npy"))
        .dict(&[
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            "'descr'",
            "'shape'",
            "'fortran_order'",
            "True",
            "False",
            "<f4",
            "<f8",
            "|u1",
            ">i8",
            "|b1",
            "<c16",
            "<U5",
            "|V8",
            "O",
            "<M8[s]",
            "[('a', '<f4')]",
            "(",
            ")",
            ",",
            "()",
            "(0,)",
            "(18446744073709551615,)",
            "(4294967296, 4294967296)",
            "{",
            "}",
            "'",
            "\"",
            ":",
            " ",
            "\n",
            "L",
            "-1",
        ])
        .dict_bytes(&[
            b"\x93NUMPY\x01\x00",
            b"\x93NUMPY\x02\x00",
            b"\x93NUMPY\x03\x00",
        ])
        .nests(&[("(", ")"), ("[", "]"), ("{", "}"), ("[(", ")]")])
        .chains(&[("1", ", "), ("(", ""), ("'a'", ": ")])
        .max_len(1 << 16)
        .test_inputs(3000)
}

fn image_target() -> Target {
    Target::new("image", run_image)
        .corpus(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/image"))
        .dict_bytes(&[
            b"\x89PNG\r\n\x1a\n",
            b"IHDR",
            b"IDAT",
            b"PLTE",
            b"tRNS",
            b"IEND",
            b"acTL",
            b"fcTL",
            b"\xff\xd8",
            b"\xff\xd9",
            b"\xff\xc0",
            b"\xff\xc2",
            b"\xff\xc4",
            b"\xff\xda",
            b"\xff\xdb",
            b"\xff\xdd",
            b"GIF89a",
            b"GIF87a",
            b"\x00\x00\xff\xff",
            b"\x7f\xff\xff\xff",
        ])
        .nests(&[])
        .chains(&[("\x00", ""), ("\x7f", "")])
        .max_len(1 << 16)
        .test_inputs(3000)
}

#[test]
fn npy() {
    let _c = Cleanup("npy");
    npy_target().test();
}

#[test]
fn image() {
    let _c = Cleanup("image");
    image_target().test();
}

/// `benches/fuzz.sh`: `FUZZ_SECONDS` of generated inputs.
#[test]
#[ignore]
fn npy_long() {
    let _c = Cleanup("npy");
    npy_target().long_run();
}

/// `benches/fuzz.sh`: `FUZZ_SECONDS` of generated inputs.
#[test]
#[ignore]
fn image_long() {
    let _c = Cleanup("image");
    image_target().long_run();
}
