//! An upstream's process going: it exited (restarted as the runtime's
//! restart loop says, or given up), was stopped for being idle (asleep,
//! its catalog kept), or did not come up when a request woke it.

use super::super::{Level, Next, UpstreamId};
use crate::servers::stderr;
use super::{Effect, State, Upstream, Upstreams};

impl Upstreams {
    /// `u`'s process is gone (`reason`: exit status or spawn error;
    /// `stderr_tail`: its last stderr lines; `next`: what the restart loop
    /// does now). A replaced or removed server's old process is ignored:
    /// what it had in flight was answered.
    pub(in crate::hub) fn on_exited(&mut self, u: UpstreamId, reason: &str, stderr_tail: &str, next: Next, now: u64) -> Vec<Effect> {
        let Some(up) = self.0.get_mut(u).filter(|up| !matches!(up.state, State::Removed | State::Replacing)) else { return Vec::new() };
        // The loop tries again: the restart its log tells of, even for a
        // process that never came up (a missing command); never a stop
        // for being idle.
        let idle = matches!(up.state, State::Asleep { stopping: true });
        if !idle && matches!(next, Next::Now | Next::After(_)) {
            up.restarts += 1;
        }
        if let State::Asleep { stopping } = &mut up.state {
            if std::mem::take(stopping) {
                // Stopped for being idle: what it offered stays known.
                return up.fall_asleep(u);
            }
            // A start asked for by a request did not come up.
            return vec![Effect::WakeFailed(u, reason.to_string())];
        }
        let tail = stderr::excerpt(stderr_tail, 500);
        let err = if tail.is_empty() { reason.to_string() } else { format!("{reason}{}{tail}", stderr::SEPARATOR) };
        // A restart asked for (by the hub, which said why, or an operator) is expected.
        let level = if matches!(next, Next::Now) { Level::Info } else { Level::Warn };
        let mut fx = vec![Effect::WakeFailed(u, reason.to_string()), Effect::Log(level, format!("server '{}' exited: {err}", up.spec.name))];
        up.last_error = Some(err);
        fx.push(up.gone(u, reason));
        up.state = match next {
            Next::Stop => State::Down { retry_at_ms: None },
            Next::Now => State::Down { retry_at_ms: Some(now) },
            Next::After(d) => State::Down { retry_at_ms: Some(now.saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))) },
            Next::GaveUp { attempts } => State::GaveUp { attempts },
        };
        up.settled = true;
        fx.push(Effect::Settled);
        fx
    }
}

impl Upstream {
    /// What goes when an idle server's process goes: the hub's own requests
    /// to it and relayed ones; its catalog stays.
    fn fall_asleep(&mut self, u: UpstreamId) -> Vec<Effect> {
        self.listing = Default::default();
        self.listen = None;
        let gone = Effect::Gone { u, name: self.spec.name.clone(), reason: None };
        vec![gone, Effect::Log(Level::Info, format!("server '{}' stopped (idle); it starts again when used", self.spec.name))]
    }
}
