//! `mcpx serve --check`: the config loaded and validated as `serve` would,
//! without running anything, and then (desktop build) vetted
//! (`super::lint`) for what `serve` runs but a config should not hold.

use crate::cmd::cli::ServeArgs;
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
    if let Err(e) = build_hub(&cfg) {
        eprintln!("{e}");
        return 1;
    }
    #[cfg(feature = "cli")]
    {
        let lint = super::lint::lint(&cfg);
        for w in &lint.warnings {
            eprintln!("warning: {w}");
        }
        if !lint.errors.is_empty() || !lint.not_installed.is_empty() {
            for e in lint.errors.iter().chain(&lint.not_installed) {
                eprintln!("{e}");
            }
            return 1;
        }
    }
    let disabled = match cfg.disabled.as_slice() {
        [] => String::new(),
        names => format!(": {}", names.join(", ")),
    };
    println!("{}: OK ({} server(s), {} disabled{disabled})", cfg.source, cfg.servers.len(), cfg.disabled.len());
    0
}
