//! The runtime's process plumbing: the [`alarm`] its timed tasks sleep on,
//! starting and supervising the servers'
//! processes ([`supervise`]) with the environment they get ([`childenv`]),
//! what is left of them when they or mcpx end (the subreaper [`reaper`], a
//! cgroup per server [`cgroup`], the [`watcher`] that outlives a killed
//! mcpx), the signals `mcpx serve` acts on ([`signals`]), the standard
//! descriptors it borrows ([`stdfd`]), the size of a server's pipes
//! ([`pipe_size`]), the [`reactor`] that waits on them (looking for events
//! a while first under load: [`spin`]) and the executor
//! ([`exec`]) that runs the tasks. Below the runtime (`serve`) and the
//! command-line tools, which start servers through it.

pub mod alarm;
#[cfg(target_os = "linux")]
pub mod cgroup;
pub mod childenv;
pub mod exec;
#[cfg(target_os = "linux")]
pub mod pipe_size;
pub mod reactor;
pub mod reaper;
pub mod signals;
#[cfg(target_os = "linux")]
mod spin;
pub mod stdfd;
pub mod supervise;
#[cfg(target_os = "linux")]
pub mod watcher;
