//! `%profile [--gpu MODEL] [--lines] LAUNCH`: the launch (as `%launch` takes it) counted on
//! ptxsim on copies of its arrays, shown the way Nsight Compute shows a launch (the display
//! is `profile_view`'s). On a GPU the launch also runs on the GPU on copies, timed.
//!
//! Parsing and running only; the device work is `DeviceState::profile`.

use super::lex::{Lexer, ParseError, Tok};
use super::parse::{self, Launch, Name};
use super::show::unknown_flag;
use super::{profile_view, LineCtx, MagicError, Magics};
use crate::output::{CellOutput, OutputSink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The parsed arguments of `%profile`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileArgs {
    /// `--gpu MODEL`: the GPU to model (default: the session's `%gpu`).
    pub gpu: Option<Name>,
    /// `--lines`: also show the cell's source annotated per line.
    pub lines: bool,
    pub launch: Launch,
}

const PROFILE_FLAGS: [&str; 3] = ["--gpu MODEL", "--lines", "--check"];

/// Parses what follows `%profile`: options, then a launch as `%launch` takes it.
pub fn parse_profile(lx: &mut Lexer) -> Result<ProfileArgs, ParseError> {
    let (mut gpu, mut lines, mut check) = (None, false, false);
    loop {
        let t = lx.peek()?;
        match &t.tok {
            Tok::Flag(f) => {
                let f = f.clone();
                lx.next_token()?;
                match f.as_str() {
                    "--lines" => lines = true,
                    "--check" => check = true,
                    "--gpu" => match lx.raw_word() {
                        Some((text, span)) if !text.is_empty() => gpu = Some(Name { text, span }),
                        _ => {
                            return Err(ParseError::at(
                                t.span,
                                "--gpu needs a GPU model, e.g. --gpu T4 (%gpu lists them)",
                            ))
                        }
                    },
                    _ => return Err(unknown_flag(t.span, &f, "%profile", &PROFILE_FLAGS)),
                }
            }
            Tok::Eof => {
                return Err(ParseError::at(
                    t.span,
                    "%profile needs a launch: %profile [--gpu MODEL] [--lines] \
                     KERNEL[GRID, BLOCK](ARGS)",
                ))
            }
            _ => break,
        }
    }
    let mut launch = parse::parse_launch(lx)?;
    launch.check |= check;
    Ok(ProfileArgs { gpu, lines, launch })
}

impl Magics {
    /// `%profile`: one display with the profile's tables and its `application/json` metrics.
    pub(crate) fn profile(
        &mut self,
        ctx: &LineCtx,
        a: &ProfileArgs,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), MagicError> {
        let model = match &a.gpu {
            Some(g) => super::gpu::find_model(ctx, g)?.clone(),
            None => self.dev.gpu_model(),
        };
        let request = self.launch_request(ctx, &a.launch, cancel)?;
        let p = self.dev.profile(&request, &model).map_err(|e| {
            if cancel.load(Ordering::Relaxed) {
                ctx.plain(
                    "Interrupted",
                    format!("%profile of {} was interrupted", a.launch.kernel.text),
                )
            } else {
                ctx.gpu(e)
            }
        })?;
        if !p.printf.is_empty() {
            out(CellOutput::Stdout(p.printf.clone()));
        }
        if !p.reports.is_empty() {
            out(CellOutput::Stderr(format!("{}\n", p.reports.join("\n"))));
        }
        out(CellOutput::Display {
            data: profile_view::bundle(&p, a.lines),
            metadata: serde_json::Map::new(),
            display_id: None,
        });
        Ok(())
    }

    /// `nb::profile("LAUNCH")`: the metrics of `%profile LAUNCH` (Nsight Compute's names).
    pub fn profile_metrics(
        &mut self,
        launch: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, MagicError> {
        let line = format!("%profile {launch}");
        let ctx = LineCtx {
            line: &line,
            line_no: 1,
        };
        let super::parse::Command::Profile(a) = super::parse_line_ctx(&ctx)? else {
            return Err(ctx.plain("SyntaxError", "not a launch"));
        };
        let model = match &a.gpu {
            Some(g) => super::gpu::find_model(&ctx, g)?.clone(),
            None => self.dev.gpu_model(),
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let request = self.launch_request(&ctx, &a.launch, &cancel)?;
        let p = self.dev.profile(&request, &model).map_err(|e| ctx.gpu(e))?;
        Ok(profile_view::metrics(&p))
    }
}
