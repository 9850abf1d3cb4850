//! `mcpx-bench-relay -- CMD ARGS…`: copies both pipes of CMD without parsing.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(mcpx_posix::bench::relay::main(&args));
}
