//! `mcpx disable NAME` and `mcpx enable NAME`: a server's `"disabled"` in
//! the config file, edited in place; a running `mcpx serve` applies it at
//! its next reload (the file's change is seen within a second). The status
//! page's Disable and Enable buttons edit the hub's file the same way
//! ([`disable_in_file`]).

use std::path::Path;

use super::add::{read_existing, save};
use super::{edit, Failure};

/// What setting a server's `"disabled"` in a config file came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Disabling {
    /// Written, with what `serve --check` warns of in the new file.
    Written(Vec<String>),
    /// It was so already: nothing written.
    Already,
    /// The file has no server of that name: nothing written.
    NoServer,
}

/// Sets server `name`'s `"disabled"` in the config file at `path`
/// ([`edit::set_disabled`]) and writes the file as `mcpx add` does
/// (`save`: what `serve --check` would refuse is not written); `Err`: why
/// it could not.
pub fn disable_in_file(path: &Path, name: &str, disabled: bool) -> Result<Disabling, String> {
    let old =
        read_existing(path)?.ok_or_else(|| format!("{}: no such config file", path.display()))?;
    let Some(text) =
        edit::set_disabled(&old, name, disabled).map_err(|e| format!("{}: {e}", path.display()))?
    else {
        return Ok(Disabling::NoServer);
    };
    if text == old {
        return Ok(Disabling::Already);
    }
    save(path, Some(&old), &text).map(Disabling::Written)
}

pub fn run(config: Option<&Path>, name: &str, disabled: bool) -> Result<(), Failure> {
    let path = edit::target_file(config);
    let (done, applied) = if disabled {
        ("disabled", "stops it")
    } else {
        ("enabled", "starts it")
    };
    match disable_in_file(&path, name, disabled).map_err(Failure::Failed)? {
        Disabling::NoServer => Err(Failure::Failed(format!(
            "{}: no server named {name:?}",
            path.display()
        ))),
        Disabling::Already => {
            println!("server {name} is {done} already in {}", path.display());
            Ok(())
        }
        Disabling::Written(warnings) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
            println!(
                "{done} server {name} in {}; a running `mcpx serve` {applied} at its next reload",
                path.display()
            );
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disable_in_file_writes_once_and_says_what_it_did_not_do() {
        let dir = std::env::temp_dir().join(format!("mcpx-disable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mcpx.json");
        let src = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"/bin/sh\"}\n  }\n}\n";
        std::fs::write(&path, src).unwrap();
        let read = || std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            disable_in_file(&path, "a", true),
            Ok(Disabling::Written(Vec::new()))
        );
        assert_eq!(read(), edit::set_disabled(src, "a", true).unwrap().unwrap());
        assert_eq!(disable_in_file(&path, "a", true), Ok(Disabling::Already));
        assert_eq!(disable_in_file(&path, "zz", true), Ok(Disabling::NoServer));
        assert_eq!(
            disable_in_file(&path, "a", false),
            Ok(Disabling::Written(Vec::new()))
        );
        assert_eq!(read(), src);
        std::fs::write(&path, "{").unwrap();
        assert!(disable_in_file(&path, "a", true)
            .unwrap_err()
            .contains("not valid JSON"));
        let gone = dir.join("gone.json");
        assert_eq!(
            disable_in_file(&gone, "a", true),
            Err(format!("{}: no such config file", gone.display()))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
