//! mcpx-posix: the std runtime of mcpx as a library. The `mcpx` binary,
//! `mcpx-edge` and the bench all enter through [`run`].
mod example;
mod hub;
pub mod limits;

pub use limits::Limits;

#[cfg(feature = "count-alloc")]
pub mod alloc_count;
#[cfg(feature = "bench")]
pub mod bench;

/// Runs mcpx with `args` (without the program name) and the desktop
/// limits; the exit code.
pub fn run(args: Vec<String>) -> i32 {
    run_with(args, Limits::DESKTOP)
}

/// Runs mcpx with `limits` as the defaults (`MCPX_LIMITS` may override them).
pub fn run_with(args: Vec<String>, limits: Limits) -> i32 {
    #[cfg(feature = "count-alloc")]
    alloc_count::install();
    let limits = match std::env::var("MCPX_LIMITS") {
        Ok(spec) if !spec.trim().is_empty() => match limits.with_overrides(&spec) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("mcpx: MCPX_LIMITS: {e}");
                return 2;
            }
        },
        _ => limits,
    };
    limits::set(limits);
    match args.first().map(String::as_str) {
        Some("--version") | Some("-V") => {
            println!("mcpx {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some("example-server") => example::main(&args[1..]),
        #[cfg(feature = "bench")]
        Some("bench") => bench::main(&args[1..]),
        #[cfg(not(feature = "bench"))]
        Some("bench") => {
            eprintln!("mcpx: this build has no `bench` (built without the `bench` feature)");
            2
        }
        _ => {
            eprintln!(
                "mcpx {}: unknown command; try `mcpx --help`",
                env!("CARGO_PKG_VERSION")
            );
            2
        }
    }
}
