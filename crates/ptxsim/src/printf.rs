//! Device `printf`: C format strings over CUDA's packed argument buffer.
//!
//! `vprintf(format, args)` receives a format string and a buffer in which each argument is
//! stored at an offset aligned to its size (ints 4 bytes, `long`/pointers/doubles 8: floats are
//! promoted to double). `format` walks the format string, asks its caller for each argument's
//! bytes, and renders them like C's printf. It reads no memory itself.

/// Largest field width or precision honoured.
const MAX_FIELD: usize = 4096;

/// What a conversion needs from the argument buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// An integer or pointer of this many bytes.
    Int(usize),
    /// A double.
    Double,
    /// A string: the caller reads the pointer (8 bytes) and then the bytes it points to.
    Str,
}

/// Value supplied for an `Arg`.
pub enum Val {
    Int(u64),
    Double(f64),
    Str(Option<Vec<u8>>),
}

#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    zero: bool,
    alt: bool,
    width: usize,
    prec: Option<usize>,
}

/// Pad to the field width; with `0` and `zero_at` (the length of sign and prefix), zeros go
/// after the sign and prefix.
fn pad(s: String, sp: &Spec, zero_at: Option<usize>) -> String {
    let len = s.chars().count();
    if len >= sp.width {
        return s;
    }
    let fill = sp.width - len;
    if sp.left {
        return s + &" ".repeat(fill);
    }
    match zero_at {
        Some(k) if sp.zero && k <= s.len() => format!("{}{}{}", &s[..k], "0".repeat(fill), &s[k..]),
        _ => " ".repeat(fill) + &s,
    }
}

fn sign_prefix(neg: bool, sp: &Spec) -> &'static str {
    if neg {
        "-"
    } else if sp.plus {
        "+"
    } else if sp.space {
        " "
    } else {
        ""
    }
}

