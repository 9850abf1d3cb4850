//! `mcpx`: an MCP hub. See README.md.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--version") | Some("-V") => println!("mcpx {}", env!("CARGO_PKG_VERSION")),
        _ => {
            eprintln!("mcpx {}: no command implemented yet", env!("CARGO_PKG_VERSION"));
            std::process::exit(2);
        }
    }
}
