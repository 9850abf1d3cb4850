//! `mcpx serve --check`: the config loaded and validated as `serve` would,
//! without running anything.

use crate::cli::ServeArgs;
use crate::config::{self, Config};
use crate::hub::Hub;

/// The hub for a parsed config, or the problem `serve` refuses it for
/// (`file:line:col: message` where the file says where).
pub fn build_hub(cfg: &Config) -> Result<Hub, String> {
    let max = crate::limits::get().max_upstreams;
    if cfg.servers.len() > max {
        return Err(format!(
            "{}: {} servers configured; this build runs at most {max} (disable some, or raise the cap with MCPX_LIMITS=upstreams=N)",
            cfg.source,
            cfg.servers.len()
        ));
    }
    let (specs, opts) = crate::serve::hub_parts(cfg);
    Hub::new(specs, opts).map_err(|e| match crate::serve::hub_error_position(cfg, &e) {
        Some(at) => format!("{at}: {e}"),
        None => format!("{}: {e}", cfg.source),
    })
}

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
