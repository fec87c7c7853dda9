//! The command-line subcommands other than the Jupyter kernel loop itself:
//! `nbcuda install` (writes the Jupyter kernelspec), `nbcuda doctor` (checks the set-up) and
//! `nbcuda warm-up` (fills evcxr's build cache with what Rust cells depend on).
//!
//! Nothing here talks the Jupyter protocol or touches device state; these are one-shot commands
//! that inspect the machine and print.

pub mod doctor;
pub mod install;
pub mod warm_up;
