//! The `cli` feature: the command-line client and the config helpers, and
//! their exit codes.

mod add;
mod call;
mod disable;
mod edit;
mod get;
mod import;
mod list;
mod registry;
mod restart;
mod session;
mod status;
mod term;

use std::rc::Rc;
use std::time::Duration;


use crate::cmd::cli::{AddArgs, ClientArgs, ClientCommand, ImportArgs};
use crate::log::{self, Level};
use crate::process::exec::Executor;
use session::{Hub, Session};

pub(crate) use disable::{disable_in_file, Disabling};

/// How long the client waits for the hub and for each answer by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a command failed; each kind has its exit code.
#[derive(Debug)]
pub enum Failure {
    /// The command ran and failed (a tool error, a JSON-RPC error): exit 1.
    Failed(String),
    /// The hub could not be reached or started: exit 2.
    Unreachable(String),
    /// The command line is wrong: exit 2.
    Usage(String),
    /// Stopped by Ctrl-C: exit 130.
    Interrupted,
}

/// Prints the failure and gives the exit code.
fn exit_code(r: Result<(), Failure>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(Failure::Failed(m)) => {
            eprintln!("mcpx: {m}");
            1
        }
        Err(Failure::Unreachable(m)) => {
            eprintln!("mcpx: {m}");
            2
        }
        Err(Failure::Usage(m)) => {
            eprintln!("mcpx: {m}\nTry `mcpx --help`.");
            2
        }
        Err(Failure::Interrupted) => {
            eprintln!("mcpx: interrupted");
            130
        }
    }
}

/// Quiet transports: only their warnings, unless MCPX_LOG says otherwise.
fn quiet_logs() {
    let level = std::env::var("MCPX_LOG").ok().and_then(|v| Level::parse(&v)).unwrap_or(Level::Warn);
    log::set_level(level);
}

/// `mcpx tools|call|resources|prompts|status`.
pub fn client(args: ClientArgs) -> i32 {
    quiet_logs();
    let timeout = args.timeout_s.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let hub = Hub::from_target(&args.target);
    let ex = Rc::new(Executor::new());
    let (interrupt, _watch) = session::watch_interrupts(&ex);
    let run = async {
        match &args.command {
            ClientCommand::Status => return status::run(&ex, hub, timeout, interrupt, args.json).await,
            ClientCommand::Restart { name } => return restart::run(hub, name, timeout).await,
            _ => {}
        }
        let call_args = match &args.command {
            ClientCommand::Call { args, .. } => call::parse_args(args.as_deref())?,
            _ => serde_json::Value::Null,
        };
        let mut s = Session::open(&ex, &hub, timeout, interrupt).await?;
        let r = match &args.command {
            ClientCommand::Tools => list::tools(&mut s, args.json).await,
            ClientCommand::Resources => list::resources(&mut s, args.json).await,
            ClientCommand::Prompts => list::prompts(&mut s, args.json).await,
            ClientCommand::Call { name, .. } => call::run(&mut s, name, call_args, args.json).await,
            ClientCommand::Status | ClientCommand::Restart { .. } => unreachable!("handled above"),
        };
        s.close().await;
        r
    };
    exit_code(crate::process::reactor::block_on(ex.run(run)))
}

/// `mcpx add`.
pub fn add(args: AddArgs) -> i32 {
    exit_code(add::add(args))
}

/// `mcpx remove NAME`.
pub fn remove(config: Option<&std::path::Path>, name: &str) -> i32 {
    exit_code(add::remove(config, name))
}

/// `mcpx disable NAME` (`disabled`) or `mcpx enable NAME`.
pub fn disable(config: Option<&std::path::Path>, name: &str, disabled: bool) -> i32 {
    exit_code(disable::run(config, name, disabled))
}

/// `mcpx import`.
pub fn import(args: ImportArgs) -> i32 {
    exit_code(import::run(args))
}
