//! The command line, parsed by hand.
//!
//! ```text
//! mcpx serve [--config FILE] [--log-level LEVEL] [--http ADDR [--stdio] [--token TOKEN] [--insecure-no-auth]]
//! mcpx serve --check [--config FILE]
//! mcpx tools|resources|prompts|status [--url URL [--token TOKEN] | --config FILE] [--timeout SECONDS] [--json]
//! mcpx call NAME [JSON] [same options]
//! mcpx add NAME [--config FILE] [--force] [--env K=V]... -- COMMAND [ARGS...]
//! mcpx add NAME --url URL [--header K=V]... [--transport http|sse] [--config FILE] [--force]
//! mcpx add [NAME] --from FILE-OR-URL [--remote] [--config FILE] [--force]
//! mcpx remove NAME [--config FILE]
//! mcpx disable|enable NAME [--config FILE]
//! mcpx restart NAME [--url URL [--token TOKEN]] [--timeout SECONDS]
//! mcpx import [--config FILE] [--dry-run] [--force]
//! mcpx example-server [ARGS...]
//! mcpx auth login SERVER [--open-with CMD] | status | logout SERVER [--principal P] [--config FILE]
//! mcpx pin [FILE] | pin accept NAME [--config FILE]
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
    /// `tools`, `call`, `resources`, `prompts`, `status`: an MCP client.
    Client(ClientArgs),
    /// `add`: a server entry into the config file.
    Add(AddArgs),
    /// `remove NAME`: a server entry out of the config file.
    Remove { config: Option<PathBuf>, name: String },
    /// `disable NAME` / `enable NAME`: a server's `"disabled"` in the
    /// config file (`true`, or taken out).
    Disable { config: Option<PathBuf>, name: String, disabled: bool },
    /// `import`: servers of other MCP clients into the config file.
    Import(ImportArgs),
    /// `mcpx auth ...`: OAuth logins to remote servers.
    Auth(AuthArgs),
    /// `mcpx pin ...`: the lock file, and accepting changed definitions.
    Pin(PinArgs),
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
    /// `--check`: validate the config and exit.
    pub check: bool,
}

impl ServeArgs {
    /// Serve on stdin/stdout: asked for, or no other transport given.
    pub fn serves_stdio(&self) -> bool {
        self.stdio || self.http.is_none()
    }
}

/// `mcpx auth` and what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthArgs {
    pub config: Option<PathBuf>,
    pub action: AuthAction,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthAction {
    /// Run the authorization flow for one server and store its tokens.
    Login { server: String, open_with: Option<String> },
    /// Each OAuth server's state.
    Status,
    /// Forget one server's tokens (`principal`: that principal's own, of a
    /// `"perPrincipal"` server).
    Logout { server: String, principal: Option<String> },
}

