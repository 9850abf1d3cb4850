//! mcpx-posix: the std runtime of mcpx as a library. The `mcpx` binary,
//! `mcpx-edge` and the bench all enter through [`run`].
mod example;
mod hub;

#[cfg(feature = "count-alloc")]
pub mod alloc_count;
#[cfg(feature = "bench")]
pub mod bench;

/// Runs mcpx with `args` (without the program name); the exit code.
pub fn run(args: Vec<String>) -> i32 {
    #[cfg(feature = "count-alloc")]
    alloc_count::install();
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
