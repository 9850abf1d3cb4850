//! The command line, parsed by hand.
//!
//! ```text
//! mcpx serve [--config FILE] [--log-level LEVEL] [--http ADDR [--stdio] [--token TOKEN] [--insecure-no-auth]]
//! mcpx example-server [ARGS...]
//! mcpx --help | help | -h
//! mcpx --version | -V
//! ```
//! Flags take their value as the next argument or after `=`
//! (`--config=FILE`). New flags go into [`parse_serve`].

use std::net::SocketAddr;
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
    /// `--http ADDR`: serve MCP over HTTP on this address.
    pub http: Option<SocketAddr>,
    /// `--stdio`: serve stdio too (the default when `--http` is not given).
    pub stdio: bool,
    /// `--token TOKEN`: bearer token required by the HTTP server.
    pub token: Option<String>,
    /// `--insecure-no-auth`: allow a non-loopback `--http` address without a token.
    pub insecure_no_auth: bool,
}

impl ServeArgs {
    /// Serve on stdin/stdout: asked for, or no other transport given.
    pub fn serves_stdio(&self) -> bool {
        self.stdio || self.http.is_none()
    }
}

/// `--http` values: `HOST:PORT` with an IP host, `localhost:PORT`, `:PORT`
/// or `PORT` (both loopback).
fn parse_addr(v: &str) -> Option<SocketAddr> {
    if let Ok(a) = v.parse::<SocketAddr>() {
        return Some(a);
    }
    let port = v.strip_prefix("localhost:").or_else(|| v.strip_prefix(':')).unwrap_or(v);
    port.parse::<u16>().ok().map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
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

mcpx spawns and supervises local MCP servers (stdio programs), reaches
remote ones over HTTP(S), and presents all their tools, prompts and resources
to one MCP client as a single server on its own stdin/stdout.

USAGE:
    mcpx serve [--config FILE] [--log-level LEVEL]
        Serve the hub on stdin/stdout. Logs go to stderr.
    mcpx serve --http ADDR [--stdio] [--token TOKEN] [--insecure-no-auth]
        Serve the hub over Streamable HTTP at http://ADDR/mcp (and stdio
        too with --stdio).
    mcpx example-server [--name NAME] [--revisions LIST] [--page-size N]
        Run the built-in example MCP server on stdin/stdout
        (`mcpx example-server --help` for details).
    mcpx bench [--quick] [--json FILE]
        Measure this binary on this machine: stdio and HTTP round trips,
        memory, start-up (`mcpx bench --help` for details).
    mcpx --help      Show this help.
    mcpx --version   Show the version.

