//! `mcpx serve --check`: the config loaded and validated as `serve` would,
//! without running anything, and then (desktop build) vetted
//! (`super::lint`) for what `serve` runs but a config should not hold.
//! [`verdict`] is the one rule: `mcpx add`, `import`, `disable` and
//! `enable` ask it of the config they would write.

use crate::cmd::cli::ServeArgs;
use crate::config::{self, Config};
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
    match verdict(&cfg) {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
        }
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    }
    let sep = if cfg.disabled.is_empty() { "" } else { ": " };
    println!("{}: OK ({} server(s), {} disabled{sep}{})", cfg.source, cfg.servers.len(), cfg.disabled.len(), cfg.disabled.join(", "));
    0
}

/// What `serve --check` says of a parsed config beyond its parse: the
/// vetting's warnings, or why it is refused (`file:line:col: message`
/// lines): the hub refuses it, or (desktop build) the vetting does.
pub fn verdict(cfg: &Config) -> Result<Vec<String>, String> {
    build_hub(cfg)?;
    #[cfg(feature = "cli")]
    {
        let lint = super::lint::lint(cfg);
        if !lint.errors.is_empty() {
            return Err(lint.errors.join("\n"));
        }
        Ok(lint.warnings)
    }
    #[cfg(not(feature = "cli"))]
    Ok(Vec::new())
}