/// `mcpx pin` and what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinArgs {
    pub config: Option<PathBuf>,
    pub action: PinAction,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PinAction {
    /// Write the pins as a lock file (this one, else `policy.pin.lockFile`).
    Lock(Option<PathBuf>),
    /// Trust a changed definition as it is now (`SERVER/NAME` or `NAME`).
    Accept(String),
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
    mcpx serve --check [--config FILE]
        Validate the config (as `serve` would) and exit: 0 when it is
        good, else 1 with each problem as file:line:col. Also refused: a
        server referring to mcpx's own secrets (${MCPX_TOKEN}, the auth
        tokens' variables), an npx/uvx/pipx/dnx package position holding
        an option, a command that is not installed. It names disabled
        servers.

    mcpx tools | resources | prompts | status [--json] [TARGET]
        List the hub's tools, resources (and templates) or prompts as a
        table (--json: the JSON), or show each server's state.
    mcpx call NAME ['{\"arg\": \"value\"}'] [--json] [TARGET]
        Call a tool and print its result (--json: the whole result).
        Progress shows on a terminal; a server's questions (elicitation)
        are asked on the terminal; Ctrl-C cancels it. Exit 1 when the
        tool or the hub reports an error, 2 when the hub cannot be
        reached, 130 after Ctrl-C.
    mcpx restart NAME [TARGET]
        Restart one server of a running hub now (one given up on too);
        needs an operator's token (\"operators\" below).
    TARGET:
        --url URL         A running hub (`mcpx serve --http`), e.g.
                          http://127.0.0.1:8765/mcp (also MCPX_URL).
        --token TOKEN     Its bearer token (also MCPX_TOKEN); an empty
                          TOKEN is none.
        --config FILE     Without --url: run this config's servers for the
                          one command (default: the config `serve` reads).
        --timeout SECONDS How long to wait for the hub and each answer
                          (default 120).

    mcpx add NAME [--env K=V]... -- COMMAND [ARGS...]
    mcpx add NAME --url URL [--header K=V]... [--transport http|sse]
    mcpx add [NAME] --from FILE-OR-URL [--remote] [--yes]
        Add a server to the config file, editing it in place (the rest of
        the file stays as it is); --force replaces one of the same name.
        What `serve --check` refuses is not written (an unset ${VAR}: set
        it first; a command not installed).
        --from reads an MCP Registry server.json (npm, PyPI, OCI and NuGet
        packages become npx or uvx/pipx, docker/podman and dnx commands in
        a fixed shape; --remote takes its remote endpoint instead); its
        values are copied literally, secrets are written as ${VAR}
        references, never the values; the entry is shown and written
        after a yes on the terminal, or with --yes.
    mcpx remove NAME
        Remove a server from the config file.
    mcpx disable NAME | enable NAME
        Set or clear \"disabled\" on a server in the config file: a
        running `mcpx serve` stops it, or starts it again.
    mcpx import [--dry-run] [--force] [--yes]
        Add the servers configured in Claude Desktop, Claude Code, Cursor,
        VS Code and Windsurf (their usual files under $HOME and in the
        current folder) to the config file; --dry-run prints the result.
        The servers are shown and written after a yes on the terminal, or
        with --yes; literal secrets copied are warned about.
    add, remove, disable, enable and import edit --config FILE, else the
    first config file `serve` would read, else create
    ~/.config/mcpx/config.json.

    mcpx example-server [--demo] [--name NAME] [--revisions LIST] [--page-size N]
        Run the built-in example MCP server on stdin/stdout
        (`mcpx example-server --help` for details).
    mcpx auth login SERVER [--open-with CMD] [--config FILE]
        Authorize mcpx for a remote server with an \"oauth\" block: prints
        the authorization URL, opens it (a browser, or CMD with the URL as
        its last argument), waits on a loopback redirect URI and stores the
        tokens (0600, in $XDG_STATE_HOME/mcpx/ or ~/.local/state/mcpx/).
    mcpx auth status [--config FILE]
        Each OAuth server: logged in or not, expiry, scopes.
    mcpx auth logout SERVER [--principal P] [--config FILE]
        Forget a server's tokens (P's own, of a \"perPrincipal\" server).
    mcpx pin [FILE] [--config FILE]
        Write the pinned definitions (policy.pin) as a lock file: FILE, else
        the configured lockFile.
    mcpx pin accept NAME [--config FILE]
        Trust a changed definition (SERVER/NAME, or NAME) as it is now; a
        running `mcpx serve` picks it up within a second.
    mcpx bench [--quick] [--json FILE]
        Measure this binary on this machine: stdio and HTTP round trips,
        memory, start-up (`mcpx bench --help` for details).
    mcpx --help      Show this help.
    mcpx --version   Show the version.

OPTIONS (serve):
    --config FILE       Config file. Default: ./mcpx.json, then
                        $XDG_CONFIG_HOME/mcpx/config.json (or
                        ~/.config/mcpx/config.json); with none of them, a
                        built-in demo hub of two small demo servers.
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
          \"revisions\": [\"2025-06-18\"],           protocol revisions to offer
          \"inheritEnv\": true,                    false: only PATH, HOME, USER,
                                 LOGNAME, SHELL, TERM, LANG, LC_*, TZ, TMPDIR
          \"envAllow\": [\"GITHUB_*\"],              and these (implies inheritEnv false)
          \"maxRestarts\": 10,                     failures in a row before giving up
          \"lazy\": true,                          start at its first use, not with mcpx
          \"idleStopMs\": 600000,                  stop after this long without a request
          \"isolation\": \"shared\",                 \"client\": one instance per client
                                 principal (for servers that ask for input)
          \"maxInstances\": 8,                     with \"client\": most at once
          \"trusted\": false                       true: its tool annotations are
                                 passed on as they are (see \"policy\")
        },
        \"remote\": {
          \"url\": \"https://example.com/mcp\",      a remote server, instead of command
          \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"},   on every request
          \"caFile\": \"~/ca.pem\",                  extra trusted CAs (PEM)
          \"type\": \"http\"                         or \"sse\"; default: try http, then sse
        },
        \"protected\": {
          \"url\": \"https://mcp.example.com/mcp\",  a server that requires OAuth 2.1
          \"oauth\": {                             all keys optional:
            \"clientId\": \"...\", \"clientSecret\": \"${SECRET}\",  pre-registered client
            \"clientMetadataUrl\": \"https://you.example/client.json\",
                                 client id where the server supports it
                                 (else dynamic registration)
            \"scopes\": [\"read\"],                  asked for on top of the server's
            \"grant\": \"authorization_code\",       or \"client_credentials\"
            \"privateKeyFile\": \"key.pem\",         PKCS#8, for client_credentials
            \"signingAlg\": \"ES256\",               or \"RS256\"
            \"openWith\": \"CMD\"                    let `mcpx serve` run the login by
                                 itself: CMD gets the authorization URL
          }                      (without openWith: `mcpx auth login NAME`)
        }
      },
      \"lazy\": false, \"idleStopMs\": null,     defaults for every server
      \"separator\": \"__\",                         between prefix and name; \".\" for
                                 2025-11-25+ clients (older ones see __)
      \"roots\": [\"~/src\", {\"uri\": \"file:///data\", \"name\": \"data\"}],
                                 answer servers' roots/list with these
                                 (default: ask the client)
      \"logLevel\": \"info\",
      \"cacheTtlMs\": 60000, \"cachePublic\": false,
                                 caching hints for 2026-07-28 clients on
                                 lists of servers that give none (their
                                 resources/read results: ttlMs 0)
      \"inputTtlMs\": 300000,                   how long a 2026-07-28 client has
                                 to answer a server's request for input
      \"shutdownGraceMs\": 10000,                on SIGTERM/SIGINT: how long requests
                                 in flight may take to be answered
                                 (then: an error); a second signal
                                 ends at once
      \"startupWaitMs\": 10000,                  how long a client's initialize waits
                                 for servers still starting (a slower
                                 one is named, its calls wait for it)
      \"tasks\": {\"maxPerClient\": 64, \"maxTasks\": 1024,
                \"maxResultBytes\": 67108864, \"defaultTtlMs\": 300000,
                \"maxTtlMs\": 3600000, \"pollIntervalMs\": 500,
                \"maxPollIntervalMs\": 30000}
                                 caps of the tasks mcpx runs (working tasks
                                 per principal, kept tasks, bytes of kept
                                 results) and relays (TTL, polling)
      \"state\": {\"url\": \"redis://10.0.0.5:6379/0\", \"keyFile\": \"PATH\"},
                                 several replicas share state in Redis
                                 (also MCPX_STATE_URL); the keyFile holds
                                 the 32-byte key every replica seals
                                 requestState with (or MCPX_STATE_KEY,
                                 hex or base64)
      \"cluster\": {\"replica\": \"r1\", \"peers\": {\"r2\": \"http://10.0.0.2:7401\"}},
                                 this replica's id (also MCPX_REPLICA) and
                                 the others' HTTP listeners: a retry or task
                                 another replica holds is forwarded there
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
      \"auth\": {\"operators\": [\"token:alice\"]}   who may `mcpx restart`
                                 (globs; default: bearer, the hub's token)
      \"http\": {\"allowedOrigins\": [\"https://app.example.com\"],
               \"allowedHosts\": [], \"maxBodyBytes\": 33554432,
               \"maxSessions\": 1024, \"maxConnections\": 256,
               \"sessionIdleMs\": 1800000},
      \"policy\": {                             limits, catalogs, checks, audit
                                 (see the README's Policy section)
        \"rateLimits\": {\"toolCalls\": {\"perPrincipal\": \"100/s\",
                        \"perServer\": \"500/s\",
                        \"perTool\": {\"gh__delete_*\": \"1/min\"}},
                       \"completions\": {..}, \"serverRequests\": {..},
                       \"taskRequests\": {\"perPrincipal\": \"100/s\"},
                       \"progressPerRequest\": 10000, \"logsPerRequest\": 10000},
                                 or false; null turns one limit off
        \"catalogs\": {\"alice\": {\"allow\": [\"github\"], \"deny\": [\"github/delete_*\"],
                               \"toolSearch\": false}, \"*\": {..}},
        \"validate\": {\"servers\": [\"*\"], \"arguments\": true, \"elicitation\": true,
                     \"output\": \"log\"},     or \"off\", \"refuse\"; true for these
        \"audit\": {\"file\": \"~/audit.jsonl\", \"maxBytes\": 10485760, \"files\": 5,
                  \"arguments\": false, \"redact\": [\"token\"], \"queue\": 4096},
                                 \"file\": \"stderr\" for standard error
        \"metrics\": true,             GET /metrics (same auth as /mcp)
        \"untrustedAnnotations\": \"mark\"}   or \"remove\": tool annotations of
                                 servers without \"trusted\": true
    }
    ${VAR} in any string is replaced from the environment (an unset VAR is
    an error; ${VAR:-default} gives a default; $${ is a literal ${). Servers
    keep the file's order. A \"url\" server speaks Streamable HTTP (the
    2026-07-28 revision when it answers server/discover), or the older
    HTTP+SSE transport when its URL refuses a POST (400, 404, 405).

A server never inherits mcpx's own variables (MCPX_*, such as MCPX_TOKEN) or
the variables \"auth\" and remote servers' entries read; its own \"env\" applies.
A server that crashes is restarted with backoff (250 ms doubling to 30 s);
a remote server that cannot be reached is retried the same way. After
\"maxRestarts\" failures in a row it is given up (\"failed: ...\" in /status)
until `mcpx restart NAME` or a change to its entry.
Processes a server leaves outside its process group are stopped with mcpx.
Log records start with a UTC timestamp; text from servers is escaped.
The config is reloaded while serving when its file changes (checked every
second) and on SIGHUP: servers added start, removed ones stop (their calls in
flight get an error), changed ones restart, the others and every client
session keep running, and clients get list_changed. A config that does not
validate is refused whole (the error in the log and at /status) and the
running one stays. separator, roots, cacheTtlMs, cachePublic, inputTtlMs,
auth, http, policy, state and cluster apply at the next start (a reload
names them).
A lazy or idle-stopped server's tools stay listed while it is stopped (from
its last listing, kept in $XDG_STATE_HOME/mcpx/lists/, else
~/.local/state/mcpx/lists/); a call to it starts it and waits, within the
server's timeoutMs. A lazy server never listed before starts once at startup.
With --http, which tasks exist is kept in $XDG_STATE_HOME/mcpx/tasks/ (else
~/.local/state/mcpx/tasks/, one file per address and config): after a restart
on the same address a server's task answers again, one mcpx ran fails saying
mcpx restarted.
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
        "tools" | "call" | "resources" | "prompts" | "status" | "restart" | "add" | "remove" | "disable" | "enable" | "import"
            if args[1..].iter().take_while(|a| *a != "--").any(|a| a == "--help" || a == "-h") =>
        {
            Ok(Command::Help)
        }
        "tools" | "call" | "resources" | "prompts" | "status" | "restart" => parse_client(first, &args[1..]).map(Command::Client),
        "add" => parse_add(&args[1..]).map(Command::Add),
        "remove" => parse_named(first, &args[1..]).map(|(config, name)| Command::Remove { config, name }),
        "disable" | "enable" => {
            parse_named(first, &args[1..]).map(|(config, name)| Command::Disable { config, name, disabled: first == "disable" })
        }
        "import" => parse_import(&args[1..]).map(Command::Import),
        "auth" => parse_auth(&args[1..]).map(Command::Auth),
        "pin" => parse_pin(&args[1..]).map(Command::Pin),
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

fn parse_auth(args: &[String]) -> Result<AuthArgs, UsageError> {
    let usage = || UsageError("usage: mcpx auth login SERVER [--open-with CMD] | status | logout SERVER  [--config FILE]".into());
    let mut it = args.iter();
    let verb = it.next().ok_or_else(usage)?.as_str();
    let (mut config, mut open_with, mut server, mut principal) = (None, None, None, None);
    while let Some(arg) = it.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
        match name {
            "--config" | "-c" => {
                let (f, v) = flag_value(arg, &mut it);
                config = Some(PathBuf::from(v.filter(|v| !v.is_empty()).ok_or_else(|| UsageError(format!("`{f}` needs a file name")))?));
            }
            "--open-with" if verb == "login" => {
                let (f, v) = flag_value(arg, &mut it);
                let v = v.filter(|v| !v.trim().is_empty()).ok_or_else(|| UsageError(format!("`{f}` needs a command")))?;
                open_with = Some(v.to_string());
            }
            "--principal" if verb == "logout" && cfg!(feature = "secrets") => {
                let (f, v) = flag_value(arg, &mut it);
                principal = Some(v.filter(|v| !v.is_empty()).ok_or_else(|| UsageError(format!("`{f}` needs a principal's name")))?.to_string());
            }
            s if s.starts_with('-') => return Err(UsageError(format!("unknown option `{s}` for `mcpx auth {verb}`"))),
            s if server.is_none() && verb != "status" => server = Some(s.to_string()),
            s => return Err(UsageError(format!("unexpected argument `{s}` for `mcpx auth {verb}`"))),
        }
    }
    let need = |s: Option<String>| s.ok_or_else(|| UsageError(format!("`mcpx auth {verb}` needs the server's name")));
    let action = match verb {
        "login" => AuthAction::Login { server: need(server)?, open_with },
        "logout" => AuthAction::Logout { server: need(server)?, principal },
        "status" => AuthAction::Status,
        _ => return Err(usage()),
    };
    Ok(AuthArgs { config, action })
}