OPTIONS (serve):
    --config FILE       Config file. Default: ./mcpx.json, then
                        $XDG_CONFIG_HOME/mcpx/config.json (or
                        ~/.config/mcpx/config.json); with none of them, a
                        built-in demo hub of two example servers.
    --log-level LEVEL   error, warn, info (default) or debug. Also MCPX_LOG,
                        or \"logLevel\" in the config; the flag wins.
    --http ADDR         Serve MCP over HTTP on ADDR (127.0.0.1:8765, or a
                        port alone for loopback): POST/GET/DELETE /mcp,
                        GET /health, GET /status, and /sse + /messages for
                        2024-11-05 clients. Origin and Host are checked.
    --stdio             With --http: serve stdin/stdout as well.
    --token TOKEN       Require `Authorization: Bearer TOKEN` on HTTP
                        requests (also \"auth\": {\"bearer\": \"${MCPX_TOKEN}\"}).
    --insecure-no-auth  Allow a non-loopback --http address without a token
                        (\"auth\" below: bearer, tokens or oauth).

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
        },
        \"remote\": {
          \"url\": \"https://example.com/mcp\",      a remote server, instead of command
          \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"},   on every request
          \"caFile\": \"~/ca.pem\",                  extra trusted CAs (PEM)
          \"type\": \"http\"                         or \"sse\"; default: try http, then sse
        }
      },
      \"separator\": \"__\",                         between prefix and name
      \"roots\": [\"~/src\", {\"uri\": \"file:///data\", \"name\": \"data\"}],
                                 answer servers' roots/list with these
                                 (default: ask the client)
      \"logLevel\": \"info\",
      \"cacheTtlMs\": 60000, \"cachePublic\": false,
                                 caching hints for 2026-07-28 clients on
                                 results of servers that give none
      \"inputTtlMs\": 300000,                   how long a 2026-07-28 client has
                                 to answer a server's request for input
      \"auth\": {\"bearer\": \"${MCPX_TOKEN}\"},       token for --http
      \"auth\": {\"tokens\": {\"alice\": \"${ALICE_TOKEN}\"},   or one per principal
               \"oauth\": {\"issuer\": \"https://auth.example.com\",
                         \"audience\": \"https://hub.example.com/mcp\",
                         \"scopes\": [\"mcp:tools\"], \"jwksUrl\": \"...\",
                         \"introspectionUrl\": \"...\", \"clientId\": \"...\",
                         \"clientSecret\": \"...\"}}
                                 or OAuth access tokens of that issuer for
                                 that audience (mcpx's URL), with those
                                 scopes; metadata at
                                 /.well-known/oauth-protected-resource
      \"http\": {\"allowedOrigins\": [\"https://app.example.com\"],
               \"allowedHosts\": [], \"maxBodyBytes\": 33554432,
               \"maxSessions\": 1024, \"maxConnections\": 256,
               \"sessionIdleMs\": 1800000}
    }
    ${VAR} in any string is replaced from the environment (an unset VAR is
    an error; ${VAR:-default} gives a default; $${ is a literal ${). Servers
    keep the file's order. A \"url\" server speaks Streamable HTTP (the
    2026-07-28 revision when it answers server/discover), or the older
    HTTP+SSE transport when its URL refuses a POST (400, 404, 405).

A server that crashes is restarted with backoff (250 ms doubling to 30 s);
a remote server that cannot be reached is retried the same way.
On end of input or SIGINT/SIGTERM, mcpx answers open subscriptions/listen
requests (with notifications/cancelled), then closes each server's stdin, then
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
            "--http" => {
                let (f, v) = flag_value(arg, &mut it);
                let v = v.ok_or_else(|| UsageError(format!("`{f}` needs an address, e.g. 127.0.0.1:8765")))?;
                out.http = Some(parse_addr(v).ok_or_else(|| {
                    UsageError(format!("`{f}`: `{v}` is not an address (use IP:PORT, localhost:PORT or PORT)"))
                })?);
            }
            "--stdio" => out.stdio = true,
            "--token" => {
                let (f, v) = flag_value(arg, &mut it);
                let v = v.filter(|v| !v.is_empty()).ok_or_else(|| UsageError(format!("`{f}` needs a token")))?;
                out.token = Some(v.to_string());
            }
            "--insecure-no-auth" => out.insecure_no_auth = true,
            s if s.starts_with('-') => return Err(UsageError(format!("unknown option `{s}` for `mcpx serve`"))),
            s => return Err(UsageError(format!("unexpected argument `{s}` for `mcpx serve`"))),
        }
    }
    if out.http.is_none() && (out.token.is_some() || out.insecure_no_auth) {
        return Err(UsageError("`--token` and `--insecure-no-auth` need `--http ADDR`".into()));
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
        let want = ServeArgs { config: Some("a.json".into()), log_level: Some(Level::Debug), ..ServeArgs::default() };
        assert_eq!(p(&["serve", "--config", "a.json", "--log-level", "debug"]), Ok(Command::Serve(want.clone())));
        assert_eq!(p(&["serve", "--config=a.json", "--log-level=debug"]), Ok(Command::Serve(want.clone())));
        assert_eq!(p(&["serve", "-c", "a.json", "--log-level", "DEBUG"]), Ok(Command::Serve(want)));
    }

    #[test]
    fn http_flags() {
        let Ok(Command::Serve(a)) = p(&["serve", "--http", "127.0.0.1:8765", "--token=t0k", "--stdio"]) else { panic!() };
        assert_eq!(a.http, Some("127.0.0.1:8765".parse().unwrap()));
        assert_eq!((a.token.as_deref(), a.stdio, a.insecure_no_auth, a.serves_stdio()), (Some("t0k"), true, false, true));
        let Ok(Command::Serve(a)) = p(&["serve", "--http", "8765", "--insecure-no-auth"]) else { panic!() };
        assert_eq!(a.http, Some("127.0.0.1:8765".parse().unwrap()));
        assert!(a.insecure_no_auth && !a.serves_stdio());
        let Ok(Command::Serve(a)) = p(&["serve", "--http", "localhost:9"]) else { panic!() };
        assert_eq!(a.http, Some("127.0.0.1:9".parse().unwrap()));
        let Ok(Command::Serve(a)) = p(&["serve", "--http", "[::1]:9"]) else { panic!() };
        assert_eq!(a.http, Some("[::1]:9".parse().unwrap()));
        assert!(p(&["serve"]).is_ok_and(|c| matches!(c, Command::Serve(a) if a.serves_stdio())));
        assert_eq!(e(&["serve", "--http"]), "`--http` needs an address, e.g. 127.0.0.1:8765");
        assert_eq!(e(&["serve", "--http", "nowhere"]), "`--http`: `nowhere` is not an address (use IP:PORT, localhost:PORT or PORT)");
        assert_eq!(e(&["serve", "--token", "x"]), "`--token` and `--insecure-no-auth` need `--http ADDR`");
        assert_eq!(e(&["serve", "--http", "1", "--token="]), "`--token` needs a token");
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
