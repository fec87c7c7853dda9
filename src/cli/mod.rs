//! The command-line subcommands other than the Jupyter kernel loop itself:
//! `nbcuda install` (writes the Jupyter kernelspec) and `nbcuda doctor` (checks the set-up).
//!
//! Nothing here talks the Jupyter protocol or touches device state; these are one-shot commands
//! that inspect the machine and print.

pub mod doctor;
pub mod install;
