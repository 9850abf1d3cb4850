//! `mcpx`: an MCP hub. See README.md.
mod example;
mod hub;
#[allow(dead_code)] // until serve wires remote upstreams
mod remote;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("--version") | Some("-V") => {
            println!("mcpx {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some("example-server") => example::main(&args[1..]),
        _ => {
            eprintln!("mcpx {}: unknown command; try `mcpx --help`", env!("CARGO_PKG_VERSION"));
            2
        }
    };
    std::process::exit(code);
}
