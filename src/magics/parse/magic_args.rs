//! The parsers of the line magics' arguments, one `Parser` method per magic (`%help`, `%set`,
//! `%load`/`%save`, `%copy`, `%upload`/`%download`, `%info`, `%gpu`, `%graph`, …), as the
//! registry names them. The longer grammars are their own modules (`array_args`, `show_args`,
//! `time_args`, `profile_args`, and `launch_syntax` for `%launch`); the methods here hand over to
//! them.
//!
//! Pure parsing: this module must not import `eval` or the magics' execution modules.

use super::super::lex::{ParseError, Span, Tok};
use super::ast::{ExprKind, Name};
use super::command::{Command, GraphCmd};
use super::cursor::{unknown_option, Parser};
use super::launch_syntax::parse_launch;
use super::{profile_args, show_args, time_args};
use crate::suggest::{did_you_mean, Quote};

impl<'a> Parser<'a> {
    // One parser per line magic, named after it; the registry (`magics::registry`) maps each
    // magic's name to its parser. Each starts after the magic's name.

    pub(crate) fn lsmagic(&mut self) -> Result<Command, ParseError> {
        Ok(Command::LsMagic)
    }

    pub(crate) fn help(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Help(None));
        }
        self.eat_sym("%")?;
        self.eat_sym("%")?;
        Ok(Command::Help(Some(self.name("a magic name")?)))
    }

    pub(crate) fn clear_output(&mut self) -> Result<Command, ParseError> {
        let mut wait = false;
        while let Some(f) = self.flag()? {
            match &f.tok {
                Tok::Flag(s) if s == "--wait" => wait = true,
                other => return Err(unknown_option(&f, other, "%clear_output", &["--wait"])),
            }
        }
        Ok(Command::ClearOutput { wait })
    }

    pub(crate) fn save(&mut self) -> Result<Command, ParseError> {
        let name = self.name("an array name")?;
        let path = self.path("a file path (.png, .jpg or .npy)")?;
        Ok(Command::Save { name, path })
    }

    pub(crate) fn set(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Set(None));
        }
        let name = self.name("a scalar name")?;
        self.expect_sym("=", "after the scalar name")?;
        let e = self.expr()?;
        if let ExprKind::Tuple(_) = e.kind {
            return Err(ParseError::at(e.span, "a scalar cannot be a tuple"));
        }
        Ok(Command::Set(Some((name, e))))
    }

    pub(crate) fn launch_line(&mut self) -> Result<Command, ParseError> {
        self.launch().map(Command::Launch)
    }

    pub(crate) fn arrays(&mut self) -> Result<Command, ParseError> {
        Ok(Command::Arrays)
    }

    pub(crate) fn print(&mut self) -> Result<Command, ParseError> {
        let name = self.name("an array name")?;
        let mut head = None;
        while let Some(f) = self.flag()? {
            match &f.tok {
                Tok::Flag(s) if s == "--head" => head = Some(self.expr()?),
                other => return Err(unknown_option(&f, other, "%print", &["--head N"])),
            }
        }
        Ok(Command::Print { name, head })
    }

    pub(crate) fn free(&mut self) -> Result<Command, ParseError> {
        let mut names = vec![self.name("an array name")?];
        while !self.lx.at_end() {
            self.eat_sym(",")?;
            names.push(self.name("an array name")?);
        }
        Ok(Command::Free(names))
    }

    pub(crate) fn swap(&mut self) -> Result<Command, ParseError> {
        let a = self.name("two array names")?;
        self.eat_sym(",")?;
        let b = self.name("a second array name")?;
        Ok(Command::Swap(a, b))
    }

    pub(crate) fn copy(&mut self) -> Result<Command, ParseError> {
        let dst = self.name("a destination array name")?;
        self.expect_sym("=", "after the destination array (%copy DST = SRC)")?;
        let src = self.name("a source array name")?;
        Ok(Command::Copy { dst, src })
    }

    /// `NAME [STREAM]` of `%upload` and `%download`.
    fn array_and_stream(&mut self) -> Result<(Name, Option<Name>), ParseError> {
        let name = self.name("an array name")?;
        let stream = if self.lx.at_end() {
            None
        } else {
            Some(self.name("a stream name")?)
        };
        Ok((name, stream))
    }

    pub(crate) fn upload(&mut self) -> Result<Command, ParseError> {
        let (name, stream) = self.array_and_stream()?;
        Ok(Command::Upload(name, stream))
    }

    pub(crate) fn download(&mut self) -> Result<Command, ParseError> {
        let (name, stream) = self.array_and_stream()?;
        Ok(Command::Download(name, stream))
    }

    pub(crate) fn sync(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Sync(None));
        }
        Ok(Command::Sync(Some(self.name("a stream name")?)))
    }

    pub(crate) fn device(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Device(None));
        }
        Ok(Command::Device(Some(self.expr()?)))
    }

    pub(crate) fn limit(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Limit(None));
        }
        let n = self.name("a limit name (stack)")?;
        if n.text != "stack" {
            return Err(ParseError::at(
                n.span,
                format!("unknown limit '{}'; the limits are: stack", n.text),
            ));
        }
        Ok(Command::Limit(Some((n, self.expr()?))))
    }

    pub(crate) fn backend(&mut self) -> Result<Command, ParseError> {
        let n = self.name("'gpu' or 'sim'")?;
        match n.text.as_str() {
            "gpu" | "sim" | "cuda" | "ptxsim" => Ok(Command::Backend(n)),
            _ => Err(ParseError::at(
                n.span,
                format!("unknown backend '{}'; use gpu or sim", n.text),
            )),
        }
    }

    pub(crate) fn ptx(&mut self) -> Result<Command, ParseError> {
        Ok(Command::Ptx(self.kernel_name()?))
    }

    pub(crate) fn info(&mut self) -> Result<Command, ParseError> {
        let mut gpu = self.gpu_flag()?;
        let kernel = self.kernel_name()?;
        if gpu.is_none() {
            gpu = self.gpu_flag()?;
        }
        Ok(Command::Info { kernel, gpu })
    }

    pub(crate) fn gpu(&mut self) -> Result<Command, ParseError> {
        let mut ahead = self.lx.clone();
        if matches!(ahead.raw_word(), Some((w, _)) if w == "compare") {
            self.lx = ahead;
            let l = parse_launch(&mut self.lx)?;
            return Ok(Command::GpuCompare(Box::new(l)));
        }
        let mut ahead = self.lx.clone();
        if matches!(ahead.raw_word(), Some((w, _)) if w == "define") {
            self.lx = ahead;
            return self.gpu_define();
        }
        // The rest of the line, so that `%gpu RTX 4090` works.
        let mut words: Vec<(String, Span)> = Vec::new();
        while !self.lx.at_end() {
            match self.lx.raw_word() {
                Some(w) => words.push(w),
                None => break,
            }
        }
        Ok(Command::Gpu(joined_name(&words)))
    }

    /// `%gpu define NAME key=value...`: the words before the first `key=value` are the name
    /// (spaces allowed unquoted: `%gpu define RTX 2080 Ti sms=68 ...`).
    fn gpu_define(&mut self) -> Result<Command, ParseError> {
        let start = self.lx.pos;
        let mut name: Vec<(String, Span)> = Vec::new();
        let mut figures: Vec<(Name, Name)> = Vec::new();
        while !self.lx.at_end() {
            let Some((word, span)) = self.lx.raw_word() else {
                break;
            };
            match word.split_once('=') {
                Some((key, value)) => {
                    if key.is_empty() || value.is_empty() {
                        return Err(ParseError::at(
                            span,
                            format!("expected key=value, found '{word}'"),
                        ));
                    }
                    let key_end = span.start + key.len();
                    figures.push((
                        Name {
                            text: key.to_string(),
                            span: Span::new(span.start, key_end),
                        },
                        Name {
                            text: value.to_string(),
                            span: Span::new(key_end + 1, span.end),
                        },
                    ));
                }
                None if figures.is_empty() => name.push((word, span)),
                None => {
                    return Err(ParseError::at(
                        span,
                        format!("expected key=value after the GPU's name, found '{word}'"),
                    ))
                }
            }
        }
        let Some(name) = joined_name(&name) else {
            return Err(ParseError::at(
                Span::new(start, self.lx.pos.max(start + 1)),
                "%gpu define needs a name, e.g. %gpu define MyGPU sms=46 clock_mhz=2505 \
                 dram_gb_s=448 l2_mib=32 cc=8.9",
            ));
        };
        Ok(Command::GpuDefine { name, figures })
    }

    pub(crate) fn reset(&mut self) -> Result<Command, ParseError> {
        Ok(Command::Reset)
    }

    pub(crate) fn prefetch(&mut self) -> Result<Command, ParseError> {
        let name = self.name("a managed array name")?;
        let to_device = if self.lx.at_end() {
            true
        } else {
            let w = self.name("gpu or host")?;
            match w.text.as_str() {
                "gpu" | "device" => true,
                "host" | "cpu" => false,
                other => {
                    return Err(ParseError::at(
                        w.span,
                        format!("%prefetch moves an array to gpu or host, not '{other}'"),
                    ))
                }
            }
        };
        Ok(Command::Prefetch { name, to_device })
    }

    pub(crate) fn show(&mut self) -> Result<Command, ParseError> {
        show_args::parse_show(&mut self.lx).map(Command::Show)
    }

    pub(crate) fn time(&mut self) -> Result<Command, ParseError> {
        time_args::parse_time(&mut self.lx).map(|a| Command::Time(Box::new(a)))
    }

    pub(crate) fn profile(&mut self) -> Result<Command, ParseError> {
        profile_args::parse_profile(&mut self.lx).map(|a| Command::Profile(Box::new(a)))
    }

    pub(crate) fn timings(&mut self) -> Result<Command, ParseError> {
        time_args::parse_timings(&mut self.lx).map(|clear| Command::Timings { clear })
    }

    pub(super) fn path(&mut self, what: &str) -> Result<Name, ParseError> {
        let at = self.lx.pos;
        match self.lx.raw_word() {
            Some((text, span)) if !text.is_empty() => Ok(Name { text, span }),
            _ => Err(ParseError::at(
                Span::new(at, at),
                format!("expected {what}"),
            )),
        }
    }

    /// What follows `%graph`.
    pub(crate) fn graph(&mut self) -> Result<Command, ParseError> {
        const USAGE: &str =
            "%graph [begin NAME | end | launch NAME [-n K] | drop NAME] (%graph alone lists them)";
        if self.lx.at_end() {
            return Ok(Command::Graph(GraphCmd::List));
        }
        let verb = self.name(&format!("begin, end, launch or drop: {USAGE}"))?;
        let cmd = match verb.text.as_str() {
            "begin" => GraphCmd::Begin(self.name("a graph name after %graph begin")?),
            "end" => GraphCmd::End,
            "drop" => GraphCmd::Drop(self.name("a graph name after %graph drop")?),
            "launch" => {
                let name = self.name("a graph name after %graph launch")?;
                let times = if self.lx.at_end() {
                    None
                } else {
                    let t = self.next()?;
                    let n = self.next()?;
                    if t.tok != Tok::Sym("-") || n.tok != Tok::Ident("n".into()) {
                        return Err(ParseError::at(
                            t.span.to(n.span),
                            format!("expected -n K after the graph name: {USAGE}"),
                        ));
                    }
                    Some(self.expr()?)
                };
                GraphCmd::Launch { name, times }
            }
            other => {
                let hint = did_you_mean(other, ["begin", "end", "launch", "drop"], Quote::Plain)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                return Err(ParseError::at(
                    verb.span,
                    format!("unknown %graph command '{other}'{hint}: {USAGE}"),
                ));
            }
        };
        Ok(Command::Graph(cmd))
    }

    pub(crate) fn load(&mut self) -> Result<Command, ParseError> {
        let name = self.name("an array name")?;
        self.expect_sym("=", "after the array name")?;
        let path = self.path("a file path (.png, .jpg or .npy)")?;
        let mut gray = false;
        let mut as_dtype = None;
        while let Some(f) = self.flag()? {
            match &f.tok {
                Tok::Flag(s) if s == "--gray" || s == "--grey" => gray = true,
                Tok::Flag(s) if s == "--as" => as_dtype = Some(self.dtype()?),
                other => {
                    return Err(unknown_option(
                        &f,
                        other,
                        "%load",
                        &["--gray", "--as DTYPE"],
                    ))
                }
            }
        }
        Ok(Command::Load {
            name,
            path,
            gray,
            as_dtype,
        })
    }

    /// `--gpu MODEL` of `%info` (MODEL one word, or quoted: `--gpu "RTX 4090"`), if next.
    fn gpu_flag(&mut self) -> Result<Option<Name>, ParseError> {
        let Some(f) = self.flag()? else {
            return Ok(None);
        };
        match &f.tok {
            Tok::Flag(s) if s == "--gpu" => {
                Ok(Some(super::flags::gpu_model(&mut self.lx, f.span)?))
            }
            other => Err(unknown_option(&f, other, "%info", &["--gpu MODEL"])),
        }
    }
}

/// Words as one name, joined by single spaces (`RTX 4090`), spanning them all; None for none.
fn joined_name(words: &[(String, Span)]) -> Option<Name> {
    let (first, last) = (words.first()?, words.last()?);
    Some(Name {
        text: words
            .iter()
            .map(|w| w.0.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        span: Span::new(first.1.start, last.1.end),
    })
}
