//! `mcpx-bench-hub`: mcpx itself, built with the counting allocator
//! (`--features count-alloc`); prints its counters on SIGUSR2.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(mcpx_posix::run(args));
}
