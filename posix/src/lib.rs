//! mcpx-posix: the std runtime of mcpx as a library. The `mcpx` binary,
//! `mcpx-edge` and the bench all enter through [`run`].
//!
//! The layers, top to bottom:
//! - the command line (`cmd`: its parser `cmd::cli`, the client commands,
//!   `mcpx auth`) and the runtime (`serve`, `reload`), which build the rest
//!   from `config` (JSON mapped into each part's own option types);
//! - the transports: `stdio`, `http` (the listener), `remote` (upstreams
//!   over Streamable HTTP, OAuth), `cluster` (Redis, the hop between
//!   replicas), and the process plumbing (`process`: the servers'
//!   processes, what is left of them, signals);
//! - the sans-IO hub (`hub`: the pipeline's stages in `hub/stages`, its
//!   subsystems beside them) with its rules (`policy`): it takes bytes and
//!   time and answers with effects, and imports none of the layers above;
//! - what the server transports share (`servers`: the restart loop, the
//!   events a transport reports);
//! - the leaves everything uses: `log`, `bytes` (framing, outgoing queues,
//!   sized buffers), `host` (the environment, small files), `limits`.
//!
//! Every foreign call goes through `libc`; each `unsafe` block says why it
//! is sound in a `// SAFETY:` comment.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#[macro_use]
mod log;
mod bytes;
mod cluster;
mod cmd;
mod config;
mod example;
mod host;
mod http;
mod hub;
pub mod limits;
mod name_map;
pub mod policy;
mod process;
mod reload;
mod remote;
mod serve;
mod servers;
mod stdio;

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
    #[cfg(target_os = "linux")]
    if args.first().map(String::as_str) == Some(process::watcher::ARG) {
        return process::watcher::main(&args[1..]);
    }
    bytes::heap::give_large_buffers_back();
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
    #[cfg(feature = "bench")]
    if args.first().map(String::as_str) == Some("bench") {
        return bench::main(&args[1..]);
    }
    #[cfg(not(feature = "bench"))]
    if args.first().map(String::as_str) == Some("bench") {
        eprintln!("mcpx: this build has no `bench` (built without the `bench` feature)");
        return 2;
    }
    match cmd::cli::parse(&args) {
        Ok(cmd::cli::Command::Help) => {
            print!("{}", cmd::cli::USAGE);
            0
        }
        Ok(cmd::cli::Command::Version) => {
            println!("mcpx {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Ok(cmd::cli::Command::ExampleServer(rest)) => example::main(&rest),
        Ok(cmd::cli::Command::Serve(opts)) if opts.check => cmd::check(&opts),
        Ok(cmd::cli::Command::Serve(opts)) => {
            process::reaper::become_subreaper();
            #[cfg(target_os = "linux")]
            {
                process::cgroup::setup();
                process::watcher::start(process::cgroup::parent());
            }
            let code = serve::main(opts);
            // Every server is stopped: what they left behind goes too.
            process::reaper::end_orphans(std::time::Duration::from_secs(2));
            #[cfg(target_os = "linux")]
            process::cgroup::end_all();
            // The log is written by a thread of its own: let it finish.
            log::flush(std::time::Duration::from_secs(2));
            code
        }
        #[cfg(feature = "cli")]
        Ok(cmd::cli::Command::Client(args)) => cmd::client(args),
        #[cfg(feature = "cli")]
        Ok(cmd::cli::Command::Add(args)) => cmd::add(args),
        #[cfg(feature = "cli")]
        Ok(cmd::cli::Command::Remove { config, name }) => cmd::remove(config.as_deref(), &name),
        #[cfg(feature = "cli")]
        Ok(cmd::cli::Command::Disable { config, name, disabled }) => cmd::disable(config.as_deref(), &name, disabled),
        #[cfg(feature = "cli")]
        Ok(cmd::cli::Command::Import(args)) => cmd::import(args),
        #[cfg(not(feature = "cli"))]
        Ok(
            cmd::cli::Command::Client(_)
            | cmd::cli::Command::Add(_)
            | cmd::cli::Command::Remove { .. }
            | cmd::cli::Command::Disable { .. }
            | cmd::cli::Command::Import(_),
        ) => {
            eprintln!("mcpx: this build has no `{}` (built without the `cli` feature)", args[0]);
            2
        }
        Ok(cmd::cli::Command::Auth(a)) => cmd::auth::main(a),
        #[cfg(feature = "consent")]
        Ok(cmd::cli::Command::Pin(a)) => cmd::pin::main(a),
        #[cfg(not(feature = "consent"))]
        Ok(cmd::cli::Command::Pin(_)) => {
            eprintln!("mcpx: this build has no `pin` (built without the `consent` feature)");
            2
        }
        Err(e) => {
            eprintln!("mcpx: {e}\nTry `mcpx --help`.");
            2
        }
    }
}
