//! `mcpx disable NAME` and `mcpx enable NAME`: a server's `"disabled"` in
//! the config file, edited in place; a running `mcpx serve` applies it at
//! its next reload (the file's change is seen within a second).

use std::path::Path;

use super::add::{read_existing, save};
use super::{edit, Failure};

pub fn run(config: Option<&Path>, name: &str, disabled: bool) -> Result<(), Failure> {
    let path = edit::target_file(config);
    let old = read_existing(&path)?
        .ok_or_else(|| Failure::Failed(format!("{}: no such config file", path.display())))?;
    let text = edit::set_disabled(&old, name, disabled)
        .map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?
        .ok_or_else(|| Failure::Failed(format!("{}: no server named {name:?}", path.display())))?;
    let (done, applied) = if disabled {
        ("disabled", "stops it")
    } else {
        ("enabled", "starts it")
    };
    if text == old {
        println!("server {name} is {done} already in {}", path.display());
        return Ok(());
    }
    save(&path, Some(&old), &text)?;
    println!(
        "{done} server {name} in {}; a running `mcpx serve` {applied} at its next reload",
        path.display()
    );
    Ok(())
}