fn parse_pin(args: &[String]) -> Result<PinArgs, UsageError> {
    let mut it = args.iter();
    let (mut config, mut words) = (None, Vec::new());
    while let Some(arg) = it.next() {
        match flag_name(arg) {
            "--config" | "-c" => config_flag(&mut config, arg, &mut it)?,
            s if s.starts_with('-') => return Err(UsageError(format!("unknown option `{s}` for `mcpx pin`"))),
            s => words.push(s.to_string()),
        }
    }
    let action = match words.as_slice() {
        [] => PinAction::Lock(None),
        [verb, name] if verb == "accept" => PinAction::Accept(name.clone()),
        [verb] if verb == "accept" => return Err(UsageError("`mcpx pin accept` needs a name (SERVER/NAME or NAME)".into())),
        [file] => PinAction::Lock(Some(PathBuf::from(file))),
        _ => return Err(UsageError("usage: mcpx pin [FILE] | pin accept NAME  [--config FILE]".into())),
    };
    Ok(PinArgs { config, action })
}

fn parse_serve(args: &[String]) -> Result<ServeArgs, UsageError> {
    let mut out = ServeArgs::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
        match name {
            "--config" | "-c" => config_flag(&mut out.config, arg, &mut it)?,
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
            "--check" => out.check = true,
            s if s.starts_with('-') => return Err(UsageError(format!("unknown option `{s}` for `mcpx serve`"))),
            s => return Err(UsageError(format!("unexpected argument `{s}` for `mcpx serve`"))),
        }
    }
    if out.http.is_none() && (out.token.is_some() || out.insecure_no_auth) {
        return Err(UsageError("`--token` and `--insecure-no-auth` need `--http ADDR`".into()));
    }
    Ok(out)
}

