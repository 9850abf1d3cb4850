//! `mcpx-edge`: mcpx for routers and boards. The same runtime as `mcpx`
//! (`mcpx_posix::run`), built without the desktop-only features and with
//! the size profile `edge`; see README.md for building and deploying.
//!
//! Its caps start from `Limits::SMALL_HOST` (see `mcpx_posix::limits`);
//! `MCPX_LIMITS` adjusts them.
//!
//! Build it alone (`cargo build -p mcpx-edge --profile edge --target …`),
//! never together with the rest of the workspace: cargo unifies features
//! across the packages of one build, which would bring the default
//! features of mcpx-posix back in.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(mcpx_posix::run_with(args, mcpx_posix::Limits::SMALL_HOST));
}
