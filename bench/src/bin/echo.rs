//! `mcpx-bench-echo`: the minimal echo MCP server on stdio (the fast upstream).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(mcpx_posix::bench::echo::main(&args));
}
