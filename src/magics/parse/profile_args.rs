//! The arguments of `%profile [--gpu MODEL] [--lines] [--check] [--ncu] [--full] [--warm] LAUNCH`. Executed by
//! `magics::profile`.
//!
//! Pure parsing: this module must not import the magics' execution modules.

use super::super::lex::{Lexer, ParseError, Tok};
use super::ast::{Launch, Name};
use super::flags::{gpu_model, unknown_flag};
use super::launch_syntax::parse_launch;

/// The parsed arguments of `%profile`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileArgs {
    /// `--gpu MODEL`: the GPU to model (default: the session's `%gpu`).
    pub gpu: Option<Name>,
    /// `--lines`: also show the cell's source annotated per line.
    pub lines: bool,
    /// `--ncu`: also measure the launch with Nsight Compute (GPU backend only).
    pub ncu: bool,
    /// `--full`: count every block, never a sample.
    pub full: bool,
    /// `--warm`: the L2 as a repeat of the launch finds it (what the previous launch left),
    /// as `%time`'s repeats run; without it the L2 starts cold, as Nsight Compute measures.
    pub warm: bool,
    pub launch: Launch,
}

pub(crate) const PROFILE_FLAGS: [&str; 6] = [
    "--gpu MODEL",
    "--lines",
    "--check",
    "--ncu",
    "--full",
    "--warm",
];

/// Parses what follows `%profile`: options, then a launch as `%launch` takes it.
pub fn parse_profile(lx: &mut Lexer) -> Result<ProfileArgs, ParseError> {
    let (mut gpu, mut lines, mut check, mut ncu) = (None, false, false, false);
    let (mut full, mut warm) = (false, false);
    loop {
        let t = lx.peek()?;
        match &t.tok {
            Tok::Flag(f) => {
                let f = f.clone();
                lx.next_token()?;
                match f.as_str() {
                    "--lines" => lines = true,
                    "--check" => check = true,
                    "--ncu" => ncu = true,
                    "--full" => full = true,
                    "--warm" => warm = true,
                    "--gpu" => gpu = Some(gpu_model(lx, t.span)?),
                    _ => return Err(unknown_flag(t.span, &f, "%profile", &PROFILE_FLAGS)),
                }
            }
            Tok::Eof => {
                return Err(ParseError::at(
                    t.span,
                    "%profile needs a launch: %profile [--gpu MODEL] [--lines] [--ncu] [--full] [--warm] \
                     KERNEL[GRID, BLOCK](ARGS)",
                ))
            }
            _ => break,
        }
    }
    let mut launch = parse_launch(lx)?;
    launch.check |= check;
    Ok(ProfileArgs {
        gpu,
        lines,
        ncu,
        full,
        warm,
        launch,
    })
}
