//! `mcpx`: an MCP hub. See README.md.
#[macro_use]
mod log;
mod backoff;
mod cli;
mod config;
mod example;
mod http;
mod hub;
mod jsonpos;
mod lines;
mod outbox;
mod remote;
mod serve;
mod stdio;
mod supervise;
#[cfg(test)]
mod testing;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match cli::parse(&args) {
        Ok(cli::Command::Help) => {
            print!("{}", cli::USAGE);
            0
        }
        Ok(cli::Command::Version) => {
            println!("mcpx {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Ok(cli::Command::ExampleServer(rest)) => example::main(&rest),
        Ok(cli::Command::Serve(opts)) => serve::main(opts),
        Err(e) => {
            eprintln!("mcpx: {e}\nTry `mcpx --help`.");
            2
        }
    };
    std::process::exit(code);
}
