//! Replicas sharing state (issue 16, `hub::shared`): two hubs with one
//! sealing key, different replica ids and a fake store shared between them
//! that answers the hubs' `Ask`s as Redis would.

use super::*;