/// Where the command-line client finds the hub.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// `--url URL`: a running hub's MCP endpoint (`mcpx serve --http`).
    pub url: Option<String>,
    /// `--token TOKEN`: its bearer token.
    pub token: Option<String>,
    /// `--config FILE`: without `--url`, run this config's servers for the
    /// one command (`mcpx serve` as a child).
    pub config: Option<PathBuf>,
}

/// What the command-line client does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientCommand {
    Tools,
    /// `call NAME [JSON]`: the tool and its arguments (a JSON object).
    Call { name: String, args: Option<String> },
    Resources,
    Prompts,
    Status,
    /// `restart NAME`: one server of a running hub.
    Restart { name: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientArgs {
    pub command: ClientCommand,
    pub target: Target,
    /// `--json`: print JSON instead of a table or text.
    pub json: bool,
    /// `--timeout SECONDS`: how long to wait for the hub and each answer.
    pub timeout_s: Option<u64>,
}

/// What `mcpx add` writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddSource {
    /// `-- COMMAND ARGS...`
    Command { command: String, args: Vec<String> },
    /// `--url URL [--header K=V]... [--transport http|sse]`
    Url { url: String, headers: Vec<(String, String)>, transport: Option<String> },
    /// `--from FILE-OR-URL [--remote]`: an MCP Registry `server.json`.
    Registry { from: String, remote: bool },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddArgs {
    pub config: Option<PathBuf>,
    /// Required except with `--from` (then taken from the server's name).
    pub name: Option<String>,
    /// `--force`: replace an entry of the same name.
    pub force: bool,
    /// `--env K=V` (for a command).
    pub env: Vec<(String, String)>,
    pub source: AddSource,
    /// `--yes`: write an entry from a file without asking.
    pub yes: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportArgs {
    pub config: Option<PathBuf>,
    /// `--dry-run`: print the config instead of writing it.
    pub dry_run: bool,
    /// `--force`: replace entries of the same name.
    pub force: bool,
    /// `--yes`: write without asking.
    pub yes: bool,
}

/// A flag's value that must not be empty.
fn required<'a>(arg: &'a str, rest: &mut std::slice::Iter<'a, String>, what: &str) -> Result<&'a str, UsageError> {
    let (f, v) = flag_value(arg, rest);
    v.filter(|v| !v.is_empty()).ok_or_else(|| UsageError(format!("`{f}` needs {what}")))
}

/// `--config FILE`, once.
fn config_flag<'a>(slot: &mut Option<PathBuf>, arg: &'a str, rest: &mut std::slice::Iter<'a, String>) -> Result<(), UsageError> {
    let v = required(arg, rest, "a file name")?;
    if slot.replace(PathBuf::from(v)).is_some() {
        return Err(UsageError("`--config` given twice".into()));
    }
    Ok(())
}

/// `K=V` of `--env` and `--header`.
fn key_value(flag: &str, v: &str) -> Result<(String, String), UsageError> {
    match v.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(UsageError(format!("`{flag}` needs NAME=VALUE, got `{v}`"))),
    }
}

