//! Where each principal's own tokens are kept (`"perPrincipal"` servers).

use std::rc::Rc;

use crate::cluster::runtime::Cluster;
use crate::config::Config;

/// Where each principal's own tokens are kept: encrypted with the state
/// key (which the config asks for with any `"perPrincipal"` server; one a
/// reload adds without it gets a key of this process, so that its tokens
/// last until mcpx stops), in the shared store when replicas share state,
/// else in the token store file.
pub(crate) fn kept_tokens(cfg: &Config, cluster: Option<&Rc<Cluster>>) -> crate::remote::oauth::kept::Kept {
    use crate::remote::oauth::kept::{Kept, Shelf};
    let key = cfg.cluster.state_key.as_ref().map(|k| k.0).unwrap_or_else(|| {
        let mut k = [0u8; 32];
        nanorand::Rng::fill_bytes(&mut nanorand::ChaCha20::new(), &mut k);
        k
    });
    #[cfg(feature = "cluster")]
    if let Some(store) = cluster.and_then(|c| c.store()) {
        return Kept::new(&key, Shelf::Shared(store));
    }
    #[cfg(not(feature = "cluster"))]
    let _ = cluster;
    // Every server's "oauth" block names the same store (without one, nothing is kept).
    let path = cfg.servers.iter().find_map(|s| Some(s.remote.as_ref()?.oauth.as_ref()?.store.clone())).unwrap_or_default();
    Kept::new(&key, Shelf::File(crate::remote::oauth::store::Store { path }))
}
