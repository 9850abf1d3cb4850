//! `mcpx`: an MCP hub. See README.md.
#![deny(unsafe_op_in_unsafe_fn)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(mcpx_posix::run(args));
}
