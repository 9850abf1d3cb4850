//! Tables keyed by names mcpx chose or was given: authenticated principals,
//! configured servers and tools, the items of servers' capped listings.
//! Looked up on every request, so hashed with foldhash seeded per process,
//! in a fraction of SipHash's instructions. Keys a client chooses freely
//! (its request ids) stay in std's keyed SipHash tables.

use std::collections::HashMap;

/// A table by one of those names.
pub(crate) type NameMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