fn flag_name(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(f, _)| f)
}

fn parse_client(command: &str, args: &[String]) -> Result<ClientArgs, UsageError> {
    let mut target = Target::default();
    let (mut json, mut timeout_s) = (false, None);
    let mut positional = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match flag_name(arg) {
            "--url" => target.url = Some(required(arg, &mut it, "the hub's URL, e.g. http://127.0.0.1:8765/mcp")?.to_string()),
            "--token" => {
                // Empty is none (`--token "$MCPX_TOKEN"` with the variable unset, against an open hub).
                let (f, v) = flag_value(arg, &mut it);
                let v = v.ok_or_else(|| UsageError(format!("`{f}` needs a token")))?;
                target.token = (!v.is_empty()).then(|| v.to_string());
            }
            "--config" | "-c" => config_flag(&mut target.config, arg, &mut it)?,
            "--json" => json = true,
            "--timeout" => {
                let v = required(arg, &mut it, "a number of seconds")?;
                timeout_s = Some(v.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    UsageError(format!("`--timeout`: `{v}` is not a positive number of seconds"))
                })?);
            }
            s if s.starts_with("--") => return Err(UsageError(format!("unknown option `{s}` for `mcpx {command}`"))),
            _ => positional.push(arg.clone()),
        }
    }
    if target.url.is_some() && target.config.is_some() {
        return Err(UsageError("give `--url` (a running hub) or `--config` (run its servers), not both".into()));
    }
    let mut positional = positional.into_iter();
    let command = match command {
        "call" => {
            let name = positional.next().ok_or_else(|| UsageError("`mcpx call` needs a tool name".into()))?;
            ClientCommand::Call { name, args: positional.next() }
        }
        "restart" => {
            let name = positional.next().ok_or_else(|| UsageError("`mcpx restart` needs the server's NAME".into()))?;
            ClientCommand::Restart { name }
        }
        "tools" => ClientCommand::Tools,
        "resources" => ClientCommand::Resources,
        "prompts" => ClientCommand::Prompts,
        _ => ClientCommand::Status,
    };
    if let Some(extra) = positional.next() {
        return Err(UsageError(format!("unexpected argument `{extra}`")));
    }
    Ok(ClientArgs { command, target, json, timeout_s })
}

