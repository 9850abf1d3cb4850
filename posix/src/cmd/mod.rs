//! The commands beyond `serve`: a command-line MCP client (`tools`, `call`,
//! `resources`, `prompts`, `status`), config editing (`add`, `remove`,
//! `import`, with MCP Registry `server.json` files) and `serve --check`.
//! All but `serve --check` are the `cli` feature (left out of mcpx-edge).

mod check;
#[cfg(feature = "cli")]
mod client;
// `serve --check` uses the rules on a config; `add` and `import` (feature `cli`) the rest.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
mod vet;

pub use check::main as check;
#[cfg(feature = "cli")]
pub use check::lint;
#[cfg(feature = "cli")]
pub use client::{add, client, import, remove};
