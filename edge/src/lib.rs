//! mcpx-edge: the small-host build (issue: edge). Not built out yet.