fn parse_add(args: &[String]) -> Result<AddArgs, UsageError> {
    let (mut config, mut name, mut force, mut env, mut yes) = (None, None, false, Vec::new(), false);
    let (mut url, mut headers, mut transport, mut from, mut remote) = (None, Vec::new(), None, None, false);
    let mut command = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match flag_name(arg) {
            "--" => {
                let rest: Vec<String> = it.by_ref().cloned().collect();
                let (c, a) = rest.split_first().ok_or_else(|| UsageError("`--` needs the command to run".into()))?;
                command = Some((c.clone(), a.to_vec()));
            }
            "--config" | "-c" => config_flag(&mut config, arg, &mut it)?,
            "--force" => force = true,
            "--yes" | "-y" => yes = true,
            "--env" => env.push(key_value("--env", required(arg, &mut it, "NAME=VALUE")?)?),
            "--url" => url = Some(required(arg, &mut it, "a URL")?.to_string()),
            "--header" => headers.push(key_value("--header", required(arg, &mut it, "NAME=VALUE")?)?),
            "--transport" => {
                let v = required(arg, &mut it, "http or sse")?;
                if v != "http" && v != "sse" {
                    return Err(UsageError(format!("`--transport`: `{v}` is neither http nor sse")));
                }
                transport = Some(v.to_string());
            }
            "--from" => from = Some(required(arg, &mut it, "a server.json file or URL")?.to_string()),
            "--remote" => remote = true,
            s if s.starts_with('-') => return Err(UsageError(format!("unknown option `{s}` for `mcpx add`"))),
            s if name.is_none() => name = Some(s.to_string()),
            s => return Err(UsageError(format!("unexpected argument `{s}` (the command goes after `--`)"))),
        }
    }
    let source = match (command, url, from) {
        (Some((command, args)), None, None) => AddSource::Command { command, args },
        (None, Some(url), None) => AddSource::Url { url, headers: std::mem::take(&mut headers), transport: transport.take() },
        (None, None, Some(from)) => AddSource::Registry { from, remote },
        (None, None, None) => {
            return Err(UsageError("`mcpx add` needs `-- COMMAND ARGS...`, `--url URL` or `--from server.json`".into()))
        }
        _ => return Err(UsageError("give one of `-- COMMAND`, `--url` and `--from`".into())),
    };
    let misplaced = match &source {
        AddSource::Command { .. } => (!headers.is_empty() || transport.is_some() || remote).then_some("--header, --transport and --remote go with --url or --from"),
        AddSource::Url { .. } => (!env.is_empty() || remote).then_some("--env and --remote do not go with --url"),
        AddSource::Registry { .. } => (!env.is_empty() || !headers.is_empty() || transport.is_some()).then_some("--env, --header and --transport do not go with --from"),
    };
    if let Some(m) = misplaced {
        return Err(UsageError(m.into()));
    }
    if name.is_none() && !matches!(source, AddSource::Registry { .. }) {
        return Err(UsageError("`mcpx add` needs the server's NAME".into()));
    }
    Ok(AddArgs { config, name, force, env, source, yes })
}

