//! The `nbcuda` binary: `nbcuda kernel` (the Jupyter kernel, started by Jupyter through the
//! kernelspec), `nbcuda install` (writes that kernelspec) and `nbcuda doctor` (checks the set-up).
//!
//! evcxr re-runs this very binary as its child process for Rust cells, and cargo runs it as
//! evcxr's rustc wrapper, so `main` hands over to those before anything else.

use clap::{Args, Parser, Subcommand};
use nbcuda::cli::{doctor, install, warm_up};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "nbcuda",
    version,
    about = "A Jupyter kernel for GPU-accelerated Rust notebooks (Rust cells, %%cuda cells, magics)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the Jupyter kernel (Jupyter starts this through the installed kernelspec).
    Kernel {
        /// The connection file Jupyter wrote (ports, key, transport).
        #[arg(long = "connection-file", value_name = "FILE")]
        connection_file: PathBuf,
    },
    /// Install the Jupyter kernelspec that starts this binary.
    Install(InstallArgs),
    /// Check the GPU driver, NVRTC, the Rust toolchain, Jupyter and the kernelspec.
    Doctor {
        /// Kernelspec name to look for.
        #[arg(long, default_value = install::DEFAULT_NAME)]
        name: String,
    },
    /// Build what Rust cells depend on (the `nb` crate, serde, ndarray) into evcxr's build cache
    /// (~/.cache/evcxr), so the first Rust cell of later Jupyter kernels waits for no build.
    WarmUp,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("location").args(["user", "sys_prefix", "prefix"])))]
struct InstallArgs {
    /// Install for the current user (~/.local/share/jupyter/kernels); the default.
    #[arg(long)]
    user: bool,
    /// Install into the Python environment: $VIRTUAL_ENV, else the one this binary is installed
    /// in (pip's <prefix>/bin), else python3's sys.prefix.
    #[arg(long = "sys-prefix")]
    sys_prefix: bool,
    /// Install under PREFIX/share/jupyter/kernels.
    #[arg(long, value_name = "PREFIX")]
    prefix: Option<PathBuf>,
    /// Kernelspec name.
    #[arg(long, default_value = install::DEFAULT_NAME)]
    name: String,
    /// Name shown in Jupyter's launcher.
    #[arg(long = "display-name", default_value = install::DEFAULT_DISPLAY_NAME)]
    display_name: String,
}

impl InstallArgs {
    fn options(self) -> install::InstallOptions {
        let location = match (self.sys_prefix, self.prefix) {
            (_, Some(prefix)) => install::Location::Prefix(prefix),
            (true, None) => install::Location::SysPrefix,
            (false, None) => install::Location::User,
        };
        install::InstallOptions {
            location,
            name: self.name,
            display_name: self.display_name,
        }
    }
}

fn main() -> ExitCode {
    // Must come first: when evcxr starts this binary as its child, this never returns (the line
    // before only acts in that child: it routes stdout through a pipe, see child_marker).
    nbcuda::rust::child_marker::install_if_evcxr_child();
    // When cargo runs this binary as evcxr's rustc wrapper: wraps evcxr's wrapper (see dep_info).
    nbcuda::rust::dep_info::wrap_rustc_if_asked();
    evcxr::runtime_hook();
    // `nbcuda gpu-worker`: the process that holds the CUDA context (started by the Jupyter
    // kernel, not by users; see nbcuda::gpu::worker).
    if let Some(code) = nbcuda::gpu::worker::run_if_worker() {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }

    let cli = Cli::parse();
    let result = match cli.command {
        Command::Kernel { connection_file } => {
            init_logging();
            nbcuda::kernel::run(&connection_file)
        }
        Command::Install(args) => install::run(&args.options()),
        Command::Doctor { name } => {
            doctor::run(&name);
            Ok(())
        }
        Command::WarmUp => warm_up::run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nbcuda: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The Jupyter kernel's warnings go to its stderr, which Jupyter writes to its server log.
/// `NBCUDA_LOG` (a `tracing` filter such as `debug` or `nbcuda=info`) changes what is written;
/// the default is warnings and errors. Starts no thread.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NBCUDA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