/// C-style exponent: at least two digits, with sign.
fn c_exp(rust: &str, upper: bool) -> String {
    let (mant, exp) = rust.split_once('e').unwrap_or((rust, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    format!(
        "{mant}{}{}{:02}",
        if upper { 'E' } else { 'e' },
        if e < 0 { '-' } else { '+' },
        e.abs()
    )
}

fn strip_zeros(s: &str) -> String {
    let (num, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let num = if num.contains('.') {
        num.trim_end_matches('0').trim_end_matches('.')
    } else {
        num
    };
    format!("{num}{exp}")
}

fn fmt_float(v: f64, conv: u8, sp: &Spec) -> String {
    let upper = conv.is_ascii_uppercase();
    let neg = v.is_sign_negative() && !v.is_nan();
    let a = v.abs();
    let body = if v.is_nan() {
        "nan".to_string()
    } else if v.is_infinite() {
        "inf".to_string()
    } else {
        let p = sp.prec.unwrap_or(6);
        match conv.to_ascii_lowercase() {
            b'f' => {
                let s = format!("{a:.p$}");
                if sp.alt && p == 0 {
                    s + "."
                } else {
                    s
                }
            }
            b'e' => c_exp(&format!("{a:.p$e}"), upper),
            b'g' => {
                let p = if p == 0 { 1 } else { p };
                let e_form = format!("{a:.*e}", p - 1);
                let x: i32 = e_form
                    .split_once('e')
                    .and_then(|(_, e)| e.parse().ok())
                    .unwrap_or(0);
                let s = if (x as i64) < p as i64 && x >= -4 {
                    format!("{a:.*}", (p as i64 - 1 - x as i64).max(0) as usize)
                } else {
                    c_exp(&e_form, upper)
                };
                if sp.alt {
                    s
                } else {
                    strip_zeros(&s)
                }
            }
            _ => hex_float(a, sp.prec, upper),
        }
    };
    let body = if upper { body.to_uppercase() } else { body };
    let sign = sign_prefix(neg, sp);
    pad(
        format!("{sign}{body}"),
        sp,
        v.is_finite().then_some(sign.len()),
    )
}

fn hex_float(a: f64, prec: Option<usize>, upper: bool) -> String {
    if a == 0.0 {
        return if upper {
            "0X0P+0".into()
        } else {
            "0x0p+0".into()
        };
    }
    let bits = a.to_bits();
    let mut exp = ((bits >> 52) & 0x7FF) as i64;
    let mut man = bits & ((1 << 52) - 1);
    let lead = if exp == 0 {
        exp = -1022;
        0
    } else {
        exp -= 1023;
        1
    };
    let mut digits = format!("{man:013x}");
    if let Some(p) = prec {
        if p < 13 {
            let shift = 4 * (13 - p) as u32;
            let half = 1u64 << (shift - 1);
            let rest = man & ((1 << shift) - 1);
            man >>= shift;
            if rest > half || (rest == half && man & 1 == 1) {
                man += 1;
            }
            digits = if p == 0 {
                String::new()
            } else {
                format!("{man:0p$x}")
            };
        }
    } else {
        digits = digits.trim_end_matches('0').to_string();
    }
    let s = if digits.is_empty() {
        format!("0x{lead}p{exp:+}")
    } else {
        format!("0x{lead}.{digits}p{exp:+}")
    };
    if upper {
        s.to_uppercase()
    } else {
        s
    }
}

fn fmt_int(raw: u64, size: usize, len: &str, conv: u8, sp: &Spec) -> String {
    let bits = match len {
        "hh" => 8,
        "h" => 16,
        _ => size * 8,
    } as u32;
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let u = raw & mask;
    let signed = matches!(conv, b'd' | b'i');
    let (neg, mag) = if signed {
        let s = 64 - bits;
        let v = ((u << s) as i64) >> s;
        (v < 0, v.unsigned_abs())
    } else {
        (false, u)
    };
    let mut digits = match conv {
        b'o' => format!("{mag:o}"),
        b'x' => format!("{mag:x}"),
        b'X' => format!("{mag:X}"),
        _ => mag.to_string(),
    };
    if let Some(p) = sp.prec {
        if p == 0 && mag == 0 {
            digits.clear();
        } else if digits.len() < p {
            digits = "0".repeat(p - digits.len()) + &digits;
        }
    }
    let prefix = match conv {
        b'x' if sp.alt && mag != 0 => "0x",
        b'X' if sp.alt && mag != 0 => "0X",
        b'o' if sp.alt && !digits.starts_with('0') => "0",
        _ => "",
    };
    let sign = if signed { sign_prefix(neg, sp) } else { "" };
    let mut spec = *sp;
    if sp.prec.is_some() {
        spec.zero = false;
    }
    pad(
        format!("{sign}{prefix}{digits}"),
        &spec,
        Some(sign.len() + prefix.len()),
    )
}

/// Render `fmt` with arguments supplied by `next`. Returns the text and the number of
/// arguments consumed.
pub fn format(fmt: &[u8], next: &mut dyn FnMut(Arg) -> Val) -> (String, usize) {
    let mut out = String::new();
    let mut nargs = 0usize;
    let mut i = 0;
    let mut lit: Vec<u8> = Vec::new();
    while i < fmt.len() {
        let c = fmt[i];
        if c != b'%' {
            lit.push(c);
            i += 1;
            continue;
        }
        if fmt.get(i + 1) == Some(&b'%') {
            lit.push(b'%');
            i += 2;
            continue;
        }
        out.push_str(&String::from_utf8_lossy(&lit));
        lit.clear();
        let start = i;
        i += 1;
        let mut sp = Spec::default();
        while let Some(&f) = fmt.get(i) {
            match f {
                b'-' => sp.left = true,
                b'+' => sp.plus = true,
                b' ' => sp.space = true,
                b'0' => sp.zero = true,
                b'#' => sp.alt = true,
                _ => break,
            }
            i += 1;
        }
        if fmt.get(i) == Some(&b'*') {
            i += 1;
            nargs += 1;
            if let Val::Int(v) = next(Arg::Int(4)) {
                let w = v as u32 as i32;
                if w < 0 {
                    sp.left = true;
                }
                sp.width = w.unsigned_abs() as usize;
            }
        } else {
            while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                sp.width = sp
                    .width
                    .saturating_mul(10)
                    .saturating_add((d - b'0') as usize);
                i += 1;
            }
        }
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            if fmt.get(i) == Some(&b'*') {
                i += 1;
                nargs += 1;
                if let Val::Int(v) = next(Arg::Int(4)) {
                    let p = v as u32 as i32;
                    sp.prec = (p >= 0).then_some(p as usize);
                }
            } else {
                let mut p = 0usize;
                while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                    p = p.saturating_mul(10).saturating_add((d - b'0') as usize);
                    i += 1;
                }
                sp.prec = Some(p);
            }
        }
        // Keep absurd widths and precisions from allocating without bound.
        sp.width = sp.width.min(MAX_FIELD);
        sp.prec = sp.prec.map(|p| p.min(MAX_FIELD));
        let len_start = i;
        while fmt
            .get(i)
            .is_some_and(|c| matches!(c, b'h' | b'l' | b'L' | b'z' | b'j' | b't' | b'q'))
        {
            i += 1;
        }
        let len = std::str::from_utf8(&fmt[len_start..i]).unwrap_or("");
        let Some(&conv) = fmt.get(i) else {
            out.push_str(&String::from_utf8_lossy(&fmt[start..]));
            break;
        };
        i += 1;
        let wide = matches!(len, "l" | "ll" | "z" | "j" | "t" | "q" | "L");
        match conv {
            b'd' | b'i' | b'u' | b'o' | b'x' | b'X' | b'c' => {
                let size = if wide { 8 } else { 4 };
                nargs += 1;
                let v = match next(Arg::Int(size)) {
                    Val::Int(v) => v,
                    _ => 0,
                };
                if conv == b'c' {
                    let ch = (v as u8 as char).to_string();
                    out.push_str(&pad(ch, &sp, None));
                } else {
                    out.push_str(&fmt_int(v, size, len, conv, &sp));
                }
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                nargs += 1;
                let v = match next(Arg::Double) {
                    Val::Double(d) => d,
                    _ => 0.0,
                };
                out.push_str(&fmt_float(v, conv, &sp));
            }
            b's' => {
                nargs += 1;
                let s = match next(Arg::Str) {
                    Val::Str(Some(b)) => {
                        let b = match sp.prec {
                            Some(p) if p < b.len() => &b[..p],
                            _ => &b[..],
                        };
                        String::from_utf8_lossy(b).into_owned()
                    }
                    _ => "(null)".to_string(),
                };
                out.push_str(&pad(s, &sp, None));
            }
            b'p' => {
                nargs += 1;
                let v = match next(Arg::Int(8)) {
                    Val::Int(v) => v,
                    _ => 0,
                };
                out.push_str(&pad(format!("0x{v:x}"), &sp, None));
            }
            b'n' => {
                nargs += 1;
                let _ = next(Arg::Int(8));
            }
            _ => out.push_str(&String::from_utf8_lossy(&fmt[start..i])),
        }
    }
    out.push_str(&String::from_utf8_lossy(&lit));
    (out, nargs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fmt: &str, args: Vec<Val>) -> String {
        let mut it = args.into_iter();
        format(fmt.as_bytes(), &mut |_| it.next().unwrap_or(Val::Int(0))).0
    }

    #[test]
    fn c_formatting() {
        assert_eq!(
            run(
                "%d|%5d|%-5d|%05d",
                vec![
                    Val::Int(-3i64 as u64),
                    Val::Int(42),
                    Val::Int(42),
                    Val::Int(-42i64 as u64)
                ]
            ),
            "-3|   42|42   |-0042"
        );
        assert_eq!(
            run(
                "%u %x %X %#x %o",
                vec![
                    Val::Int(0xFFFF_FFFF),
                    Val::Int(255),
                    Val::Int(255),
                    Val::Int(255),
                    Val::Int(8)
                ]
            ),
            "4294967295 ff FF 0xff 10"
        );
        assert_eq!(
            run("%ld %lld", vec![Val::Int(-5i64 as u64), Val::Int(1 << 40)]),
            "-5 1099511627776"
        );
        assert_eq!(
            run(
                "%f %.2f %10.3f %e",
                vec![
                    Val::Double(1.5),
                    Val::Double(3.14659),
                    Val::Double(-2.0),
                    Val::Double(12345.678)
                ]
            ),
            "1.500000 3.15     -2.000 1.234568e+04"
        );
        assert_eq!(
            run(
                "%g %g %g %g",
                vec![
                    Val::Double(0.0001),
                    Val::Double(100000.0),
                    Val::Double(1e6),
                    Val::Double(1.5e-5)
                ]
            ),
            "0.0001 100000 1e+06 1.5e-05"
        );
        assert_eq!(
            run(
                "%s=%c %.3s %%",
                vec![
                    Val::Str(Some(b"abc".to_vec())),
                    Val::Int(b'z' as u64),
                    Val::Str(Some(b"hello".to_vec()))
                ]
            ),
            "abc=z hel %"
        );
        assert_eq!(
            run(
                "%f %f",
                vec![Val::Double(f64::INFINITY), Val::Double(f64::NAN)]
            ),
            "inf nan"
        );
        assert_eq!(
            run(
                "%+d % d %.0f",
                vec![Val::Int(5), Val::Int(5), Val::Double(2.5)]
            ),
            "+5  5 2"
        );
        assert_eq!(run("%a", vec![Val::Double(1.0)]), "0x1p+0");
        assert_eq!(
            run("%p %s", vec![Val::Int(0x1000), Val::Str(None)]),
            "0x1000 (null)"
        );
        assert_eq!(
            run(
                "%*d|%.*f",
                vec![Val::Int(4), Val::Int(7), Val::Int(1), Val::Double(0.25)]
            ),
            "   7|0.2"
        );
    }
}
