//! The header line of a `%%cuda` cell → [`CudaHeader`], the compile options (`--name`, `-D`,
//! `--std`, `--fast-math`, `-G`, `--arch`) that `compile` passes on to NVRTC.
//!
//! Pure parsing: this module must not compile anything nor import the magics' execution
//! modules.

use super::super::lex::{Lexer, ParseError, Span};
use super::line::magic_word;

/// Options of a `%%cuda` header line: the compile options themselves.
pub type CudaHeader = crate::types::CudaOptions;

/// Parses `%%cuda [--name M] [-DNAME=V] [--std=c++17] [--fast-math] [-G] [--arch sm_XX]`.
pub fn parse_cuda_header(header: &str) -> Result<CudaHeader, ParseError> {
    let mut lx = Lexer::new(header, 0);
    lx.skip_ws();
    let start = lx.pos;
    let word = magic_word(header, start + 2);
    if !header[start..].starts_with("%%") || word != "cuda" {
        return Err(ParseError::at(
            Span::new(start, start + 2 + word.len()),
            format!("expected %%cuda, found '%%{word}'"),
        ));
    }
    lx.pos = start + 2 + word.len();
    let mut h = CudaHeader::default();
    let mut words: Vec<(String, Span)> = Vec::new();
    while let Some(w) = lx.raw_word() {
        words.push(w);
    }
    let mut i = 0;
    let value = |i: &mut usize, flag: &str, inline: Option<&str>, span: Span| {
        if let Some(v) = inline {
            return Ok(v.to_string());
        }
        *i += 1;
        words
            .get(*i)
            .map(|(w, _)| w.clone())
            .ok_or_else(|| ParseError::at(span, format!("{flag} needs a value")))
    };
    while i < words.len() {
        let (w, span) = (&words[i].0, words[i].1);
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (w.as_str(), None),
        };
        match flag {
            "--name" => h.name = Some(value(&mut i, flag, inline, span)?),
            "--std" => h.std = Some(value(&mut i, flag, inline, span)?),
            "-std" => h.std = Some(value(&mut i, flag, inline, span)?),
            "--arch" | "-arch" => h.arch = Some(value(&mut i, flag, inline, span)?),
            "--fast-math" | "--use_fast_math" | "-use_fast_math" => h.fast_math = true,
            "-G" | "--device-debug" => h.device_debug = true,
            f if f.starts_with("-D") => {
                let def = if f == "-D" {
                    value(&mut i, "-D", None, span)?
                } else {
                    f[2..].to_string()
                };
                let (k, v) = match def.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (def.clone(), None),
                };
                let valid = k.chars().next().is_some_and(super::super::lex::is_ident_start)
                    && k.chars().all(super::super::lex::is_ident_char);
                if !valid {
                    return Err(ParseError::at(
                        span,
                        format!("bad macro name '{k}' in {w}"),
                    ));
                }
                h.defines.push((k, v));
            }
            f if f.starts_with("-std=") => h.std = Some(f[5..].to_string()),
            _ => {
                return Err(ParseError::at(
                    span,
                    format!(
                        "unknown %%cuda option '{w}' (options: --name M, -DNAME=V, --std=c++17, --fast-math, -G, --arch sm_XX)"
                    ),
                ))
            }
        }
        i += 1;
    }
    Ok(h)
}
