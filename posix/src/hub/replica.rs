//! A replica's id, as the cluster (`shared`) names replicas and task ids
//! (`tasks::ids`) and sealed states carry it. Imports nothing of the hub.

/// The id of one replica (`cluster.replica`, `MCPX_REPLICA`): 1 to 32 of
/// `A-Z a-z 0-9 _ -` ([`valid_replica_id`]).
pub type ReplicaId = String;

/// Longest replica id.
pub const MAX_REPLICA_LEN: usize = 32;

/// Is `id` a usable replica id? (It is written into task ids and sealed
/// states, after a `.` that it may not contain.)
pub fn valid_replica_id(id: &str) -> bool {
    (1..=MAX_REPLICA_LEN).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
