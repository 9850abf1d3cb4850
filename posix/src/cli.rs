//! The command line, parsed by hand.
//!
//! ```text
//! mcpx serve [--config FILE] [--log-level LEVEL]
//! mcpx example-server [ARGS...]
//! mcpx --help | help | -h
//! mcpx --version | -V
//! ```
//! Flags take their value as the next argument or after `=`
//! (`--config=FILE`). New flags go into [`parse_serve`].

use std::path::PathBuf;

use crate::log::Level;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Serve(ServeArgs),
    /// Everything after `example-server`, passed through untouched.
    ExampleServer(Vec<String>),
    Help,
    Version,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServeArgs {
    pub config: Option<PathBuf>,
    pub log_level: Option<Level>,
}

/// A usage error: print it with a hint and exit 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

pub const USAGE: &str = "\
mcpx — one MCP server in front of many.

mcpx spawns and supervises local MCP servers (stdio programs) and presents
all their tools, prompts and resources to one MCP client as a single server on
its own stdin/stdout.

USAGE:
    mcpx serve [--config FILE] [--log-level LEVEL]
        Serve the hub on stdin/stdout. Logs go to stderr.
    mcpx example-server [--name NAME] [--revisions LIST] [--page-size N]
        Run the built-in example MCP server on stdin/stdout
        (`mcpx example-server --help` for details).
    mcpx --help      Show this help.
    mcpx --version   Show the version.

OPTIONS (serve):
    --config FILE       Config file. Default: ./mcpx.json, then
                        $XDG_CONFIG_HOME/mcpx/config.json (or
                        ~/.config/mcpx/config.json); with none of them, a
                        built-in demo hub of two example servers.
    --log-level LEVEL   error, warn, info (default) or debug. Also MCPX_LOG,
                        or \"logLevel\" in the config; the flag wins.

CONFIG (Claude Desktop's format, plus optional mcpx keys):
    {
      \"mcpServers\": {
        \"github\": {
          \"command\": \"npx\",                      program to run (required)
          \"args\": [\"-y\", \"@modelcontextprotocol/server-github\"],
          \"env\": {\"GITHUB_TOKEN\": \"${GITHUB_TOKEN}\"},   set over mcpx's env
          \"cwd\": \"~/src\",                        relative to the config file
          \"disabled\": false,
          \"timeoutMs\": 60000,                    per-request timeout
          \"tools\": {\"allow\": [\"*\"], \"deny\": [\"delete_*\"]},
          \"prefix\": \"gh\",                        names become gh__<name>;
                                                 \"\" for no prefix
          \"revisions\": [\"2025-06-18\"]            protocol revisions to offer
        }
      },
      \"separator\": \"__\",                         between prefix and name
      \"roots\": [\"~/src\", {\"uri\": \"file:///data\", \"name\": \"data\"}],
                                 answer servers' roots/list with these
                                 (default: ask the client)
      \"logLevel\": \"info\"
    }
    ${VAR} in any string is replaced from the environment (an unset VAR is
    an error; ${VAR:-default} gives a default; $${ is a literal ${). Servers
    keep the file's order. Remote \"url\" servers are not supported yet
    (skipped with a warning).

A server that crashes is restarted with backoff (250 ms doubling to 30 s).
On end of input or SIGINT/SIGTERM, mcpx closes each server's stdin, then
sends SIGTERM and finally SIGKILL to its process group, and exits.
";

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, UsageError> {
    let Some(first) = args.first() else {
        return Err(UsageError("no command given".into()));
    };
    match first.as_str() {
        "--help" | "-h" | "help" => Ok(Command::Help),
        "--version" | "-V" | "version" => Ok(Command::Version),
        "example-server" => Ok(Command::ExampleServer(args[1..].to_vec())),
        "serve" if args[1..].iter().any(|a| a == "--help" || a == "-h") => Ok(Command::Help),
        "serve" => parse_serve(&args[1..]).map(Command::Serve),
        s if s.starts_with('-') => Err(UsageError(format!("unknown option `{s}` (expected a command first)"))),
        s => Err(UsageError(format!("unknown command `{s}`"))),
    }
}

/// Splits `--flag=value` / `--flag value`; `None` value when the flag is last.
fn flag_value<'a>(
    arg: &'a str,
    rest: &mut std::slice::Iter<'a, String>,
) -> (&'a str, Option<&'a str>) {
    match arg.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f, Some(v)),
        _ => (arg, rest.next().map(String::as_str)),
    }
}

