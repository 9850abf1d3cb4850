//! `mcpx serve --check`: the config loaded and validated as `serve` would,
//! without running anything.

use crate::cli::ServeArgs;
use crate::config;
use crate::serve::options::build_hub;

/// Exit 0 when the config is good (its warnings on stderr), else 1.
pub fn main(args: &ServeArgs) -> i32 {
    let cfg = match config::load(args.config.as_deref(), &config::process_env) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    for w in &cfg.warnings {
        eprintln!("warning: {w}");
    }
    match build_hub(&cfg) {
        Ok(_) => {
            println!("{}: OK ({} server(s), {} disabled)", cfg.source, cfg.servers.len(), cfg.disabled.len());
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}