/// `mcpx VERB NAME [--config FILE]` (`remove`, `disable`, `enable`).
fn parse_named(verb: &str, args: &[String]) -> Result<(Option<PathBuf>, String), UsageError> {
    let (mut config, mut name) = (None, None);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match flag_name(arg) {
            "--config" | "-c" => config_flag(&mut config, arg, &mut it)?,
            s if s.starts_with('-') => return Err(UsageError(format!("unknown option `{s}` for `mcpx {verb}`"))),
            s if name.is_none() => name = Some(s.to_string()),
            s => return Err(UsageError(format!("unexpected argument `{s}` for `mcpx {verb}`"))),
        }
    }
    let name = name.ok_or_else(|| UsageError(format!("`mcpx {verb}` needs the server's NAME")))?;
    Ok((config, name))
}

fn parse_import(args: &[String]) -> Result<ImportArgs, UsageError> {
    let mut out = ImportArgs::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match flag_name(arg) {
            "--config" | "-c" => config_flag(&mut out.config, arg, &mut it)?,
            "--dry-run" => out.dry_run = true,
            "--force" => out.force = true,
            "--yes" | "-y" => out.yes = true,
            s => return Err(UsageError(format!("unknown argument `{s}` for `mcpx import`"))),
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
    fn auth_commands() {
        let a = |action| Ok(Command::Auth(AuthArgs { config: None, action }));
        assert_eq!(p(&["auth", "status"]), a(AuthAction::Status));
        assert_eq!(p(&["auth", "logout", "gh"]), a(AuthAction::Logout { server: "gh".into(), principal: None }));
        assert_eq!(p(&["auth", "logout", "gh", "--principal=alice"]), a(AuthAction::Logout { server: "gh".into(), principal: Some("alice".into()) }));
        assert!(e(&["auth", "login", "gh", "--principal", "alice"]).contains("unknown option `--principal`"));
        assert_eq!(
            p(&["auth", "login", "gh", "--open-with", "curl -sL"]),
            a(AuthAction::Login { server: "gh".into(), open_with: Some("curl -sL".into()) })
        );
        assert_eq!(
            p(&["auth", "login", "--config=c.json", "gh"]),
            Ok(Command::Auth(AuthArgs { config: Some("c.json".into()), action: AuthAction::Login { server: "gh".into(), open_with: None } }))
        );
        assert!(e(&["auth"]).contains("usage: mcpx auth"));
        assert!(e(&["auth", "login"]).contains("needs the server's name"));
        assert!(e(&["auth", "status", "x"]).contains("unexpected argument `x`"));
        assert!(e(&["auth", "logout", "--open-with", "x", "s"]).contains("unknown option `--open-with`"));
        assert!(e(&["auth", "login", "s", "--open-with", " "]).contains("needs a command"));
    }

    #[test]
    fn pin_commands() {
        let a = |config: Option<&str>, action| Ok(Command::Pin(PinArgs { config: config.map(PathBuf::from), action }));
        assert_eq!(p(&["pin"]), a(None, PinAction::Lock(None)));
        assert_eq!(p(&["pin", "pins.json", "--config", "c.json"]), a(Some("c.json"), PinAction::Lock(Some("pins.json".into()))));
        assert_eq!(p(&["pin", "accept", "gh/create_issue"]), a(None, PinAction::Accept("gh/create_issue".into())));
        assert!(e(&["pin", "accept"]).contains("needs a name"));
        assert!(e(&["pin", "a", "b", "c"]).contains("usage: mcpx pin"));
        assert!(e(&["pin", "--force"]).contains("unknown option `--force`"));
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

    #[test]
    fn client_commands() {
        let Ok(Command::Client(a)) = p(&["call", "greet", r#"{"name":"x"}"#, "--url=http://h/mcp", "--token", "t", "--json"]) else { panic!() };
        assert_eq!(a.command, ClientCommand::Call { name: "greet".into(), args: Some(r#"{"name":"x"}"#.into()) });
        assert_eq!((a.target.url.as_deref(), a.target.token.as_deref(), a.json), (Some("http://h/mcp"), Some("t"), true));
        let Ok(Command::Client(a)) = p(&["tools", "-c", "x.json", "--timeout", "5"]) else { panic!() };
        assert_eq!((a.command, a.target.config, a.timeout_s), (ClientCommand::Tools, Some("x.json".into()), Some(5)));
        assert_eq!(p(&["status", "--help"]), Ok(Command::Help));
        assert_eq!(e(&["call"]), "`mcpx call` needs a tool name");
        assert_eq!(e(&["tools", "extra"]), "unexpected argument `extra`");
        assert_eq!(e(&["tools", "--url", "u", "--config", "c"]), "give `--url` (a running hub) or `--config` (run its servers), not both");
        assert_eq!(e(&["prompts", "--timeout", "0"]), "`--timeout`: `0` is not a positive number of seconds");
        assert_eq!(e(&["resources", "--bogus"]), "unknown option `--bogus` for `mcpx resources`");
        // An empty token is none; a missing one is a mistake.
        let Ok(Command::Client(a)) = p(&["tools", "--url", "http://h/mcp", "--token", ""]) else { panic!() };
        assert_eq!(a.target.token, None);
        let Ok(Command::Client(a)) = p(&["tools", "--token=", "--url", "http://h/mcp"]) else { panic!() };
        assert_eq!(a.target.token, None);
        assert_eq!(e(&["tools", "--url", "u", "--token"]), "`--token` needs a token");
        let Ok(Command::Client(a)) = p(&["restart", "calc", "--url", "http://h/mcp"]) else { panic!() };
        assert_eq!((a.command, a.target.url.as_deref()), (ClientCommand::Restart { name: "calc".into() }, Some("http://h/mcp")));
        assert_eq!(e(&["restart"]), "`mcpx restart` needs the server's NAME");
    }

    #[test]
    fn config_commands() {
        let Ok(Command::Add(a)) = p(&["add", "gh", "--env", "K=v=w", "--", "npx", "-y", "--flag"]) else { panic!() };
        assert_eq!(a.source, AddSource::Command { command: "npx".into(), args: vec!["-y".into(), "--flag".into()] });
        assert_eq!((a.name.as_deref(), a.env), (Some("gh"), vec![("K".into(), "v=w".into())]));
        let Ok(Command::Add(a)) = p(&["add", "w", "--url", "https://x/mcp", "--header", "A=b", "--transport", "sse", "--force"]) else { panic!() };
        assert_eq!(a.source, AddSource::Url { url: "https://x/mcp".into(), headers: vec![("A".into(), "b".into())], transport: Some("sse".into()) });
        assert!(a.force);
        let Ok(Command::Add(a)) = p(&["add", "--from", "server.json", "--remote"]) else { panic!() };
        assert_eq!((a.name, a.source), (None, AddSource::Registry { from: "server.json".into(), remote: true }));
        assert_eq!(e(&["add", "x"]), "`mcpx add` needs `-- COMMAND ARGS...`, `--url URL` or `--from server.json`");
        assert_eq!(e(&["add", "--url", "u"]), "`mcpx add` needs the server's NAME");
        assert_eq!(e(&["add", "x", "--url", "u", "--", "c"]), "give one of `-- COMMAND`, `--url` and `--from`");
        assert_eq!(e(&["add", "x", "--env", "K=v", "--url", "u"]), "--env and --remote do not go with --url");
        assert_eq!(e(&["add", "x", "--header", "nope", "--url", "u"]), "`--header` needs NAME=VALUE, got `nope`");
        assert_eq!(e(&["add", "x", "--"]), "`--` needs the command to run");
        assert_eq!(p(&["remove", "gh", "-c", "f.json"]), Ok(Command::Remove { config: Some("f.json".into()), name: "gh".into() }));
        assert_eq!(e(&["remove"]), "`mcpx remove` needs the server's NAME");
        assert_eq!(p(&["disable", "gh"]), Ok(Command::Disable { config: None, name: "gh".into(), disabled: true }));
        assert_eq!(p(&["enable", "--config=f.json", "gh"]), Ok(Command::Disable { config: Some("f.json".into()), name: "gh".into(), disabled: false }));
        assert_eq!(e(&["enable"]), "`mcpx enable` needs the server's NAME");
        assert_eq!(e(&["disable", "a", "b"]), "unexpected argument `b` for `mcpx disable`");
        assert_eq!(p(&["import", "--dry-run"]), Ok(Command::Import(ImportArgs { dry_run: true, ..ImportArgs::default() })));
        let Ok(Command::Serve(a)) = p(&["serve", "--check", "--config", "f"]) else { panic!() };
        assert!(a.check);
    }
}
