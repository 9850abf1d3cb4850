//! What mcpx reads of the host it runs on: its environment and home
//! directories ([`dirs`]) and the small files a config names
//! ([`small_file`]). A leaf: it imports nothing of mcpx.

pub mod dirs;
pub mod small_file;
