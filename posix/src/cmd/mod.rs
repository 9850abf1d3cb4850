//! The commands beyond `serve`: a command-line MCP client (`tools`, `call`,
//! `resources`, `prompts`, `status`, `restart`), config editing (`add`,
//! `remove`, `disable`, `enable`, `import`, with MCP Registry `server.json` files) and `serve --check`.
//! All but `serve --check` are the `cli` feature (left out of mcpx-edge).

pub mod auth;
#[cfg(feature = "consent")]
pub mod pin;
mod check;
pub mod cli;
#[cfg(feature = "cli")]
mod client;
// The vetting of entries: `serve --check`, `add` and `import` of the
// desktop build (left out of mcpx-edge for its size).
#[cfg(feature = "cli")]
mod lint;
#[cfg(feature = "cli")]
mod vet;

pub use check::main as check;
#[cfg(feature = "cli")]
pub use check::verdict;
#[cfg(feature = "cli")]
pub use client::{add, client, disable, import, remove};
// The status page's Disable and Enable buttons edit the file as `disable` does.
#[cfg(feature = "cli")]
pub(crate) use client::{disable_in_file, Disabling};