fn parse_serve(args: &[String]) -> Result<ServeArgs, UsageError> {
    let mut out = ServeArgs::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
        match name {
            "--config" | "-c" => {
                let (f, v) = flag_value(arg, &mut it);
                let v = v.filter(|v| !v.is_empty()).ok_or_else(|| UsageError(format!("`{f}` needs a file name")))?;
                if out.config.is_some() {
                    return Err(UsageError(format!("`{f}` given twice")));
                }
                out.config = Some(PathBuf::from(v));
            }
            "--log-level" => {
                let (f, v) = flag_value(arg, &mut it);
                let v = v.ok_or_else(|| UsageError(format!("`{f}` needs a level: error, warn, info or debug")))?;
                out.log_level = Some(Level::parse(v).ok_or_else(|| {
                    UsageError(format!("`{f}`: unknown level `{v}` (use error, warn, info or debug)"))
                })?);
            }
            s if s.starts_with('-') => return Err(UsageError(format!("unknown option `{s}` for `mcpx serve`"))),
            s => return Err(UsageError(format!("unexpected argument `{s}` for `mcpx serve`"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Command, UsageError> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }
    fn e(args: &[&str]) -> String {
        p(args).unwrap_err().0
    }

    #[test]
    fn commands() {
        assert_eq!(p(&["--help"]), Ok(Command::Help));
        assert_eq!(p(&["-h"]), Ok(Command::Help));
        assert_eq!(p(&["help"]), Ok(Command::Help));
        assert_eq!(p(&["--version"]), Ok(Command::Version));
        assert_eq!(p(&["-V"]), Ok(Command::Version));
        assert_eq!(p(&["serve"]), Ok(Command::Serve(ServeArgs::default())));
        assert_eq!(
            p(&["example-server", "--name", "x", "--weird"]),
            Ok(Command::ExampleServer(vec!["--name".into(), "x".into(), "--weird".into()]))
        );
    }

    #[test]
    fn serve_flags() {
        let want = ServeArgs { config: Some("a.json".into()), log_level: Some(Level::Debug) };
        assert_eq!(p(&["serve", "--config", "a.json", "--log-level", "debug"]), Ok(Command::Serve(want.clone())));
        assert_eq!(p(&["serve", "--config=a.json", "--log-level=debug"]), Ok(Command::Serve(want.clone())));
        assert_eq!(p(&["serve", "-c", "a.json", "--log-level", "DEBUG"]), Ok(Command::Serve(want)));
    }

    #[test]
    fn errors() {
        assert_eq!(e(&[]), "no command given");
        assert_eq!(e(&["--frobnicate"]), "unknown option `--frobnicate` (expected a command first)");
        assert_eq!(e(&["frobnicate"]), "unknown command `frobnicate`");
        assert_eq!(e(&["serve", "--frobnicate"]), "unknown option `--frobnicate` for `mcpx serve`");
        assert_eq!(e(&["serve", "extra"]), "unexpected argument `extra` for `mcpx serve`");
        assert_eq!(e(&["serve", "--config"]), "`--config` needs a file name");
        assert_eq!(e(&["serve", "--config="]), "`--config` needs a file name");
        assert_eq!(e(&["serve", "--config", "a", "--config", "b"]), "`--config` given twice");
        assert_eq!(e(&["serve", "--log-level"]), "`--log-level` needs a level: error, warn, info or debug");
        assert_eq!(
            e(&["serve", "--log-level", "loud"]),
            "`--log-level`: unknown level `loud` (use error, warn, info or debug)"
        );
        assert_eq!(p(&["serve", "--config", "x", "--help"]), Ok(Command::Help));
    }
}
