//! What mcpx reads of the host it runs on: its environment and home
//! directories ([`dirs`]), the small files a config names
//! ([`small_file`]) and which version of a file is on disk
//! ([`file_stamp`]). A leaf: it imports nothing of mcpx.

pub mod dirs;
pub(crate) mod file_stamp;
pub mod small_file;
